package broker

import (
	"testing"

	"github.com/unilog/unilog/auth"
)

// TestInterBrokerLoginPrefersSCRAM: a listener offering PLAIN first
// still sees the nodes log in to it with SCRAM, which never sends the
// inter-broker password: over a listener without TLS, PLAIN would give
// it, and the CLUSTER_ACTION it holds, to anyone reading the network.
func TestInterBrokerLoginPrefersSCRAM(t *testing.T) {
	b := saslBroker(t, func(c *Config) {
		c.Security.SASLMechanisms = []string{auth.Plain, auth.ScramSHA256}
		c.Security.InterBroker.Password = "shared-by-the-nodes"
	})
	cl, err := b.dialPeer(b.Addr(), "test-peer")
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := cl.Ping(testCtx(t)); err != nil {
		t.Fatalf("the inter-broker login: %v", err)
	}
	families, err := b.metrics.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	logins := map[string]float64{}
	for _, f := range families {
		if f.GetName() != "unilog_sasl_authentications_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["result"] == "ok" {
				logins[labels["mechanism"]] += m.GetCounter().GetValue()
			}
		}
	}
	if logins[auth.Plain] != 0 || logins[auth.ScramSHA256] == 0 {
		t.Fatalf("logins by mechanism %v: want SCRAM-SHA-256, no PLAIN", logins)
	}
}
