package main

import (
	"crypto/tls"
	"errors"
	"fmt"
	"math"
	"net"
	"strings"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/urfave/cli/v2"

	"github.com/unilog/unilog/auth"
	"github.com/unilog/unilog/broker"
	"github.com/unilog/unilog/internal/bytesize"
	"github.com/unilog/unilog/internal/tlsconf"
)

// brokerSecurityFlags are the broker's TLS, SASL, ACL and limit flags.
func brokerSecurityFlags() []cli.Flag {
	env := func(name string) []string { return []string{"UNILOG_" + name} }
	return []cli.Flag{
		&cli.StringFlag{Name: "tls-cert", Usage: "serve the Kafka listener over TLS with this PEM certificate `FILE` (needs --tls-key)", EnvVars: env("TLS_CERT")},
		&cli.StringFlag{Name: "tls-key", Usage: "PEM private key `FILE` of --tls-cert", EnvVars: env("TLS_KEY")},
		&cli.StringFlag{Name: "tls-client-ca", Usage: "mutual TLS: require client certificates signed by this PEM CA `FILE`", EnvVars: env("TLS_CLIENT_CA")},
		&cli.BoolFlag{Name: "admin-tls", Usage: "serve the admin port over TLS too, with --tls-cert and --tls-key", EnvVars: env("ADMIN_TLS")},
		&cli.StringFlag{Name: "admin-client-ca", Usage: "with --admin-tls: every admin endpoint but /healthz needs a client certificate signed by this PEM CA `FILE`", EnvVars: env("ADMIN_CLIENT_CA")},
		&cli.StringFlag{Name: "users", Usage: "turn SASL on with the users of this `FILE` (see `unilog user`); reread when it changes", EnvVars: env("USERS")},
		&cli.StringFlag{Name: "sasl-mechanisms", Value: strings.Join(auth.Mechanisms, ","), Usage: "SASL mechanisms offered with --users", EnvVars: env("SASL_MECHANISMS")},
		&cli.StringFlag{Name: "inter-broker-tls-ca", Usage: "in a cluster with --tls-cert: verify the other nodes' Kafka listeners (partition moves, transaction markers) against this PEM CA `FILE` (default: --replication-tls-ca, else the system's roots)", EnvVars: env("INTER_BROKER_TLS_CA")},
		&cli.StringFlag{Name: "acl", Usage: "authorize topics and groups per principal with this ACL `FILE` (format: go doc ./auth)", EnvVars: env("ACL")},
		&cli.DurationFlag{Name: "idle-timeout", Value: 10 * time.Minute, Usage: "close connections that send no request for this long (connections.max.idle.ms)", EnvVars: env("IDLE_TIMEOUT")},
		&cli.StringFlag{Name: "max-inflight-bytes", Value: "512MiB", Usage: "request bytes all connections together may hold, `SIZE` (at least --max-request-bytes)", EnvVars: env("MAX_INFLIGHT_BYTES")},
		&cli.StringFlag{Name: "max-fetch-bytes", Value: "55MiB", Usage: "largest Fetch response, `SIZE`, whatever the client asks", EnvVars: env("MAX_FETCH_BYTES")},
	}
}

// applyBrokerSecurity adds the security and limit flags to cfg.
func applyBrokerSecurity(c *cli.Context, cfg *broker.Config, log logrus.FieldLogger) error {
	cfg.IdleTimeout = c.Duration("idle-timeout")
	n, err := bytesize.ParseIn(c.String("max-inflight-bytes"), 1, math.MaxInt64)
	if err != nil {
		return fmt.Errorf("--max-inflight-bytes: %w", err)
	}
	cfg.MaxInflightBytes = n
	if n, err = bytesize.ParseIn(c.String("max-fetch-bytes"), 1, math.MaxInt32); err != nil {
		return fmt.Errorf("--max-fetch-bytes: %w", err)
	}
	cfg.MaxFetchBytes = int32(n)

	files := tlsconf.Files{Cert: c.String("tls-cert"), Key: c.String("tls-key"), ClientCA: c.String("tls-client-ca")}
	users, aclFile := c.String("users"), c.String("acl")
	adminCA := c.String("admin-client-ca")
	if adminCA != "" && !c.Bool("admin-tls") {
		return errors.New("--admin-client-ca needs --admin-tls")
	}
	if files == (tlsconf.Files{}) && users == "" && aclFile == "" && !c.Bool("admin-tls") {
		if !loopback(cfg.Admin) {
			log.WithField("admin", cfg.Admin).Warn("admin port reachable beyond loopback without TLS")
		}
		return nil
	}
	sec := &broker.Security{}
	if sec.TLS, err = files.Server(); err != nil {
		return fmt.Errorf("--tls-cert/--tls-key/--tls-client-ca: %w", err)
	}
	if c.Bool("admin-tls") {
		if sec.TLS == nil {
			return errors.New("--admin-tls needs --tls-cert and --tls-key")
		}
		admin := tlsconf.Files{Cert: files.Cert, Key: files.Key, ClientCA: adminCA}
		if sec.AdminTLS, err = admin.Server(); err != nil {
			return fmt.Errorf("--admin-client-ca: %w", err)
		}
		if adminCA != "" {
			// Verified in the handshake when presented; the admin
			// handler refuses all but /healthz without one, so
			// probes still reach it.
			sec.AdminTLS.ClientAuth = tls.VerifyClientCertIfGiven
		}
	} else if !loopback(cfg.Admin) {
		log.WithField("admin", cfg.Admin).Warn("admin port reachable beyond loopback without TLS (--admin-tls)")
	}
	if users != "" {
		uf, err := auth.OpenUserFile(users)
		if err != nil {
			return fmt.Errorf("--users: %w", err)
		}
		uf.OnReloadError = func(err error) {
			log.WithError(err).Error("users file changed but does not load; keeping the previous users")
		}
		sec.Credentials = uf
		for _, m := range strings.Split(c.String("sasl-mechanisms"), ",") {
			sec.SASLMechanisms = append(sec.SASLMechanisms, strings.TrimSpace(m))
		}
		if sec.TLS == nil {
			log.Warn("SASL without TLS: PLAIN passwords cross the network readable (SASL_PLAINTEXT)")
		}
	}
	if aclFile != "" {
		acl, err := auth.OpenACLFile(aclFile)
		if err != nil {
			return fmt.Errorf("--acl: %w", err)
		}
		acl.OnReloadError = func(err error) {
			log.WithError(err).Error("ACL file changed but does not load; keeping the previous rules")
		}
		sec.ACL = acl
	}
	cfg.Security = sec
	return nil
}

// loopback reports whether addr only listens on a loopback address ("" is
// a disabled admin port).
func loopback(addr string) bool {
	if addr == "" {
		return true
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// clientSecurityFlags are the TLS and SASL flags of every client command.
func clientSecurityFlags() []cli.Flag {
	env := func(name string) []string { return []string{"UNILOG_" + name} }
	return []cli.Flag{
		&cli.BoolFlag{Name: "tls", Usage: "connect over TLS (implied by the other --tls-* flags)", EnvVars: env("TLS")},
		&cli.StringFlag{Name: "tls-ca", Usage: "trust brokers signed by this PEM CA `FILE` (default: system roots)", EnvVars: env("TLS_CA")},
		&cli.StringFlag{Name: "tls-cert", Usage: "client certificate PEM `FILE` for mutual TLS", EnvVars: env("TLS_CERT")},
		&cli.StringFlag{Name: "tls-key", Usage: "private key PEM `FILE` of --tls-cert", EnvVars: env("TLS_KEY")},
		&cli.StringFlag{Name: "sasl-mechanism", Usage: "log in with PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512", EnvVars: env("SASL_MECHANISM")},
		&cli.StringFlag{Name: "sasl-user", Usage: "SASL user `NAME`", EnvVars: env("SASL_USER")},
		&cli.StringFlag{Name: "sasl-password", Usage: "SASL password (prefer UNILOG_SASL_PASSWORD: flags show in ps)", EnvVars: env("SASL_PASSWORD")},
	}
}

// clientSecurityOpts turns the client security flags into franz-go
// options: the one place the CLI's commands get TLS and SASL from.
func clientSecurityOpts(c *cli.Context) ([]kgo.Opt, error) {
	var opts []kgo.Opt
	files := tlsconf.Files{CA: c.String("tls-ca"), Cert: c.String("tls-cert"), Key: c.String("tls-key")}
	tlsCfg, err := files.Client(c.Bool("tls"))
	if err != nil {
		return nil, err
	}
	if tlsCfg != nil {
		opts = append(opts, kgo.DialTLSConfig(tlsCfg))
	}
	mech, err := saslMechanism(c.String("sasl-mechanism"), c.String("sasl-user"), c.String("sasl-password"))
	if err != nil {
		return nil, err
	}
	if mech != nil {
		opts = append(opts, kgo.SASL(mech))
	}
	return opts, nil
}

func saslMechanism(name, user, password string) (sasl.Mechanism, error) {
	if name == "" {
		if user != "" || password != "" {
			return nil, errors.New("--sasl-user and --sasl-password need --sasl-mechanism")
		}
		return nil, nil
	}
	if user == "" || password == "" {
		return nil, fmt.Errorf("--sasl-mechanism %s needs --sasl-user and --sasl-password", name)
	}
	mech, err := broker.SASLClient(strings.ToUpper(name), user, password)
	if err != nil {
		return nil, fmt.Errorf("--sasl-mechanism %q: want PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512", name)
	}
	return mech, nil
}
