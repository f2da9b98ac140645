package main

import (
	"fmt"
	"os"
	"runtime/debug"

	"github.com/unilog/unilog/internal/bytesize"
)

// The load generator's garbage collector. When bench compare starts the
// systems as children, this process holds only the clients, and on this
// machine they share the cores with the broker being measured: at 10,000
// partitions they took more CPU than the broker. Go's default (GOGC 100)
// collects each time the heap doubles over a live heap of a few tens of
// MB, and every collection also empties franz-go's pooled request
// buffers, which then grow again. The clients collect at 5x their live
// heap instead, under a soft limit that keeps the process from growing
// past it. The children get Go's defaults (they are started with this
// process's environment, which this does not change), so every system's
// clients are tuned alike and no broker is. A GOGC or GOMEMLIMIT set by the
// user wins.
const (
	clientGCPercent   = 400
	clientMemoryLimit = 2 << 30
)

// tuneClientGC applies the clients' setting unless the environment sets
// the collector's, and says what the clients run with.
func tuneClientGC() string {
	gc, limit := "GOGC="+os.Getenv("GOGC"), "GOMEMLIMIT="+os.Getenv("GOMEMLIMIT")
	if _, ok := os.LookupEnv("GOGC"); !ok {
		debug.SetGCPercent(clientGCPercent)
		gc = fmt.Sprintf("GOGC %d", clientGCPercent)
	}
	if _, ok := os.LookupEnv("GOMEMLIMIT"); !ok {
		debug.SetMemoryLimit(clientMemoryLimit)
		limit = "a soft memory limit of " + bytesize.Format(clientMemoryLimit)
	}
	return gc + " under " + limit
}
