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
