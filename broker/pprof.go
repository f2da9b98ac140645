package broker

import (
	"net/http"
	"net/http/pprof"
)

// registerPprof serves Go's profiles under /debug/pprof/ on the admin port,
// so a slow broker is profiled where it runs (`go tool pprof
// http://ADMIN/debug/pprof/profile?seconds=30`). The admin listener's own
// address and TLS are its access control, as for /metrics; the handlers are
// registered on the admin mux, not http.DefaultServeMux, so nothing else in
// the process exposes them by accident.
func registerPprof(mux *http.ServeMux) {
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
}
