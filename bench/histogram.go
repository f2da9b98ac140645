package bench

import (
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// latency records append latencies in microseconds, 1 µs to 100 s at three
// significant digits. Each producer owns one; they are merged at the end, so
// recording takes no lock.
type latency struct{ h *hdrhistogram.Histogram }

func newLatency() latency {
	return latency{h: hdrhistogram.New(1, int64(100*time.Second/time.Microsecond), 3)}
}

func (l latency) record(d time.Duration) { l.recordN(d, 1) }

// recordN records d n times.
func (l latency) recordN(d time.Duration, n int64) {
	us := max(d.Microseconds(), 1)
	// Beyond the trackable range the value is clamped, not dropped: a
	// 100 s append is reported as 100 s rather than vanishing.
	if err := l.h.RecordValues(us, n); err != nil {
		l.h.RecordValues(l.h.HighestTrackableValue(), n)
	}
}

func (l latency) merge(o latency) { l.h.Merge(o.h) }

// quantile returns the q-th percentile (0..100) in microseconds.
func (l latency) quantile(q float64) float64 { return float64(l.h.ValueAtQuantile(q)) }
