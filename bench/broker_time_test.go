package bench

import (
	"math"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

func TestHistogramQuantile(t *testing.T) {
	upper := []float64{0.001, 0.002, 0.004, math.Inf(1)}
	for _, tc := range []struct {
		name   string
		counts []uint64 // cumulative, the last the total
		q      float64
		want   float64 // ms
	}{
		{"empty", []uint64{0, 0, 0, 0}, 0.99, math.NaN()},
		{"within the first bucket, from zero", []uint64{100, 100, 100, 100}, 0.5, 0.5},
		{"within a later bucket", []uint64{50, 50, 100, 100}, 0.75, 3},
		{"at a bucket's top", []uint64{50, 100, 100, 100}, 0.5, 1},
		{"past the last finite bound", []uint64{0, 0, 0, 10}, 0.99, 4},
	} {
		got := histogram{upper: upper, counts: tc.counts}.quantileMs(tc.q)
		if !(got == tc.want || math.IsNaN(got) && math.IsNaN(tc.want)) {
			t.Errorf("%s: %v ms, want %v", tc.name, got, tc.want)
		}
	}
}

// TestHistogramOfAndSince: a histogram read from a registry twice counts,
// between the readings, only what was observed between them.
func TestHistogramOfAndSince(t *testing.T) {
	reg := prometheus.NewRegistry()
	h := prometheus.NewHistogram(prometheus.HistogramOpts{Name: brokerProduceMetric, Buckets: []float64{0.001, 0.01}})
	reg.MustRegister(h)
	read := func() histogram {
		fams, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		got, err := histogramOf(fams, brokerProduceMetric)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	h.Observe(0.0005)
	before := read()
	h.Observe(0.005)
	h.Observe(0.5)
	d, err := read().since(before)
	if err != nil {
		t.Fatal(err)
	}
	if want := []uint64{0, 1, 2}; len(d.counts) != 3 || d.counts[0] != want[0] || d.counts[1] != want[1] || d.counts[2] != want[2] || !math.IsInf(d.upper[2], 1) {
		t.Fatalf("since: %+v, want counts %v up to +Inf", d, want)
	}
	if _, err := histogramOf(nil, brokerProduceMetric); err == nil {
		t.Error("no error for a missing histogram")
	}
	if _, err := d.since(histogram{counts: []uint64{1}}); err == nil {
		t.Error("no error for readings of different buckets")
	}
}

// TestUnilogProduceTimes: unilog's broker counts each produce it answers,
// read in this process and, as a parent reads a child, from its admin
// port, alike; other systems time none.
func TestUnilogProduceTimes(t *testing.T) {
	srv, err := StartServer(ServerConfig{System: SystemUnilog, Flush: "async", Dir: t.TempDir(), FileSize: 8 << 20})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	local := timerOf(srv)
	if local == nil {
		t.Fatal("unilog's server is not a produce timer")
	}
	remote := adminMetrics{"http://" + srv.(adminServer).adminAddr() + "/metrics"}
	tg, ctx := preparedKafkaTarget(t, srv, 2)
	before, err := local.produceTimes()
	if err != nil {
		t.Fatal(err)
	}
	r, err := produce(ctx, tg, Load{Partitions: 2, MessageSize: 64, Records: 500, Producers: 2})
	if err != nil || r.Records != 500 {
		t.Fatalf("produce: %v: %+v", err, r)
	}
	var run CompareRun
	if err := run.setBrokerP99(local, before); err != nil {
		t.Fatal(err)
	}
	if p := run.BrokerProduceP99Ms; p == nil || *p <= 0 || *p > r.MaxMs {
		t.Errorf("the broker's p99 %v ms, want above 0 and within the client's max %v", p, r.MaxMs)
	}
	// The client's last acknowledgements may reach it before the broker
	// observes their writes: read until both readings agree.
	var l, m histogram
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if l, err = local.produceTimes(); err != nil {
			t.Fatal(err)
		}
		if m, err = remote.produceTimes(); err != nil {
			t.Fatal(err)
		}
		if l.counts[len(l.counts)-1] == m.counts[len(m.counts)-1] || time.Now().After(deadline) {
			break
		}
	}
	d, err := l.since(before)
	if err != nil {
		t.Fatal(err)
	}
	if n := d.counts[len(d.counts)-1]; n < 1 || n > 500 {
		t.Errorf("%d produces counted for 500 records", n)
	}
	if len(l.counts) != len(m.counts) || l.counts[len(l.counts)-1] != m.counts[len(m.counts)-1] {
		t.Errorf("in process %v, from the admin port %v", l.counts, m.counts)
	}

	kf, err := StartServer(ServerConfig{System: SystemKfake, Flush: "async", Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer kf.Close()
	if timerOf(kf) != nil || ServeLine(kf) != ServeReady+kf.Addr() {
		t.Errorf("kfake times its produces: %q", ServeLine(kf))
	}
}
