package bench

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// Load is one end-to-end produce workload, the same for every system.
type Load struct {
	Partitions  int
	MessageSize int           // value bytes per record, stamp included
	Records     int64         // records to produce; 0: until Duration ends
	Duration    time.Duration // bounds the producing (0: none, then Records must be set)
	Producers   int           // connections, each with its own goroutine
	// Rate is records per second over all producers (0: as fast as the
	// system acknowledges). Latency is measured from when each record was
	// due, so a system that cannot keep the rate shows it in the latency.
	Rate float64
	// LatencyAfter leaves the records due in a paced run's first
	// LatencyAfter out of its latencies and their breakdown (they are
	// sent and acknowledged like the rest; WholeRun keeps them), as a
	// benchmark's warm-up phase does. At the start of a run fresh clients
	// connect, fill their buffers and grow their heap beside a fresh
	// broker: at 400,000 records/s that put the load generator 100 ms
	// behind its schedule within 65 ms, and it caught up 250 ms later, so
	// a run of a second had that start for its p99 whatever the system did
	// after it. Unpaced runs ignore it.
	LatencyAfter time.Duration
	Progress     bool // a progress bar on stderr
	// atMeasure, when set, is called once LatencyAfter has passed, before
	// produce returns: where a caller resets measurements of its own.
	atMeasure func()
}

func (l Load) validate() error {
	switch {
	case l.Partitions < 1:
		return fmt.Errorf("bench: partitions %d", l.Partitions)
	case l.MessageSize < minValueSize:
		return fmt.Errorf("bench: message size %d below the %d-byte time stamp", l.MessageSize, minValueSize)
	case l.Records < 0 || l.Duration < 0 || l.Rate < 0 || l.LatencyAfter < 0:
		return errors.New("bench: negative records, duration, rate or latency warm-up")
	case l.Records == 0 && l.Duration == 0:
		return errors.New("bench: need --records or --duration")
	case l.Producers < 1:
		return errors.New("bench: producers must be at least 1")
	}
	return nil
}

// Latencies are percentiles of a latency distribution in milliseconds.
type Latencies struct {
	P50Ms  float64 `json:"p50_ms"`
	P99Ms  float64 `json:"p99_ms"`
	P999Ms float64 `json:"p999_ms"`
	MaxMs  float64 `json:"max_ms"`
}

func latenciesOf(l latency) Latencies {
	ms := func(q float64) float64 { return l.quantile(q) / 1000 }
	return Latencies{P50Ms: ms(50), P99Ms: ms(99), P999Ms: ms(99.9), MaxMs: float64(l.h.Max()) / 1000}
}

// ProduceResult is what a produce run measured. Records counts records the
// system acknowledged; Errors those it did not.
type ProduceResult struct {
	Records     int64   `json:"records"`
	Errors      int64   `json:"errors"`
	FirstError  string  `json:"first_error,omitempty"`
	Bytes       int64   `json:"bytes"`
	Seconds     float64 `json:"seconds"`
	RecordsPerS float64 `json:"records_per_s"`
	MBPerS      float64 `json:"mb_per_s"`
	Latencies
	// LatencyAfterS is the start of the run left out of Latencies and
	// Breakdown (Load.LatencyAfter), and WholeRun the latencies with it.
	LatencyAfterS float64    `json:"latency_after_s,omitempty"`
	WholeRun      *Latencies `json:"whole_run,omitempty"`
	Breakdown     Breakdown  `json:"breakdown"`
	hist          latency    // the whole distribution, for WriteLatencyPlot
}

// syncLatency is the histograms fed from client callbacks, which may run
// on several goroutines: l from the record's due time, flight from its
// Send being called. In a run with a latency warm-up, records due before
// from go only into all, which every record goes into.
type syncLatency struct {
	mu        sync.Mutex
	l, flight latency
	from      time.Time
	all       *latency
}

func (s *syncLatency) record(due, called time.Time) {
	now := time.Now()
	s.mu.Lock()
	if s.all != nil {
		s.all.record(now.Sub(due))
	}
	if !due.Before(s.from) {
		s.l.record(now.Sub(due))
		s.flight.record(now.Sub(called))
	}
	s.mu.Unlock()
}

// flushWait bounds the wait for the last acknowledgements after a
// duration-bound run has stopped sending.
const flushWait = 2 * time.Minute

// produce runs load against t: every producer sends records round-robin
// over the partitions until Records are sent or Duration is over, then waits
// for every acknowledgement. The elapsed time runs to the last one.
func produce(ctx context.Context, t target, load Load) (ProduceResult, error) {
	if err := load.validate(); err != nil {
		return ProduceResult{}, err
	}
	senders := make([]sender, load.Producers)
	for i := range senders {
		s, err := t.NewSender()
		if err != nil {
			for _, o := range senders[:i] {
				o.Close()
			}
			return ProduceResult{}, err
		}
		senders[i] = s
	}
	run := newProduceRun(load.MessageSize)
	var (
		claimed atomic.Int64
		wg      sync.WaitGroup
		lags    = make([]latency, len(senders))
		blocked = make([]latency, len(senders))
	)
	hooks, timed := t.(requestTimed)
	if timed {
		hooks.requestHooks().reset()
	}
	sendCtx := ctx
	if load.Duration > 0 {
		var cancel context.CancelFunc
		sendCtx, cancel = context.WithTimeout(ctx, load.Duration)
		defer cancel()
	}
	bar := load.progress(run.acked.Load)
	rt0 := readRuntimeHistograms()
	start := time.Now()
	var warm *latencyWarmUp
	if load.Rate > 0 && load.LatencyAfter > 0 {
		all := newLatency()
		run.hist.from, run.hist.all = start.Add(load.LatencyAfter), &all
		warm = startLatencyWarmUp(load.LatencyAfter, func() {
			if timed {
				hooks.requestHooks().reset()
			}
			if load.atMeasure != nil {
				load.atMeasure()
			}
		})
	}
	for i, s := range senders {
		lags[i], blocked[i] = newLatency(), newLatency()
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer s.Close()
			// One pacing timer per producer, not one per record.
			pace := time.NewTimer(0)
			defer pace.Stop()
		send:
			for sendCtx.Err() == nil {
				n := claimed.Add(1) - 1
				if load.Records > 0 && n >= load.Records {
					break
				}
				due := time.Now()
				if load.Rate > 0 {
					due = start.Add(time.Duration(float64(n) / load.Rate * float64(time.Second)))
					if wait := time.Until(due); wait > 0 {
						pace.Reset(wait)
						select {
						case <-pace.C:
						case <-sendCtx.Done():
							// Still wait for the records sent: closing
							// the client would fail them.
							break send
						}
					}
				}
				rec := run.take(due)
				// Unpaced, a record is due when it is sent: one clock read.
				called := due
				if load.Rate > 0 {
					called = time.Now()
				}
				rec.called = called
				measured := !due.Before(run.hist.from)
				if measured {
					lags[i].record(called.Sub(due))
				}
				// The records outlive sendCtx: a run that ends waits
				// for them instead of failing them.
				err := s.Send(ctx, int32(n%int64(load.Partitions)), rec.value, rec)
				if measured {
					blocked[i].record(time.Since(called))
				}
				if err != nil {
					break
				}
			}
			fctx, cancel := context.WithTimeout(ctx, flushWait)
			defer cancel()
			if err := s.Flush(fctx); err != nil {
				run.firstErr.CompareAndSwap(nil, fmt.Sprintf("flush: %v", err))
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	bar.finish()
	if warm != nil {
		if !warm.stop() {
			return ProduceResult{}, fmt.Errorf("bench: the run ended within its latency warm-up of %v: nothing measured", load.LatencyAfter)
		}
		rt0 = warm.rt0
	}
	r := ProduceResult{Records: run.acked.Load(), Errors: run.failed.Load(), Seconds: elapsed.Seconds(), hist: run.hist.l}
	if e, ok := run.firstErr.Load().(string); ok {
		r.FirstError = e
	}
	r.Bytes = r.Records * int64(load.MessageSize)
	if r.Seconds > 0 {
		r.RecordsPerS = float64(r.Records) / r.Seconds
		r.MBPerS = float64(r.Bytes) / r.Seconds / 1e6
	}
	r.Latencies = latenciesOf(run.hist.l)
	if warm != nil {
		whole := latenciesOf(*run.hist.all)
		r.LatencyAfterS, r.WholeRun = load.LatencyAfter.Seconds(), &whole
	}
	r.Breakdown = breakdownOf(lags, blocked, run.hist.flight, rt0)
	if timed {
		r.Breakdown.Requests = hooks.requestHooks().times()
	}
	if err := ctx.Err(); err != nil {
		return r, err
	}
	return r, nil
}

// progress shows acknowledged records against Records, or elapsed time
// against Duration.
func (l Load) progress(acked func() int64) *progress {
	if l.Records > 0 {
		return newProgress(l.Progress, l.Records, "produce", acked, false)
	}
	start := time.Now()
	return newProgress(l.Progress, l.Duration.Milliseconds(), "produce", func() int64 { return time.Since(start).Milliseconds() }, false)
}

// ConsumeResult is what a catch-up read measured: Records read (Stored is
// how many were there when it started) and, from the stamps in the
// values, how long after it was due to be sent each record arrived.
type ConsumeResult struct {
	Stored      int64   `json:"stored"`
	Records     int64   `json:"records"`
	Bytes       int64   `json:"bytes"`
	Seconds     float64 `json:"seconds"`
	RecordsPerS float64 `json:"records_per_s"`
	MBPerS      float64 `json:"mb_per_s"`
	// EndToEnd is produce-to-consume latency: meaningful when the consumer
	// runs beside the producers; after a catch-up read it is the records'
	// age.
	EndToEnd Latencies `json:"end_to_end"`
}

// consume reads every partition from its start until want records arrived
// (0: all stored when it started) or maxWait passed (0: no bound).
func consume(ctx context.Context, t target, partitions int, want int64, maxWait time.Duration, showProgress bool) (ConsumeResult, error) {
	if maxWait > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, maxWait)
		defer cancel()
	}
	rcv, stored, err := t.NewReceiver(ctx, partitions)
	if err != nil {
		return ConsumeResult{}, err
	}
	defer rcv.Close()
	if want == 0 {
		want = stored
	}
	r := ConsumeResult{Stored: stored}
	lat := newLatency()
	var got atomic.Int64
	bar := newProgress(showProgress, want, "consume", got.Load, false)
	start := time.Now()
	for got.Load() < want {
		err := rcv.Poll(ctx, func(v []byte) {
			got.Add(1)
			r.Bytes += int64(len(v))
			if at, ok := stampOf(v); ok {
				lat.record(time.Since(at))
			}
		})
		if err != nil {
			if errors.Is(err, context.DeadlineExceeded) && maxWait > 0 {
				break
			}
			bar.finish()
			return r, err
		}
	}
	elapsed := time.Since(start)
	bar.finish()
	r.Records, r.Seconds = got.Load(), elapsed.Seconds()
	if r.Seconds > 0 {
		r.RecordsPerS = float64(r.Records) / r.Seconds
		r.MBPerS = float64(r.Bytes) / r.Seconds / 1e6
	}
	r.EndToEnd = latenciesOf(lat)
	return r, nil
}

// latencyWarmUp ends a run's latency warm-up (Load.LatencyAfter): then it
// calls reset and reads the runtime's histograms the breakdown starts from.
type latencyWarmUp struct {
	timer *time.Timer
	done  chan struct{}
	rt0   runtimeHistograms
}

func startLatencyWarmUp(after time.Duration, reset func()) *latencyWarmUp {
	w := &latencyWarmUp{done: make(chan struct{})}
	w.timer = time.AfterFunc(after, func() {
		defer close(w.done)
		reset()
		w.rt0 = readRuntimeHistograms()
	})
	return w
}

// stop reports whether the warm-up ended before the run did, and if so
// waits for its reset to finish.
func (w *latencyWarmUp) stop() bool {
	if w.timer.Stop() {
		return false
	}
	<-w.done
	return true
}
