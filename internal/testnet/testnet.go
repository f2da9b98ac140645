// Package testnet holds network helpers shared by tests of several
// packages.
package testnet

import (
	"net"
	"sync"
	"testing"
)

var (
	mu    sync.Mutex
	given = map[string]bool{}
)

// FreeAddr returns a loopback HOST:PORT nothing listens on, for a listener
// whose address others must know before it starts (NATS routes). The
// kernel may hand a port it just gave back out again, so a test asking
// for several addresses before it binds any could get one twice: an
// address is never returned twice in a process. Another process could
// still take the port in between; on a test machine that is rare enough
// to accept.
func FreeAddr(t testing.TB) string {
	t.Helper()
	mu.Lock()
	defer mu.Unlock()
	for {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		ln.Close()
		if !given[addr] {
			given[addr] = true
			return addr
		}
	}
}
