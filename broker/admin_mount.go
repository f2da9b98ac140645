package broker

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
)

// HandleAdmin serves h for pattern on the admin port, behind the same TLS
// and client-certificate rules as /metrics and /status (the console mounts
// /ui here). Without an admin listener it does nothing.
func (b *Broker) HandleAdmin(pattern string, h http.Handler) {
	if b.adminMux != nil {
		b.adminMux.Handle(pattern, h)
	}
}

// Gatherer is the registry /metrics serves, for readers in the process.
func (b *Broker) Gatherer() prometheus.Gatherer { return b.metrics.reg }
