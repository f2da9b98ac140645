package broker

import (
	"crypto/tls"
	"fmt"
	"net"
	"strconv"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/unilog/unilog/auth"
)

// Calls between brokers. Two things a node does reach other nodes' Kafka
// listeners: a partition move's copier fetches from the source group's
// leader (move_copy.go), and a transaction coordinator sends its markers
// to other groups' leaders (txn_remote.go). They go as a client would, so
// they pass the same TLS, SASL and ACL a client does, as Kafka's
// inter.broker.listener does. The nodes of a cluster run their listeners
// alike, so a node dials the others as its own listener is configured:
// over TLS when it serves TLS, presenting its own certificate (for
// listeners with mutual TLS), and, when it asks for SASL, logged in as
// auth.InterBrokerUser with the first SCRAM mechanism it offers.
//
// The password is derived from the cluster secret (cmd/unilog), which
// already admits a node to the control plane and the replication stream:
// whoever holds it can rewrite the cluster's metadata anyway, so a
// separate inter-broker password would add a file to distribute and
// rotate without protecting anything more. Logged in so, a node holds
// Kafka's CLUSTER_ACTION (clusterAction) and nothing else a user could be
// granted: it writes transaction markers and fetches any topic, but does
// not produce, administer topics or join groups.

// InterBroker is how this node reaches the others' Kafka listeners.
type InterBroker struct {
	// TLS, when set, dials them over TLS; the node's certificate in it
	// is presented where a listener asks for one.
	TLS *tls.Config
	// Password is auth.InterBrokerUser's, the same on every node. With
	// SASL on this listener (Security.Credentials) the node logs in with
	// it and admits that user; "" does neither.
	Password string
}

// admitInterBroker adds the inter-broker user to the SASL users.
func (s *Security) admitInterBroker() error {
	if s.Credentials == nil || s.InterBroker.Password == "" {
		return nil
	}
	creds, err := auth.WithInterBroker(s.Credentials, s.InterBroker.Password)
	if err != nil {
		return fmt.Errorf("broker: %w", err)
	}
	s.Credentials, s.interBroker = creds, true
	return nil
}

// clusterAction reports whether principal may do what brokers do to each
// other (Kafka's CLUSTER_ACTION): the inter-broker user may, and whoever
// the ACL grants cluster; without an ACL everyone.
func (b *Broker) clusterAction(principal string) bool {
	sec := b.cfg.Security
	if sec.interBroker && principal == auth.InterBrokerUser {
		return true
	}
	return sec.ACL == nil || sec.ACL.Allow(principal, auth.Cluster, "*")
}

// peerAddr is node's Kafka listener as the cluster lists it now.
func (b *Broker) peerAddr(node int32) (string, error) {
	for _, cb := range b.cfg.Cluster.Brokers() {
		if cb.NodeID == node {
			return net.JoinHostPort(cb.Host, strconv.Itoa(int(cb.Port))), nil
		}
	}
	return "", fmt.Errorf("node %d not live", node)
}

// dialPeer is a Kafka client of another node's listener at addr.
func (b *Broker) dialPeer(addr, clientID string) (*kgo.Client, error) {
	sec := b.cfg.Security
	opts := []kgo.Opt{kgo.SeedBrokers(addr), kgo.ClientID(clientID), kgo.WithLogger(nil)}
	if sec.InterBroker.TLS != nil {
		opts = append(opts, kgo.DialTLSConfig(sec.InterBroker.TLS.Clone()))
	}
	if sec.interBroker {
		mech, err := SASLClient(interBrokerMechanism(sec.SASLMechanisms), auth.InterBrokerUser, sec.InterBroker.Password)
		if err != nil {
			return nil, err
		}
		opts = append(opts, kgo.SASL(mech))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("client of %s: %w", addr, err)
	}
	return cl, nil
}

// interBrokerMechanism is the mechanism a node logs in to the others
// with: the first SCRAM one the listeners offer, PLAIN only when they
// offer nothing else. SCRAM never sends the password, which PLAIN would
// give, over a listener without TLS, to anyone reading the network.
func interBrokerMechanism(offered []string) string {
	for _, m := range offered {
		if m != auth.Plain {
			return m
		}
	}
	return offered[0]
}

// SASLClient is the client side of mechanism for user: PLAIN,
// SCRAM-SHA-256 or SCRAM-SHA-512.
func SASLClient(mechanism, user, password string) (sasl.Mechanism, error) {
	switch mechanism {
	case auth.Plain:
		return plain.Auth{User: user, Pass: password}.AsMechanism(), nil
	case auth.ScramSHA256:
		return scram.Auth{User: user, Pass: password}.AsSha256Mechanism(), nil
	case auth.ScramSHA512:
		return scram.Auth{User: user, Pass: password}.AsSha512Mechanism(), nil
	}
	return nil, fmt.Errorf("broker: SASL mechanism %q: want PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512", mechanism)
}
