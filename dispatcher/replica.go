package dispatcher

import (
	"context"
	"fmt"
	"time"
)

// Truncate cuts the commit log and its consume queues back to the record
// boundary to: the hook of a replication follower whose new leader never
// had the tail (see "Replicas" in the package doc).
func (d *Dispatcher) Truncate(to int64) error {
	return d.onRun(context.Background(), "truncate", func() error {
		return d.cut(to, func() error { return d.log.Truncate(to) })
	})
}

// Restart empties the commit log and every consume queue and starts the
// log again at at: the hook of a follower whose leader no longer holds
// where this log ends. The queues keep their MaxOffset, and an empty queue
// takes the leader's next offset as its start.
func (d *Dispatcher) Restart(at int64) error {
	return d.onRun(context.Background(), "restart", func() error {
		if err := d.cut(0, func() error { return d.log.Restart(at) }); err != nil {
			return err
		}
		d.cursor.Reset(at)
		d.publish(at)
		return nil
	})
}

// cut drops the queue entries at or past from, moves the dispatched offset
// and the cursor back, and writes a checkpoint claiming nothing past from
// before cutLog changes the log, so a crash at any step recovers a
// consistent directory. It runs on the dispatching goroutine and holds off
// the checkpointer, whose marks could otherwise claim the cut tail.
func (d *Dispatcher) cut(from int64, cutLog func() error) error {
	d.cpRun.Lock()
	defer d.cpRun.Unlock()
	if err := d.queues.TruncateFrom(from); err != nil {
		return fmt.Errorf("dispatcher: truncate consume queues from %d: %w", from, err)
	}
	if d.dispatched.Load() > from {
		d.publish(from)
	}
	if err := d.queues.Flush(); err != nil {
		return fmt.Errorf("dispatcher: flush consume queues: %w", err)
	}
	cp := Checkpoint{
		CommitLogFlushed: min(d.log.FlushedOffset(), from),
		Dispatched:       min(d.dispatched.Load(), from),
		Time:             time.Now().UTC(),
	}
	if err := writeCheckpoint(d.opts.Dir, cp); err != nil {
		return err
	}
	d.cpMu.Lock()
	d.cp = cp
	d.cpMu.Unlock()
	if err := cutLog(); err != nil {
		return fmt.Errorf("dispatcher: %w", err)
	}
	d.cursor.Reset(d.dispatched.Load())
	return nil
}

// onRun runs f on the dispatching goroutine and returns its error; ctx
// bounds the wait (a run already queued still completes).
func (d *Dispatcher) onRun(ctx context.Context, what string, f func() error) error {
	errc := make(chan error, 1)
	select {
	case d.requests <- func() { errc <- f() }:
	case <-d.done:
		return ErrClosed
	case <-ctx.Done():
		return fmt.Errorf("dispatcher: %s: not started: %w", what, ctx.Err())
	}
	select {
	case err := <-errc:
		return err
	case <-d.done:
		return ErrClosed
	case <-ctx.Done():
		return fmt.Errorf("dispatcher: %s: still running: %w", what, ctx.Err())
	}
}
