package dispatcher

import "fmt"

// Truncate cuts the commit log and its consume queues back to the record
// boundary to: the hook of a replication follower whose new leader never
// had the tail (see "Replicas" in the package doc). It runs on the
// dispatching goroutine, so no pass interleaves with it.
func (d *Dispatcher) Truncate(to int64) error {
	return d.onRun(func() error {
		if err := d.queues.TruncateFrom(to); err != nil {
			return fmt.Errorf("dispatcher: truncate consume queues from %d: %w", to, err)
		}
		if err := d.rewind(to); err != nil {
			return err
		}
		if err := d.log.Truncate(to); err != nil {
			return fmt.Errorf("dispatcher: %w", err)
		}
		return nil
	})
}

// Restart empties the commit log and every consume queue and starts the
// log again at at: the hook of a follower whose leader no longer holds
// where this log ends. The queues keep their MaxOffset, and an empty queue
// takes the leader's next offset as its start.
func (d *Dispatcher) Restart(at int64) error {
	return d.onRun(func() error {
		if err := d.queues.TruncateFrom(0); err != nil {
			return fmt.Errorf("dispatcher: empty consume queues: %w", err)
		}
		if err := d.rewind(0); err != nil {
			return err
		}
		if err := d.log.Restart(at); err != nil {
			return fmt.Errorf("dispatcher: %w", err)
		}
		d.cursor.Reset(at)
		d.publish(at)
		return nil
	})
}

// rewind moves the dispatched offset and the cursor back to pos and makes
// the checkpoint say so before the log loses anything: a crash after the
// cut then finds the checkpoint at or below the log's end.
func (d *Dispatcher) rewind(pos int64) error {
	if d.dispatched.Load() > pos {
		d.publish(pos)
	}
	d.cursor.Reset(d.dispatched.Load())
	return d.checkpoint()
}

// onRun runs f on the dispatching goroutine and returns its error.
func (d *Dispatcher) onRun(f func() error) error {
	errc := make(chan error, 1)
	select {
	case d.requests <- func() { errc <- f() }:
	case <-d.done:
		return ErrClosed
	}
	select {
	case err := <-errc:
		return err
	case <-d.done:
		return ErrClosed
	}
}
