package console

import (
	"math"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/unilog/unilog/internal/promhist"
)

// SampleInterval is how often the console gathers the broker's metrics;
// HistoryLen points of it are kept (ten minutes). The lag history is kept
// for the first MaxLagGroups groups seen, which bounds it at 2.4 MB
// however many groups a cluster has.
const (
	SampleInterval = 2 * time.Second
	HistoryLen     = 300
	MaxLagGroups   = 2000
)

// sample is one gathering of the registry: counters as totals, so that
// two samples make a rate, and histograms as cumulative buckets.
type sample struct {
	at       time.Time
	counters map[string]float64
	gauges   map[string]float64
	buckets  map[string][]promhist.Bucket
	// topicFetched is unilog_topic_fetched_bytes_total by topic.
	topicFetched map[string]float64
	// groupLag is indexed by history.groups; NaN where a group was not
	// reported.
	groupLag []float32
}

// counted are the counters the charts turn into rates.
var counted = []string{
	"unilog_produced_bytes_total", "unilog_produced_records_total",
	"unilog_fetched_bytes_total", "unilog_requests_total",
}

// latencyAPIs are the request_duration_seconds series charted.
var latencyAPIs = []string{"Produce", "Fetch"}

// Series is the history in columns, the shape uPlot draws: T in unix
// seconds, the rates per second, latencies in milliseconds (the p99 of
// the requests between two samples; null when there were none).
type Series struct {
	T              []int64    `json:"t"`
	ProduceBytes   []*float64 `json:"produce_bytes"`
	ProduceRecords []*float64 `json:"produce_records"`
	FetchBytes     []*float64 `json:"fetch_bytes"`
	Requests       []*float64 `json:"requests"`
	ProduceP99     []*float64 `json:"produce_p99_ms"`
	FetchP99       []*float64 `json:"fetch_p99_ms"`
	Connections    []*float64 `json:"connections"`
}

// history samples a Gatherer into a ring.
type history struct {
	g prometheus.Gatherer

	mu      sync.Mutex
	samples []sample // oldest first, at most HistoryLen
	groups  map[string]int
}

func newHistory(g prometheus.Gatherer) *history {
	return &history{g: g, groups: map[string]int{}}
}

// run samples until stop is closed.
func (h *history) run(stop <-chan struct{}) {
	t := time.NewTicker(SampleInterval)
	defer t.Stop()
	h.sample(time.Now())
	for {
		select {
		case <-stop:
			return
		case now := <-t.C:
			h.sample(now)
		}
	}
}

func (h *history) sample(now time.Time) {
	s, lags, ok := h.read(now)
	if !ok {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	s.groupLag = h.index(lags)
	if len(h.samples) == HistoryLen {
		h.samples = append(h.samples[:0], h.samples[1:]...)
	}
	h.samples = append(h.samples, s)
}

// index lays lags out by h.groups, adding groups up to MaxLagGroups.
func (h *history) index(lags map[string]float64) []float32 {
	out := make([]float32, len(h.groups))
	for i := range out {
		out[i] = float32(math.NaN())
	}
	for g, v := range lags {
		i, ok := h.groups[g]
		if !ok {
			if len(h.groups) >= MaxLagGroups {
				continue
			}
			i = len(h.groups)
			h.groups[g] = i
			out = append(out, 0)
		}
		out[i] = float32(v)
	}
	return out
}

// read gathers the registry now, with each group's lag by name; false
// when it gathered nothing (a partial gathering still charts what it has).
func (h *history) read(now time.Time) (sample, map[string]float64, bool) {
	families, err := h.g.Gather()
	if err != nil && len(families) == 0 {
		return sample{}, nil, false
	}
	lags := map[string]float64{}
	s := sample{at: now, counters: map[string]float64{}, gauges: map[string]float64{},
		buckets: map[string][]promhist.Bucket{}, topicFetched: map[string]float64{}}
	for _, f := range families {
		name := f.GetName()
		for _, m := range f.GetMetric() {
			switch {
			case name == "unilog_group_lag_records":
				lags[label(m, "group")] = m.GetGauge().GetValue()
			case name == "unilog_topic_fetched_bytes_total":
				s.topicFetched[label(m, "topic")] = m.GetCounter().GetValue()
			case name == "unilog_request_duration_seconds":
				s.buckets[label(m, "api")] = promhist.Of(m.GetHistogram())
			case m.Counter != nil:
				s.counters[name] += m.GetCounter().GetValue()
			case m.Gauge != nil:
				s.gauges[name] += m.GetGauge().GetValue()
			}
		}
	}
	return s, lags, true
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// series turns consecutive samples into rates and latencies.
func (h *history) series() Series {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out Series
	for i := 1; i < len(h.samples); i++ {
		prev, cur := h.samples[i-1], h.samples[i]
		dt := cur.at.Sub(prev.at).Seconds()
		rate := func(name string) *float64 {
			return num((cur.counters[name] - prev.counters[name]) / dt)
		}
		out.T = append(out.T, cur.at.Unix())
		out.ProduceBytes = append(out.ProduceBytes, rate(counted[0]))
		out.ProduceRecords = append(out.ProduceRecords, rate(counted[1]))
		out.FetchBytes = append(out.FetchBytes, rate(counted[2]))
		out.Requests = append(out.Requests, rate(counted[3]))
		out.ProduceP99 = append(out.ProduceP99, quantileMs(prev.buckets[latencyAPIs[0]], cur.buckets[latencyAPIs[0]], 0.99))
		out.FetchP99 = append(out.FetchP99, quantileMs(prev.buckets[latencyAPIs[1]], cur.buckets[latencyAPIs[1]], 0.99))
		out.Connections = append(out.Connections, num(cur.gauges["unilog_connections"]))
	}
	return out
}

// groupLag is one group's unilog_group_lag_records over the history:
// times in unix seconds and the lag, null where the group was not
// reported; tracked is false for a group beyond MaxLagGroups.
func (h *history) groupLag(group string) (t []int64, lag []*float64, tracked bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	i, tracked := h.groups[group]
	for _, s := range h.samples {
		t = append(t, s.at.Unix())
		var v *float64
		if tracked && i < len(s.groupLag) {
			v = num(float64(s.groupLag[i]))
		}
		lag = append(lag, v)
	}
	return t, lag, tracked
}

// quantileMs is the q quantile, in milliseconds, of the observations
// between two readings of a histogram; nil when nothing was observed.
func quantileMs(prev, cur []promhist.Bucket, q float64) *float64 {
	d, err := promhist.Since(prev, cur)
	if err != nil {
		return nil
	}
	if v, ok := promhist.QuantileMs(d, q); ok {
		return num(v)
	}
	return nil
}

// num boxes a float for JSON, nil for NaN and infinities (JSON has none).
func num(v float64) *float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return nil
	}
	return &v
}

// fetchRate is the bytes per second this node served from topic between
// the last two samples, -1 before there are two. A topic the node served
// nothing from has no counter: 0.
func (h *history) fetchRate(topic string) float64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.samples) < 2 {
		return -1
	}
	prev, cur := h.samples[len(h.samples)-2], h.samples[len(h.samples)-1]
	// A counter dropped with its topic and made again starts below the
	// previous sample: count from 0.
	d := cur.topicFetched[topic] - prev.topicFetched[topic]
	if d < 0 {
		d = cur.topicFetched[topic]
	}
	return d / cur.at.Sub(prev.at).Seconds()
}
