package bench

import (
	"context"
	"math"
	"runtime/metrics"
	"testing"
	"time"
)

func TestHistogramDiff(t *testing.T) {
	buckets := []float64{0, 0.001, 0.002, 0.004, math.Inf(1)}
	hist := func(counts ...uint64) metrics.Value {
		s := []metrics.Sample{{Name: "/sched/latencies:seconds"}}
		metrics.Read(s)
		h := s[0].Value.Float64Histogram()
		h.Buckets, h.Counts = buckets, counts
		return s[0].Value
	}
	for _, tc := range []struct {
		name          string
		before, after []uint64
		want          Latencies
	}{
		{"nothing new", []uint64{5, 5, 5, 5}, []uint64{5, 5, 5, 5}, Latencies{}},
		{"only what is new counts", []uint64{100, 0, 0, 0}, []uint64{100, 99, 0, 1}, Latencies{P50Ms: 2, P99Ms: 2, P999Ms: 4, MaxMs: 4}},
		{"open last bucket reads as its lower bound", []uint64{0, 0, 0, 0}, []uint64{0, 0, 0, 3}, Latencies{P50Ms: 4, P99Ms: 4, P999Ms: 4, MaxMs: 4}},
	} {
		if got := histogramDiff(hist(tc.before...), hist(tc.after...)); got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

// TestProduceBreakdown: a run through the Kafka client fills every part of
// the breakdown, and the next run on the same target counts only its own
// requests and batches.
func TestProduceBreakdown(t *testing.T) {
	srv, err := StartServer(ServerConfig{System: SystemKfake, Flush: "async", Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	tg, ctx := preparedKafkaTarget(t, srv, 2)
	const records = 2000
	r, err := produce(ctx, tg, Load{Partitions: 2, MessageSize: 64, Records: records, Producers: 2, Rate: 20000})
	if err != nil || r.Records != records {
		t.Fatalf("produce: %v: %+v", err, r)
	}
	b := r.Breakdown
	if b.Requests == nil || b.Requests.Requests < 1 || b.Requests.RecordsPerBatch.MaxMs < 1 || b.Requests.RecordsPerBatch.MaxMs > records {
		t.Fatalf("requests: %+v", b.Requests)
	}
	if rt := b.Requests.RoundTrip; rt.MaxMs <= 0 || rt.MaxMs != b.Requests.RoundTripPerKiB.MaxMs || rt.MaxMs > b.InFlight.MaxMs {
		t.Errorf("round trip %+v, per KiB %+v, in flight %+v", rt, b.Requests.RoundTripPerKiB, b.InFlight)
	}
	if b.InFlight.MaxMs <= 0 || b.InFlight.MaxMs > r.MaxMs || b.PacingLag.MaxMs > r.MaxMs || b.SendBlocked.MaxMs > b.InFlight.MaxMs {
		t.Errorf("parts beyond the whole: %+v, whole %+v", b, r.Latencies)
	}
	one, err := produce(ctx, tg, Load{Partitions: 2, MessageSize: 64, Records: 1, Producers: 1})
	if err != nil || one.Records != 1 {
		t.Fatalf("produce one: %v: %+v", err, one)
	}
	if got := one.Breakdown.Requests; got.Requests != 1 || got.RecordsPerBatch.MaxMs != 1 {
		t.Errorf("second run: %+v, want its one request of one record", got)
	}
}

// preparedKafkaTarget is a Kafka client of srv (acks=-1, linger 1 ms) with
// the bench topic created over partitions, and a context bounding the
// test's work to a minute; both end with the test.
func preparedKafkaTarget(t *testing.T, srv Server, partitions int) (*kafkaTarget, context.Context) {
	t.Helper()
	tg, err := newKafkaTarget(KafkaClient{Brokers: []string{srv.Addr()}, Topic: benchTopic, Acks: -1, Linger: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tg.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	if err := tg.Prepare(ctx, partitions); err != nil {
		t.Fatal(err)
	}
	return tg, ctx
}
