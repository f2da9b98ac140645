package store

import (
	"fmt"
	"time"

	"github.com/unilog/unilog/internal/clock"
)

const (
	// DefaultCheckpointInterval is long because each checkpoint costs the
	// appender a remap of the tail pages of each queue it wrote since the
	// last one (see "Checkpoints" in the package doc), and a crash costs
	// only a replay of what was dispatched after it.
	DefaultCheckpointInterval = 10 * time.Second
	// DefaultCheckpointBytes bounds that replay to about a second or two of
	// recovery scanning at any produce rate.
	DefaultCheckpointBytes = 1 << 30
)

// checkpointer takes a checkpoint every CheckpointInterval, or sooner when
// the dispatcher has moved CheckpointBytes past the last one, on its own
// goroutine, as RocketMQ flushes its consume queues on their own thread:
// making hundreds of queue files durable (or a whole-filesystem syncfs)
// takes milliseconds to tens of milliseconds, and on the dispatching
// goroutine it would hold back every WaitDispatched, so every produce.
// It runs concurrently with dispatching; see checkpoint for why that keeps
// the checkpoint's promise. Open arms the first round (armCheckpoint).
func (s *Store) checkpointer(t clock.Timer, due <-chan struct{}) {
	defer close(s.cpDone)
	for {
		select {
		case <-s.cpStop:
			t.Stop()
			return
		case <-due:
		case <-s.cpKick:
			t.Stop()
		}
		// The next round is armed before this one runs, so a test that
		// sees the checkpoint taken can move its clock to the next.
		t, due = s.armCheckpoint()
		if err := s.checkpoint(); err != nil {
			s.logger.WithError(err).Error("checkpoint failed")
		}
	}
}

// armCheckpoint starts the timer of the next checkpoint. Each round has a
// channel of its own: a timer that fires while a kick stops it cannot cut
// the next round short.
func (s *Store) armCheckpoint() (clock.Timer, <-chan struct{}) {
	due := make(chan struct{}, 1)
	return s.opts.Clock.AfterFunc(s.opts.CheckpointInterval, func() { due <- struct{}{} }), due
}

// kickCheckpoint asks for an early checkpoint once CheckpointBytes have
// been dispatched since the last one. It runs on the dispatching goroutine
// after each pass and never blocks it.
func (s *Store) kickCheckpoint() {
	if s.opts.CheckpointBytes <= 0 || s.d.Dispatched()-s.cpFrom.Load() < s.opts.CheckpointBytes {
		return
	}
	select {
	case s.cpKick <- struct{}{}:
	default:
	}
}

// checkpoint flushes the queues and records how far they are complete. It
// may run while the dispatcher appends: it loads the dispatched offset D
// first, and every entry for a record before D was written into its
// queue file (and the file put on the dirty list) before D was published,
// so the Flush that follows makes each of them durable; entries written
// meanwhile are either covered too or stay dirty for the next round.
// Dispatched = min(D, F) with F the log's flushed offset loaded with D, so
// it never claims an entry or a record that is not durable.
// CommitLogFlushed, the flushed mark recovery trusts, is loaded again just
// before the file is written: the freshest offset known to be durable.
func (s *Store) checkpoint() error {
	s.cpRun.Lock()
	defer s.cpRun.Unlock()
	loaded := s.d.Dispatched()
	// Counted from D, not from the Dispatched written: a log flush that
	// lags must not make every pass ask for another checkpoint.
	s.cpFrom.Store(loaded)
	dispatched := min(loaded, s.log.FlushedOffset())
	s.cpMu.Lock()
	prev := s.cp
	s.cpMu.Unlock()
	if prev.Dispatched == dispatched && prev.CommitLogFlushed == s.log.FlushedOffset() && !prev.Time.IsZero() {
		return nil
	}
	if err := s.queues.Flush(); err != nil {
		return fmt.Errorf("store: flush consume queues: %w", err)
	}
	cp := Checkpoint{CommitLogFlushed: s.log.FlushedOffset(), Dispatched: dispatched, Time: time.Now().UTC()}
	if err := writeCheckpoint(s.opts.FS, s.opts.Dir, cp); err != nil {
		return err
	}
	s.cpMu.Lock()
	s.cp = cp
	s.cpMu.Unlock()
	return nil
}
