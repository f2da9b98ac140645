package main

import (
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/unilog/unilog/broker"
	"github.com/unilog/unilog/ha/controlplane"
	"github.com/unilog/unilog/internal/tlsconf"
)

// setInterBroker gives the broker what it reaches the other nodes'
// listeners with (broker.InterBroker): TLS when its own listener serves
// TLS, trusting --inter-broker-tls-ca (default --replication-tls-ca,
// else the system's roots) and presenting the node's certificate, and
// the inter-broker user's password, derived from the cluster secret. A
// listener without TLS, SASL or an ACL needs neither.
func setInterBroker(c *cli.Context, cfg *broker.Config, secret *controlplane.Secret) error {
	if cfg.Security == nil {
		return nil
	}
	cfg.Security.InterBroker.Password = secret.InterBrokerPassword()
	if cfg.Security.TLS == nil {
		return nil
	}
	ca := c.String("inter-broker-tls-ca")
	if ca == "" {
		ca = c.String("replication-tls-ca")
	}
	files := tlsconf.Files{CA: ca, Cert: c.String("tls-cert"), Key: c.String("tls-key")}
	tlsCfg, err := files.Client(true)
	if err != nil {
		return fmt.Errorf("--inter-broker-tls-ca: %w", err)
	}
	cfg.Security.InterBroker.TLS = tlsCfg
	return nil
}
