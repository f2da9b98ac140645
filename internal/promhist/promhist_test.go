package promhist

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// quantileSince is the q quantile of what cur counted after prev; NaN for
// none.
func quantileSince(t *testing.T, prev, cur []Bucket, q float64) float64 {
	t.Helper()
	d, err := Since(prev, cur)
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := QuantileMs(d, q); ok {
		return v
	}
	return math.NaN()
}

func TestQuantileMs(t *testing.T) {
	inf := math.Inf(1)
	prev := []Bucket{{0.001, 10}, {0.01, 20}, {0.1, 20}, {inf, 20}}
	for _, tc := range []struct {
		name string
		cur  []Bucket
		q    float64
		want float64 // ms; NaN for none
	}{
		{"nothing new", prev, 0.99, math.NaN()},
		{"all in the second bucket", []Bucket{{0.001, 10}, {0.01, 120}, {0.1, 120}, {inf, 120}}, 0.5, 5.5},
		{"p99 in the third", []Bucket{{0.001, 10}, {0.01, 20}, {0.1, 120}, {inf, 120}}, 0.99, 10 + 90*0.99},
		{"beyond the last bound", []Bucket{{0.001, 10}, {0.01, 20}, {0.1, 20}, {inf, 30}}, 0.99, 100},
	} {
		got := quantileSince(t, prev, tc.cur, tc.q)
		switch {
		case math.IsNaN(tc.want) && !math.IsNaN(got):
			t.Errorf("%s: %v, want none", tc.name, got)
		case !math.IsNaN(tc.want) && (math.IsNaN(got) || math.Abs(got-tc.want) > 1e-9):
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestQuantileMsOneReading: a reading with nothing before it is read whole.
func TestQuantileMsOneReading(t *testing.T) {
	upper := []float64{0.001, 0.002, 0.004, math.Inf(1)}
	for _, tc := range []struct {
		name   string
		counts []float64 // cumulative, the last the total
		q      float64
		want   float64 // ms
	}{
		{"empty", []float64{0, 0, 0, 0}, 0.99, math.NaN()},
		{"within the first bucket, from zero", []float64{100, 100, 100, 100}, 0.5, 0.5},
		{"within a later bucket", []float64{50, 50, 100, 100}, 0.75, 3},
		{"at a bucket's top", []float64{50, 100, 100, 100}, 0.5, 1},
		{"past the last finite bound", []float64{0, 0, 0, 10}, 0.99, 4},
	} {
		cur := make([]Bucket, len(upper))
		for i := range upper {
			cur[i] = Bucket{upper[i], tc.counts[i]}
		}
		got := quantileSince(t, nil, cur, tc.q)
		if !(got == tc.want || math.IsNaN(got) && math.IsNaN(tc.want)) {
			t.Errorf("%s: %v ms, want %v", tc.name, got, tc.want)
		}
	}
}

// TestOfAndSince: a histogram gathered from a registry and the same parsed
// from its text page read alike; between two readings only what was
// observed between them counts; readings of other buckets are refused.
func TestOfAndSince(t *testing.T) {
	reg := prometheus.NewRegistry()
	h := prometheus.NewHistogram(prometheus.HistogramOpts{Name: "x_seconds", Buckets: []float64{0.001, 0.01}})
	reg.MustRegister(h)
	read := func() (gathered, parsed []Bucket) {
		fams, err := reg.Gather()
		if err != nil || len(fams) != 1 {
			t.Fatalf("gather: %v, %d families", err, len(fams))
		}
		var page strings.Builder
		if _, err := expfmt.MetricFamilyToText(&page, fams[0]); err != nil {
			t.Fatal(err)
		}
		p := expfmt.NewTextParser(model.UTF8Validation)
		byName, err := p.TextToMetricFamilies(strings.NewReader(page.String()))
		if err != nil {
			t.Fatal(err)
		}
		return Of(fams[0].GetMetric()[0].GetHistogram()), Of(byName["x_seconds"].GetMetric()[0].GetHistogram())
	}
	h.Observe(0.0005)
	before, _ := read()
	h.Observe(0.005)
	h.Observe(0.5)
	after, parsed := read()
	if len(after) != len(parsed) {
		t.Fatalf("gathered %v, parsed %v", after, parsed)
	}
	for i := range after {
		if after[i] != parsed[i] {
			t.Fatalf("gathered %v, parsed %v", after, parsed)
		}
	}
	d, err := Since(before, after)
	if err != nil {
		t.Fatal(err)
	}
	if want := []float64{0, 1, 2}; len(d) != 3 || d[0].Count != want[0] || d[1].Count != want[1] || d[2].Count != want[2] || !math.IsInf(d[2].LE, 1) {
		t.Fatalf("since: %+v, want counts %v up to +Inf", d, want)
	}
	if _, err := Since([]Bucket{{math.Inf(1), 1}}, d); !errors.Is(err, ErrBuckets) {
		t.Errorf("readings of different buckets: %v", err)
	}
}
