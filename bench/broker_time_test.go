package bench

import (
	"math"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/unilog/unilog/internal/promhist"
)

// TestHistogramOf: the broker's histogram is found among a registry's
// families, every observation in its +Inf bucket (promhist's tests read
// the buckets and their quantiles), and a missing one is an error.
func TestHistogramOf(t *testing.T) {
	reg := prometheus.NewRegistry()
	h := prometheus.NewHistogram(prometheus.HistogramOpts{Name: brokerProduceMetric, Buckets: []float64{0.001, 0.01}})
	reg.MustRegister(h)
	h.Observe(0.0005)
	h.Observe(0.5)
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got, err := histogramOf(fams, brokerProduceMetric)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got[0].Count != 1 || got[2].Count != 2 || !math.IsInf(got[2].LE, 1) {
		t.Errorf("buckets %+v, want 1 at 1 ms and 2 at +Inf", got)
	}
	if _, err := histogramOf(nil, brokerProduceMetric); err == nil {
		t.Error("no error for a missing histogram")
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
	run := CompareRun{ProduceResult: r}
	if err := run.setBrokerP99(local, before); err != nil {
		t.Fatal(err)
	}
	if p := run.BrokerProduceP99Ms; p == nil || *p <= 0 || *p > r.MaxMs {
		t.Errorf("the broker's p99 %v ms, want above 0 and within the client's max %v", p, r.MaxMs)
	}
	// The client's last acknowledgements may reach it before the broker
	// observes their writes: read until both readings agree.
	total := func(bs []promhist.Bucket) float64 { return bs[len(bs)-1].Count }
	var l, m []promhist.Bucket
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if l, err = local.produceTimes(); err != nil {
			t.Fatal(err)
		}
		if m, err = remote.produceTimes(); err != nil {
			t.Fatal(err)
		}
		if total(l) == total(m) || time.Now().After(deadline) {
			break
		}
	}
	d, err := promhist.Since(before, l)
	if err != nil {
		t.Fatal(err)
	}
	if n := total(d); n < 1 || n > 500 {
		t.Errorf("%v produces counted for 500 records", n)
	}
	if len(l) != len(m) || total(l) != total(m) {
		t.Errorf("in process %v, from the admin port %v", l, m)
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
