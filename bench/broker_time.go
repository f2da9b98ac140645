package bench

import (
	"fmt"
	"net/http"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/unilog/unilog/internal/promhist"
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
	produceTimes() ([]promhist.Bucket, error)
}

func (s unilogServer) produceTimes() ([]promhist.Bucket, error) {
	families, err := s.b.Gatherer().Gather()
	if err != nil {
		return nil, fmt.Errorf("bench: broker metrics: %w", err)
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

func (a adminMetrics) produceTimes() ([]promhist.Bucket, error) {
	resp, err := metricsClient.Get(a.url)
	if err != nil {
		return nil, fmt.Errorf("bench: broker metrics: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("bench: broker metrics: %s", resp.Status)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	byName, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("bench: broker metrics: %w", err)
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

// histogramOf is the buckets of the histogram named name, without
// labels, among families.
func histogramOf(families []*dto.MetricFamily, name string) ([]promhist.Bucket, error) {
	for _, f := range families {
		if f.GetName() == name && f.GetType() == dto.MetricType_HISTOGRAM && len(f.GetMetric()) == 1 {
			return promhist.Of(f.GetMetric()[0].GetHistogram()), nil
		}
	}
	return nil, fmt.Errorf("bench: broker metrics: no histogram %s", name)
}

// brokerCatchUp bounds how long setBrokerP99 waits for the broker to
// count the produces its client saw answered.
const brokerCatchUp = 5 * time.Second

// setBrokerP99 sets the run's BrokerProduceP99Ms from the produces timer
// counted since before; none counted (acks=0 gets no response) leaves it
// nil. The broker counts a produce once its response is written, which
// may be after the client has read it: so it reads again, for at most
// brokerCatchUp, until the broker has counted as many produces as the
// client timed (Breakdown.Requests; a client that times none is read
// once).
func (r *CompareRun) setBrokerP99(timer produceTimer, before []promhist.Bucket) error {
	var want float64
	if q := r.Breakdown.Requests; q != nil {
		want = float64(q.Requests)
	}
	var d []promhist.Bucket
	for deadline := time.Now().Add(brokerCatchUp); ; time.Sleep(5 * time.Millisecond) {
		after, err := timer.produceTimes()
		if err != nil {
			return err
		}
		if d, err = promhist.Since(before, after); err != nil {
			return fmt.Errorf("bench: broker metrics: %w", err)
		}
		if d[len(d)-1].Count >= want || time.Now().After(deadline) {
			break
		}
	}
	if p99, ok := promhist.QuantileMs(d, 0.99); ok {
		r.BrokerProduceP99Ms = &p99
	}
	return nil
}
