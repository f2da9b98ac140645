package console

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"io/fs"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sirupsen/logrus"
)

//go:embed assets
var assets embed.FS

// requestTimeout bounds the Kafka and control-plane round trips of one
// API call.
const requestTimeout = 15 * time.Second

// Options configure a Console.
type Options struct {
	Source Source
	// Admin makes the changes; they are refused unless Write is set.
	Admin Admin
	Write bool
	// Metrics is the broker's registry, sampled for the charts.
	Metrics prometheus.Gatherer
	Log     logrus.FieldLogger
}

// Console serves /ui and /ui/api/ (see the package doc).
type Console struct {
	o    Options
	hist *history
	mux  *http.ServeMux
	stop chan struct{}
	done sync.WaitGroup

	// rates keep each topic's summed log end at the last look, so that
	// the next look tells its produce rate.
	ratesMu sync.Mutex
	rates   map[string]rateMark
}

type rateMark struct {
	at   time.Time
	end  int64
	rate float64
}

// New starts sampling o.Metrics; Close stops it.
func New(o Options) *Console {
	if o.Log == nil {
		o.Log = logrus.StandardLogger()
	}
	c := &Console{o: o, hist: newHistory(o.Metrics), mux: http.NewServeMux(),
		stop: make(chan struct{}), rates: map[string]rateMark{}}
	static, err := fs.Sub(assets, "assets")
	if err != nil {
		panic(err) // the embedded tree is part of the binary
	}
	c.mux.Handle("GET /ui/", http.StripPrefix("/ui/", http.FileServerFS(static)))
	c.mux.Handle("GET /ui", http.RedirectHandler("/ui/", http.StatusMovedPermanently))
	c.mux.HandleFunc("GET /ui/api/info", c.serveInfo)
	c.mux.HandleFunc("GET /ui/api/cluster", c.serveCluster)
	c.mux.HandleFunc("GET /ui/api/metrics", c.serveMetrics)
	c.mux.HandleFunc("GET /ui/api/topics", c.serveTopics)
	c.mux.HandleFunc("GET /ui/api/topics/{topic}", c.serveTopic)
	c.mux.HandleFunc("GET /ui/api/topics/{topic}/partitions/{partition}/records", c.serveRecords)
	c.mux.HandleFunc("GET /ui/api/groups", c.serveGroups)
	c.mux.HandleFunc("GET /ui/api/groups/{group}", c.serveGroup)
	c.mux.HandleFunc("POST /ui/api/topics", c.write(c.createTopic))
	c.mux.HandleFunc("POST /ui/api/topics/{topic}/partitions", c.write(c.addPartitions))
	c.mux.HandleFunc("DELETE /ui/api/topics/{topic}", c.write(c.deleteTopic))
	c.mux.HandleFunc("POST /ui/api/groups/{group}/reset", c.write(c.resetGroup))
	c.mux.HandleFunc("DELETE /ui/api/groups/{group}", c.write(c.deleteGroup))
	if o.Metrics != nil {
		c.done.Add(1)
		go func() {
			defer c.done.Done()
			c.hist.run(c.stop)
		}()
	}
	return c
}

func (c *Console) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("X-Frame-Options", "DENY")
	w.Header().Set("Content-Security-Policy", "default-src 'self'; style-src 'self' 'unsafe-inline'")
	c.mux.ServeHTTP(w, r)
}

// Close stops the sampler.
func (c *Console) Close() {
	close(c.stop)
	c.done.Wait()
}

// httpError carries the status an API error is answered with.
type httpError struct {
	status int
	err    error
}

func (e *httpError) Error() string { return e.err.Error() }
func (e *httpError) Unwrap() error { return e.err }

// Refused wraps an Admin error that the target's state caused (a group
// that has members, a topic that exists): answered 409, not 502.
type Refused struct{ Err error }

func (r Refused) Error() string { return r.Err.Error() }
func (r Refused) Unwrap() error { return r.Err }

// NotFound wraps a Source error that names no topic, partition or group:
// answered 404.
type NotFound struct{ Err error }

func (n NotFound) Error() string { return n.Err.Error() }
func (n NotFound) Unwrap() error { return n.Err }

func badRequest(err error) error { return &httpError{http.StatusBadRequest, err} }

// reply writes v as JSON, or err with its status (502 for what the
// brokers answered: the console itself did not fail).
func (c *Console) reply(w http.ResponseWriter, r *http.Request, v any, err error) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	if err != nil {
		status := http.StatusBadGateway
		var he *httpError
		switch {
		case errors.As(err, &he):
			status = he.status
		case errors.As(err, new(Refused)):
			status = http.StatusConflict
		case errors.As(err, new(NotFound)):
			status = http.StatusNotFound
		}
		c.o.Log.WithError(err).WithFields(logrus.Fields{"path": r.URL.Path, "status": status}).Debug("console request failed")
		w.WriteHeader(status)
		json.NewEncoder(w).Encode(map[string]string{"error": err.Error()})
		return
	}
	json.NewEncoder(w).Encode(v)
}

func requestContext(r *http.Request) (context.Context, context.CancelFunc) {
	return context.WithTimeout(r.Context(), requestTimeout)
}

func (c *Console) serveInfo(w http.ResponseWriter, r *http.Request) {
	c.reply(w, r, map[string]any{"write": c.o.Write && c.o.Admin != nil}, nil)
}

func (c *Console) serveMetrics(w http.ResponseWriter, r *http.Request) {
	c.reply(w, r, c.hist.series(), nil)
}

func (c *Console) serveCluster(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := requestContext(r)
	defer cancel()
	cl, err := c.o.Source.Cluster(ctx)
	if s, _, ok := c.hist.read(time.Now()); err == nil && ok {
		cl.Disk.CommitLogBytes = int64(s.gauges["unilog_commitlog_bytes"])
		cl.Disk.CommitLogFiles = int64(s.gauges["unilog_commitlog_files"])
		cl.Disk.ReadOnly = s.gauges["unilog_read_only"] != 0
		cl.Disk.WriteFailed = s.gauges["unilog_log_write_failed"] != 0
	}
	c.reply(w, r, cl, err)
}
