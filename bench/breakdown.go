package bench

import (
	"math"
	"runtime/metrics"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Breakdown splits a produce run's latency into the parts a record passes
// through, so that a p99 can be attributed instead of guessed at. Per
// record, from the time it was due: PacingLag until the producer goroutine
// called Send (its own scheduling, or the previous Send still blocked),
// then InFlight from that call to the acknowledgement callback (linger,
// batching, the request, the broker, the callback), of which SendBlocked
// was inside Send (a Kafka client's buffer of MaxInFlight records full). Requests
// splits InFlight's request part for Kafka clients; BenchGCPause and
// BenchWaitingForCPU are the bench process's own runtime over the run.
type Breakdown struct {
	PacingLag          Latencies     `json:"pacing_lag"`
	SendBlocked        Latencies     `json:"send_blocked"`
	InFlight           Latencies     `json:"in_flight"`
	Requests           *RequestTimes `json:"requests,omitempty"`
	BenchGCPause       Latencies     `json:"bench_gc_pause"`
	BenchWaitingForCPU Latencies     `json:"bench_waiting_for_cpu"`
}

// RequestTimes are franz-go's timings of each produce request of a run
// (HookBrokerE2E), quantiles over requests, not records: WriteWait from
// the request being built to its write starting (queued behind the
// connection's other writes), TimeToWrite the write itself, ReadWait from
// the write's end until the connection's reader starts on this response
// (reading the responses before it), TimeToRead from then to the response
// read whole, so the broker's time, the network's and the reader's
// scheduling. RoundTrip is TimeToWrite + ReadWait + TimeToRead, and
// RoundTripPerKiB the same weighted by the request's size, each KiB
// written counting once: with records of equal size its quantiles are
// over records, comparable with the record's own in-flight time (a full
// request that took long holds many records, a p99 over requests misses
// them).
// RecordsPerBatch is from HookProduceBatchWritten.
type RequestTimes struct {
	Requests        int64     `json:"requests"`
	Throttled       int64     `json:"throttled"`
	RecordsPerBatch Latencies `json:"records_per_batch"` // counts, not ms
	WriteWait       Latencies `json:"write_wait"`
	TimeToWrite     Latencies `json:"time_to_write"`
	ReadWait        Latencies `json:"read_wait"`
	TimeToRead      Latencies `json:"time_to_read"`
	RoundTrip       Latencies `json:"round_trip"`
	RoundTripPerKiB Latencies `json:"round_trip_per_kib"`
}

// requestHooks collects RequestTimes from every producer of a target. It is
// always registered: it runs once per request and batch, not per record.
type requestHooks struct {
	mu                                                          sync.Mutex
	writeWait, toWrite, readWait, toRead, trip, tripKiB, batchN latency
	requests, throttled                                         atomic.Int64
}

var (
	_ kgo.HookBrokerE2E           = (*requestHooks)(nil)
	_ kgo.HookBrokerThrottle      = (*requestHooks)(nil)
	_ kgo.HookProduceBatchWritten = (*requestHooks)(nil)
)

func newRequestHooks() *requestHooks {
	h := &requestHooks{}
	h.reset()
	return h
}

// reset starts a new run's collection.
func (h *requestHooks) reset() {
	h.mu.Lock()
	h.writeWait, h.toWrite, h.readWait, h.toRead = newLatency(), newLatency(), newLatency(), newLatency()
	h.trip, h.tripKiB, h.batchN = newLatency(), newLatency(), newLatency()
	h.mu.Unlock()
	h.requests.Store(0)
	h.throttled.Store(0)
}

func (h *requestHooks) OnBrokerE2E(_ kgo.BrokerMetadata, key int16, e2e kgo.BrokerE2E) {
	const produceKey = 0
	if key != produceKey || e2e.Err() != nil {
		return
	}
	h.requests.Add(1)
	h.mu.Lock()
	h.writeWait.record(e2e.WriteWait)
	h.toWrite.record(e2e.TimeToWrite)
	h.readWait.record(e2e.ReadWait)
	h.toRead.record(e2e.TimeToRead)
	h.trip.record(e2e.DurationE2E())
	h.tripKiB.recordN(e2e.DurationE2E(), int64(max(e2e.BytesWritten>>10, 1)))
	h.mu.Unlock()
}

func (h *requestHooks) OnBrokerThrottle(kgo.BrokerMetadata, time.Duration, bool) {
	h.throttled.Add(1)
}

func (h *requestHooks) OnProduceBatchWritten(_ kgo.BrokerMetadata, _ string, _ int32, m kgo.ProduceBatchMetrics) {
	h.mu.Lock()
	// The histogram is in µs units: a count of n is recorded as n µs and
	// read back by countsOf.
	h.batchN.record(time.Duration(m.NumRecords) * time.Microsecond)
	h.mu.Unlock()
}

func (h *requestHooks) times() *RequestTimes {
	h.mu.Lock()
	defer h.mu.Unlock()
	return &RequestTimes{
		Requests: h.requests.Load(), Throttled: h.throttled.Load(),
		RecordsPerBatch: countsOf(h.batchN),
		WriteWait:       latenciesOf(h.writeWait), TimeToWrite: latenciesOf(h.toWrite),
		ReadWait: latenciesOf(h.readWait), TimeToRead: latenciesOf(h.toRead), RoundTrip: latenciesOf(h.trip),
		RoundTripPerKiB: latenciesOf(h.tripKiB),
	}
}

// countsOf reads a histogram of counts recorded as microseconds.
func countsOf(l latency) Latencies {
	ls := latenciesOf(l)
	return Latencies{P50Ms: ls.P50Ms * 1000, P99Ms: ls.P99Ms * 1000, P999Ms: ls.P999Ms * 1000, MaxMs: ls.MaxMs * 1000}
}

// requestTimed is a target whose clients time their requests.
type requestTimed interface{ requestHooks() *requestHooks }

func (k *kafkaTarget) requestHooks() *requestHooks { return k.hooks }

// runtimeHistograms snapshots the bench process's GC pauses and
// goroutine scheduling latencies; since gives their quantiles over the
// interval between two snapshots.
type runtimeHistograms struct{ s []metrics.Sample }

func readRuntimeHistograms() runtimeHistograms {
	s := []metrics.Sample{{Name: "/sched/pauses/total/gc:seconds"}, {Name: "/sched/latencies:seconds"}}
	metrics.Read(s)
	return runtimeHistograms{s}
}

func (a runtimeHistograms) since(b runtimeHistograms) (gc, sched Latencies) {
	return histogramDiff(b.s[0].Value, a.s[0].Value), histogramDiff(b.s[1].Value, a.s[1].Value)
}

// histogramDiff gives the quantiles of after minus before, each quantile
// the upper bound of its bucket (the runtime's buckets are exponential, so
// the bound is at most about 12% above the value).
func histogramDiff(before, after metrics.Value) Latencies {
	if before.Kind() != metrics.KindFloat64Histogram || after.Kind() != metrics.KindFloat64Histogram {
		return Latencies{}
	}
	b, a := before.Float64Histogram(), after.Float64Histogram()
	counts := make([]uint64, len(a.Counts))
	var total uint64
	for i := range a.Counts {
		counts[i] = a.Counts[i] - b.Counts[i]
		total += counts[i]
	}
	if total == 0 {
		return Latencies{}
	}
	at := func(q float64) float64 {
		want := uint64(math.Ceil(q * float64(total)))
		var seen uint64
		for i, c := range counts {
			seen += c
			if seen >= want && c > 0 {
				return bucketMs(a.Buckets[i+1], a.Buckets[i])
			}
		}
		return 0
	}
	return Latencies{P50Ms: at(0.5), P99Ms: at(0.99), P999Ms: at(0.999), MaxMs: at(1)}
}

// bucketMs is a bucket's upper bound in ms, its lower one if the upper is
// +Inf.
func bucketMs(upper, lower float64) float64 {
	if math.IsInf(upper, 1) {
		return lower * 1000
	}
	return upper * 1000
}

func breakdownOf(lags, blocked []latency, flight latency, rt0 runtimeHistograms) Breakdown {
	lag, blk := newLatency(), newLatency()
	for i := range lags {
		lag.merge(lags[i])
		blk.merge(blocked[i])
	}
	gc, sched := readRuntimeHistograms().since(rt0)
	return Breakdown{
		PacingLag: latenciesOf(lag), SendBlocked: latenciesOf(blk), InFlight: latenciesOf(flight),
		BenchGCPause: gc, BenchWaitingForCPU: sched,
	}
}
