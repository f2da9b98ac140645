// Package testnet holds network helpers shared by tests of several
// packages.
package testnet

import (
	"net"
	"testing"
)

// FreeAddr returns a loopback HOST:PORT nothing listens on, for a listener
// whose address others must know before it starts (NATS routes). Another
// process could take the port in between; on a test machine that is rare
// enough to accept.
func FreeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}
