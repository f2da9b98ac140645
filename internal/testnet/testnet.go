// Package testnet holds network helpers shared by tests of several
// packages.
package testnet

import (
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
)

var (
	mu    sync.Mutex
	given = map[string]bool{}
)

// FreeAddr returns a loopback HOST:PORT nothing listens on, for a listener
// whose address others must know before it starts (NATS routes, a broker
// started as a child process). An address is never returned twice in a
// process. The port is drawn below the kernel's ephemeral range: a port
// the kernel handed out for 127.0.0.1:0 goes back into the pool that every
// outgoing connection of every process on the machine draws its source
// port from, and `go test ./...` runs packages side by side, so CI saw a
// broker's --replication-listen fail with "address already in use"
// between this check and its bind. Below that range only another test's
// pick can collide.
func FreeAddr(t testing.TB) string {
	t.Helper()
	mu.Lock()
	defer mu.Unlock()
	low := ephemeralLow()
	for range 1000 {
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(lowestPort+rand.IntN(low-lowestPort)))
		if given[addr] {
			continue
		}
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			continue
		}
		ln.Close()
		given[addr] = true
		return addr
	}
	t.Fatalf("testnet: no free port in [%d, %d) after 1000 tries", lowestPort, low)
	return ""
}

// lowestPort keeps clear of the ports well-known services listen on.
const lowestPort = 10000

// ephemeralLow is the first port of the kernel's ephemeral range, 32768
// where it cannot be read (Linux's default).
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 32768
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 32768
	}
	low, err := strconv.Atoi(f[0])
	if err != nil || low <= lowestPort+1000 {
		return 32768
	}
	return low
}
