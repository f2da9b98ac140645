package broker

import (
	"regexp"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// runtimeLatencyMetrics are the Go runtime's histograms of what delays a
// request without being any stage's work: stop-the-world pauses (GC),
// goroutines waiting to run (on a loaded machine, the scheduler's queue)
// and time blocked on contended sync.Mutex and RWMutex. With the produce
// stages (produce_stages.go) they tell a tail caused by the broker's work
// from one caused by the machine.
var runtimeLatencyMetrics = regexp.MustCompile(`^/(sched/pauses/total/gc|sched/latencies|sync/mutex/wait/total):seconds$`)

// newGoCollector is the Go collector with its defaults and
// runtimeLatencyMetrics: go_sched_pauses_total_gc_seconds,
// go_sched_latencies_seconds, go_sync_mutex_wait_total_seconds_total.
func newGoCollector() prometheus.Collector {
	return collectors.NewGoCollector(
		collectors.WithGoCollectorRuntimeMetrics(collectors.GoRuntimeMetricsRule{Matcher: runtimeLatencyMetrics}),
	)
}
