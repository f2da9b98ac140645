package main

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/unilog/unilog/auth"
	"github.com/unilog/unilog/broker"
	"github.com/unilog/unilog/console"
	"github.com/unilog/unilog/ha/controlplane"
)

// consoleOptions are the broker flags of the console.
type consoleOptions struct {
	write bool
	// user and password log the console in to a listener with SASL.
	user, password string
}

// startConsole mounts the console on b's admin port and returns what
// stops it. The console reads through the Kafka listener as a client: over
// TLS it trusts the broker's own certificate chain (consoleTLS), and to a
// listener with SASL it logs in as --admin-ui-user, whose ACL grants are
// then what it may see and change. A listener that asks for a login or
// applies ACLs, with no user given, gets no console (said in the log)
// rather than one that fails on every page.
func startConsole(b *broker.Broker, cfg broker.Config, node *controlplane.Node, o consoleOptions) (stop func(), err error) {
	sec := cfg.Security
	if (o.user == "") != (o.password == "") {
		return nil, errors.New("--admin-ui-user and --admin-ui-password go together")
	}
	if o.user != "" && (sec == nil || sec.Credentials == nil) {
		return nil, errors.New("--admin-ui-user: the Kafka listener has no SASL to log in to (--users)")
	}
	if b.AdminAddr() == "" {
		return func() {}, nil
	}
	if sec != nil && (sec.Credentials != nil || sec.ACL != nil) && o.user == "" {
		cfg.Logger.Warn("console not served: the Kafka listener it reads through asks for SASL or applies ACLs; give it a user with --admin-ui-user and --admin-ui-password")
		return func() {}, nil
	}
	seeds := []string{b.Addr()}
	opts := []kgo.Opt{kgo.SeedBrokers(seeds...), kgo.ClientID("unilog-console")}
	if sec != nil && sec.TLS != nil {
		opts = append(opts, kgo.DialTLSConfig(consoleTLS(sec.TLS)))
	}
	if o.user != "" {
		mech, err := saslMechanism(consoleMechanism(sec.SASLMechanisms), o.user, o.password)
		if err != nil {
			return nil, fmt.Errorf("console: %w", err)
		}
		opts = append(opts, kgo.SASL(mech))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("console: kafka client: %w", err)
	}
	src := &consoleSource{opts: opts, cl: cl, adm: kadm.NewClient(cl), node: node, self: cfg.NodeID, dataDir: cfg.DataDir}
	ui := console.New(console.Options{Source: src, Admin: src, Write: o.write, Metrics: b.Gatherer(), Log: cfg.Logger.WithField("component", "console")})
	b.HandleAdmin("/ui", ui)
	b.HandleAdmin("/ui/", ui)
	cfg.Logger.WithFields(logrus.Fields{"url": "http://" + b.AdminAddr() + "/ui/", "write": o.write, "user": o.user}).Info("console served")
	return func() {
		ui.Close()
		cl.Close()
	}, nil
}

// consoleMechanism picks the strongest mechanism the listener offers:
// the users file holds SCRAM credentials, which PLAIN is checked against
// too.
func consoleMechanism(offered []string) string {
	for _, m := range []string{auth.ScramSHA512, auth.ScramSHA256, auth.Plain} {
		if slices.ContainsFunc(offered, func(o string) bool { return strings.EqualFold(o, m) }) {
			return m
		}
	}
	return auth.ScramSHA512
}

// consoleTLS is how the console reaches TLS listeners: it presents the
// broker's own certificate (for a listener that asks for one) and trusts a
// peer whose chain ends in a certificate of the broker's own chain, which
// holds for this node and for nodes whose certificates share its issuer
// when the broker's certificate file carries that issuer. The broker has
// no CA file of its own to verify against, and the address it dials may be
// an IP its certificate does not name, hence the explicit check.
func consoleTLS(server *tls.Config) *tls.Config {
	trusted := x509.NewCertPool()
	for _, c := range server.Certificates {
		for _, der := range c.Certificate {
			if cert, err := x509.ParseCertificate(der); err == nil {
				trusted.AddCert(cert)
			}
		}
	}
	return &tls.Config{
		MinVersion:         tls.VersionTLS12,
		Certificates:       server.Certificates,
		InsecureSkipVerify: true, // replaced by VerifyPeerCertificate
		VerifyPeerCertificate: func(raw [][]byte, _ [][]*x509.Certificate) error {
			if len(raw) == 0 {
				return errors.New("console: the broker sent no certificate")
			}
			leaf, err := x509.ParseCertificate(raw[0])
			if err != nil {
				return fmt.Errorf("console: broker certificate: %w", err)
			}
			inter := x509.NewCertPool()
			for _, der := range raw[1:] {
				if c, err := x509.ParseCertificate(der); err == nil {
					inter.AddCert(c)
				}
			}
			if _, err := leaf.Verify(x509.VerifyOptions{Roots: trusted, Intermediates: inter}); err != nil {
				return fmt.Errorf("console: broker certificate not in this broker's chain: %w", err)
			}
			return nil
		},
	}
}
