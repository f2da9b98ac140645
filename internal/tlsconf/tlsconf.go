// Package tlsconf is the one place that turns certificate files into
// *tls.Config values: the broker's Kafka and admin listeners, the CLI's
// clients and, when it lands, the HA replication stream all build theirs
// here, so every listener gets the same minimum version and the same rules
// for client certificates.
//
// Mutual TLS: a server given a client CA requires and verifies a client
// certificate; the verified leaf's subject common name is the peer's name
// (PeerName), which the broker uses as its principal when no SASL login
// follows. RequirePeer narrows a server or client further to named peers,
// the hook a replication listener uses to accept only its own cluster.
package tlsconf

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"slices"
)

// ErrPeer is a verified certificate whose name is not among those allowed.
var ErrPeer = errors.New("tlsconf: peer not allowed")

// Files names PEM files. Server needs Cert and Key (ClientCA for mutual
// TLS); Client needs CA unless the system roots will do, and Cert and Key
// when the server asks for a client certificate.
type Files struct {
	Cert     string
	Key      string
	ClientCA string
	CA       string
}

// Server returns the listener config, or nil when no certificate is given
// (plaintext).
func (f Files) Server() (*tls.Config, error) {
	if f.Cert == "" && f.Key == "" {
		if f.ClientCA != "" {
			return nil, errors.New("tlsconf: a client CA needs a server certificate and key too")
		}
		return nil, nil
	}
	cert, err := f.keyPair()
	if err != nil {
		return nil, err
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{cert}}
	if f.ClientCA != "" {
		if cfg.ClientCAs, err = loadPool(f.ClientCA); err != nil {
			return nil, err
		}
		cfg.ClientAuth = tls.RequireAndVerifyClientCert
	}
	return cfg, nil
}

// Client returns a dialer config, or nil when no file is given and TLS is
// not asked for by enable.
func (f Files) Client(enable bool) (*tls.Config, error) {
	if !enable && f.CA == "" && f.Cert == "" && f.Key == "" {
		return nil, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	var err error
	if f.CA != "" {
		if cfg.RootCAs, err = loadPool(f.CA); err != nil {
			return nil, err
		}
	}
	if f.Cert != "" || f.Key != "" {
		cert, err := f.keyPair()
		if err != nil {
			return nil, err
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}

func (f Files) keyPair() (tls.Certificate, error) {
	if f.Cert == "" || f.Key == "" {
		return tls.Certificate{}, errors.New("tlsconf: a certificate needs both a cert and a key file")
	}
	cert, err := tls.LoadX509KeyPair(f.Cert, f.Key)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("tlsconf: load key pair %s, %s: %w", f.Cert, f.Key, err)
	}
	return cert, nil
}

func loadPool(file string) (*x509.CertPool, error) {
	pem, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("tlsconf: read CA %s: %w", file, err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("tlsconf: CA %s: no PEM certificate in it", file)
	}
	return pool, nil
}

// PeerName is the subject common name of the peer's verified certificate,
// or "" when the peer presented none (or it was not verified).
func PeerName(cs tls.ConnectionState) string {
	if len(cs.VerifiedChains) == 0 || len(cs.VerifiedChains[0]) == 0 {
		return ""
	}
	return cs.VerifiedChains[0][0].Subject.CommonName
}

// RequirePeer returns a tls.Config.VerifyConnection hook that accepts only
// a verified peer certificate named (common name or DNS name) in names.
// It runs after chain verification, on both the server and the client side.
func RequirePeer(names ...string) func(tls.ConnectionState) error {
	return func(cs tls.ConnectionState) error {
		if len(cs.VerifiedChains) == 0 {
			return fmt.Errorf("%w: no verified certificate", ErrPeer)
		}
		leaf := cs.VerifiedChains[0][0]
		if slices.Contains(names, leaf.Subject.CommonName) {
			return nil
		}
		for _, n := range leaf.DNSNames {
			if slices.Contains(names, n) {
				return nil
			}
		}
		return fmt.Errorf("%w: %q", ErrPeer, leaf.Subject.CommonName)
	}
}
