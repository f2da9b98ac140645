package broker

import (
	"net/http"
	"net/http/pprof"
	"runtime"

	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// mutexProfileFraction samples one contended lock release in 100 for
// /debug/pprof/mutex: enough to rank a broker's lock waits, too few to
// cost anything measurable.
const mutexProfileFraction = 100

// The admin port (Config.Admin) serves HTTP on its own listener, never on
// the Kafka one:
//
//   - /healthz answers "ok" (503 while closing), for load balancers and
//     probes; it tells nothing else.
//   - /metrics is the Prometheus text of the broker's registry: request
//     counts and latencies per API, connections, bytes, memory, the
//     replica role and epoch, and per consumer group its members,
//     generation and lag, labelled with the group's name.
//   - GET /status is this node's role, epoch, log end, and as a leader its
//     followers with their ends and lag (NodeStatus).
//   - /debug/pprof/ (only with Config.AdminPprof) is Go's net/http/pprof:
//     the command line, goroutine stacks, heap and CPU profiles and
//     execution traces, which is why it is off by default. It also turns
//     on the mutex profile (mutexProfileFraction), which names the locks
//     a produce waits on.
//   - what HandleAdmin mounts: the broker command's console under /ui.
//
// With Security.AdminTLS holding ClientCAs, every endpoint but /healthz
// needs a client certificate verified against them; the TLS handshake
// does the verifying (ClientAuth VerifyClientCertIfGiven, or
// RequireAndVerifyClientCert to close /healthz too) and requireClientCert
// refuses requests that came without one, so probes still reach /healthz.
func (b *Broker) adminHandler() http.Handler {
	mux := http.NewServeMux()
	b.adminMux = mux
	mux.Handle("/metrics", promhttp.HandlerFor(b.metrics.reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("GET /status", b.serveStatus)
	if b.cfg.AdminPprof {
		// Process-wide, like the profiles themselves; never turned off
		// again, since another broker of the process may rely on it.
		if runtime.SetMutexProfileFraction(-1) == 0 {
			runtime.SetMutexProfileFraction(mutexProfileFraction)
		}
		// On the admin mux, not http.DefaultServeMux, so nothing else in
		// the process exposes them by accident.
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		select {
		case <-b.closing:
			http.Error(w, "closing", http.StatusServiceUnavailable)
		default:
			w.Write([]byte("ok\n"))
		}
	})
	if tc := b.cfg.Security.AdminTLS; tc != nil && tc.ClientCAs != nil {
		return requireClientCert(mux)
	}
	return mux
}

// requireClientCert serves /healthz to anyone and everything else only to
// clients whose certificate the TLS handshake verified.
func requireClientCert(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/healthz" && (r.TLS == nil || len(r.TLS.VerifiedChains) == 0) {
			http.Error(w, "client certificate required", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}
