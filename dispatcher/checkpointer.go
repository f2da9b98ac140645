package dispatcher

import (
	"fmt"
	"time"
)

// checkpointer takes a checkpoint every CheckpointInterval on its own
// goroutine, as RocketMQ flushes its consume queues on their own thread:
// making hundreds of queue files durable (or a whole-filesystem syncfs)
// takes milliseconds to tens of milliseconds, and on the dispatching
// goroutine it would hold back every WaitDispatched, so every produce.
// It runs concurrently with dispatching; see checkpoint for why that keeps
// the checkpoint's promise.
func (d *Dispatcher) checkpointer() {
	defer close(d.cpDone)
	t := time.NewTicker(d.opts.CheckpointInterval)
	defer t.Stop()
	for {
		select {
		case <-d.stop:
			return
		case <-t.C:
		}
		if err := d.checkpoint(); err != nil {
			d.logger.WithError(err).Error("checkpoint failed")
		}
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
func (d *Dispatcher) checkpoint() error {
	d.cpRun.Lock()
	defer d.cpRun.Unlock()
	dispatched := min(d.dispatched.Load(), d.log.FlushedOffset())
	d.cpMu.Lock()
	prev := d.cp
	d.cpMu.Unlock()
	if prev.Dispatched == dispatched && prev.CommitLogFlushed == d.log.FlushedOffset() && !prev.Time.IsZero() {
		return nil
	}
	if err := d.queues.Flush(); err != nil {
		return fmt.Errorf("dispatcher: flush consume queues: %w", err)
	}
	cp := Checkpoint{CommitLogFlushed: d.log.FlushedOffset(), Dispatched: dispatched, Time: time.Now().UTC()}
	if err := writeCheckpoint(d.opts.Dir, cp); err != nil {
		return err
	}
	d.cpMu.Lock()
	d.cp = cp
	d.cpMu.Unlock()
	return nil
}
