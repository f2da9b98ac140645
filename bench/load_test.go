package bench

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

// heldTarget acknowledges records only when the sender flushes and fails
// the ones still held when it is closed, as a Kafka client closed with
// records buffered does.
type heldTarget struct{}

func (heldTarget) Prepare(context.Context, int) error { return nil }
func (heldTarget) NewSender() (sender, error)         { return &heldSender{}, nil }
func (heldTarget) NewReceiver(context.Context, int) (receiver, int64, error) {
	return nil, 0, errors.New("heldTarget: no receiver")
}
func (heldTarget) Close() {}

type heldSender struct {
	mu   sync.Mutex
	held []acker
}

func (s *heldSender) Send(_ context.Context, _ int32, _ []byte, rec acker) error {
	s.mu.Lock()
	s.held = append(s.held, rec)
	s.mu.Unlock()
	return nil
}

func (s *heldSender) finish(err error) {
	s.mu.Lock()
	held := s.held
	s.held = nil
	s.mu.Unlock()
	for _, rec := range held {
		rec.ack(err)
	}
}

func (s *heldSender) Flush(context.Context) error { s.finish(nil); return nil }
func (s *heldSender) Close()                      { s.finish(errors.New("client closed")) }

// TestProduceRateEndsWithFlush: a paced run whose duration ends while a
// producer waits for its next record's due time still waits for the
// records it sent, instead of closing the client on them.
func TestProduceRateEndsWithFlush(t *testing.T) {
	// One record per second: the first goes at once, the run ends while
	// the second is awaited.
	load := Load{Partitions: 1, MessageSize: 64, Duration: 50 * time.Millisecond, Producers: 1, Rate: 1}
	r, err := produce(context.Background(), heldTarget{}, load)
	if err != nil {
		t.Fatal(err)
	}
	if r.Errors != 0 || r.Records == 0 {
		t.Errorf("acknowledged %d records, %d failed (%s); want every record sent acknowledged", r.Records, r.Errors, r.FirstError)
	}
}

// slowStartTarget acknowledges at once, except the records sent in its
// first slowFor, which it acknowledges late by lateBy: a run's start.
type slowStartTarget struct {
	heldTarget
	start           time.Time
	slowFor, lateBy time.Duration
}

func (t *slowStartTarget) NewSender() (sender, error) { return &slowStartSender{t: t}, nil }

type slowStartSender struct {
	t  *slowStartTarget
	wg sync.WaitGroup
}

func (s *slowStartSender) Send(_ context.Context, _ int32, _ []byte, rec acker) error {
	if time.Since(s.t.start) >= s.t.slowFor {
		rec.ack(nil)
		return nil
	}
	s.wg.Add(1)
	time.AfterFunc(s.t.lateBy, func() {
		defer s.wg.Done()
		rec.ack(nil)
	})
	return nil
}

func (s *slowStartSender) Flush(context.Context) error { s.wg.Wait(); return nil }
func (s *slowStartSender) Close()                      { s.wg.Wait() }

// TestProduceLatencyAfter: the records due in a paced run's warm-up are
// acknowledged and counted, but only the whole run's latencies hold them;
// the caller's reset runs once, when the warm-up ends; a run over within
// its warm-up is an error, not a result with nothing measured.
func TestProduceLatencyAfter(t *testing.T) {
	const lateBy = 150 * time.Millisecond
	tg := &slowStartTarget{start: time.Now(), slowFor: 100 * time.Millisecond, lateBy: lateBy}
	var resets int
	load := Load{Partitions: 2, MessageSize: 64, Records: 1000, Producers: 2, Rate: 2000,
		LatencyAfter: 200 * time.Millisecond, atMeasure: func() { resets++ }}
	r, err := produce(context.Background(), tg, load)
	if err != nil {
		t.Fatal(err)
	}
	if r.Records != 1000 || r.Errors != 0 {
		t.Fatalf("acknowledged %d of 1000 records, %d failed", r.Records, r.Errors)
	}
	if resets != 1 {
		t.Errorf("the warm-up's end reset %d times, want once", resets)
	}
	if r.LatencyAfterS != 0.2 || r.WholeRun == nil {
		t.Fatalf("latency after %v s, whole run %v: want 0.2 and the whole run's latencies", r.LatencyAfterS, r.WholeRun)
	}
	if r.WholeRun.MaxMs < float64(lateBy.Milliseconds()) {
		t.Errorf("whole run's max %.1f ms: the warm-up's late records are missing", r.WholeRun.MaxMs)
	}
	if r.MaxMs >= float64(lateBy.Milliseconds()) {
		t.Errorf("measured max %.1f ms: a record of the warm-up was counted", r.MaxMs)
	}

	tg = &slowStartTarget{start: time.Now()}
	load = Load{Partitions: 1, MessageSize: 64, Records: 10, Producers: 1, Rate: 1000, LatencyAfter: time.Second}
	if _, err := produce(context.Background(), tg, load); err == nil {
		t.Error("a run of 10 ms with a warm-up of 1 s gave a result")
	}
}
