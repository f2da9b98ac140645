package bench

import (
	"fmt"
	"math"
	"net/http"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// A client's produce latency holds the broker's share and the load
// generator's. unilog's broker times its share itself
// (unilog_produce_seconds: a produce from its frame read to its response
// written), so a run against it reads that histogram before and after its
// produce phase, and the tail table shows the broker's p99 beside the
// client's. Other systems time nothing the same way and show none.

// brokerProduceMetric is the broker's histogram of whole produces.
const brokerProduceMetric = "unilog_produce_seconds"

// produceTimer is a server whose broker times its produces.
type produceTimer interface {
	produceTimes() (histogram, error)
}

func (s unilogServer) produceTimes() (histogram, error) {
	families, err := s.b.Gatherer().Gather()
	if err != nil {
		return histogram{}, fmt.Errorf("bench: broker metrics: %w", err)
	}
	return histogramOf(families, brokerProduceMetric)
}

// produceTimer returns the child as a produceTimer when it has an admin
// port (a unilog broker) and nil when not.
func (c *childServer) produceTimer() produceTimer {
	if c.admin == "" {
		return nil
	}
	return adminMetrics{"http://" + c.admin + "/metrics"}
}

// adminMetrics reads a child broker's histogram from its admin port.
type adminMetrics struct{ url string }

var metricsClient = &http.Client{Timeout: 10 * time.Second}

func (a adminMetrics) produceTimes() (histogram, error) {
	resp, err := metricsClient.Get(a.url)
	if err != nil {
		return histogram{}, fmt.Errorf("bench: broker metrics: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return histogram{}, fmt.Errorf("bench: broker metrics: %s", resp.Status)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	byName, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		return histogram{}, fmt.Errorf("bench: broker metrics: %w", err)
	}
	families := make([]*dto.MetricFamily, 0, len(byName))
	for _, f := range byName {
		families = append(families, f)
	}
	return histogramOf(families, brokerProduceMetric)
}

// timerOf is srv's produceTimer, or nil.
func timerOf(srv Server) produceTimer {
	switch s := srv.(type) {
	case *childServer:
		return s.produceTimer()
	case produceTimer:
		return s
	}
	return nil
}

// histogram is a Prometheus histogram's cumulative counts by bucket upper
// bound in seconds, increasing, the last +Inf.
type histogram struct {
	upper  []float64
	counts []uint64
}

// histogramOf finds the histogram named name, without labels, among
// families.
func histogramOf(families []*dto.MetricFamily, name string) (histogram, error) {
	for _, f := range families {
		if f.GetName() != name || f.GetType() != dto.MetricType_HISTOGRAM || len(f.GetMetric()) != 1 {
			continue
		}
		ph := f.GetMetric()[0].GetHistogram()
		var h histogram
		for _, b := range ph.GetBucket() {
			if math.IsInf(b.GetUpperBound(), 1) {
				continue
			}
			h.upper, h.counts = append(h.upper, b.GetUpperBound()), append(h.counts, b.GetCumulativeCount())
		}
		h.upper, h.counts = append(h.upper, math.Inf(1)), append(h.counts, ph.GetSampleCount())
		return h, nil
	}
	return histogram{}, fmt.Errorf("bench: broker metrics: no histogram %s", name)
}

// since is what h counted after before, a reading of the same histogram.
func (h histogram) since(before histogram) (histogram, error) {
	if len(before.counts) != len(h.counts) {
		return histogram{}, fmt.Errorf("bench: broker metrics: %d buckets, before %d", len(h.counts), len(before.counts))
	}
	d := histogram{upper: h.upper, counts: make([]uint64, len(h.counts))}
	for i := range h.counts {
		d.counts[i] = h.counts[i] - before.counts[i]
	}
	return d, nil
}

// quantileMs is the q-quantile in milliseconds, interpolated within its
// bucket as Prometheus's histogram_quantile does (the highest finite
// bound when it falls past them); NaN for an empty histogram.
func (h histogram) quantileMs(q float64) float64 {
	n := len(h.counts)
	if n == 0 || h.counts[n-1] == 0 {
		return math.NaN()
	}
	rank := q * float64(h.counts[n-1])
	for i, c := range h.counts {
		if float64(c) < rank {
			continue
		}
		if math.IsInf(h.upper[i], 1) {
			return 1000 * h.upper[max(i-1, 0)]
		}
		lower, below := 0.0, uint64(0)
		if i > 0 {
			lower, below = h.upper[i-1], h.counts[i-1]
		}
		if c == below {
			return 1000 * h.upper[i]
		}
		return 1000 * (lower + (h.upper[i]-lower)*(rank-float64(below))/float64(c-below))
	}
	return math.NaN() // not reached: the last count is the total
}

// setBrokerP99 sets the run's BrokerProduceP99Ms from the produces timer
// counted since before; none counted (acks=0 gets no response) leaves it
// nil.
func (r *CompareRun) setBrokerP99(timer produceTimer, before histogram) error {
	after, err := timer.produceTimes()
	if err != nil {
		return err
	}
	d, err := after.since(before)
	if err != nil {
		return err
	}
	if p99 := d.quantileMs(0.99); !math.IsNaN(p99) {
		r.BrokerProduceP99Ms = &p99
	}
	return nil
}
