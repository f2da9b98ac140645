package dispatcher

import (
	"fmt"
	"time"
)

// dispatchChunk bounds one pass so a large backlog does not hold off
// checkpoints, retention and Close.
const dispatchChunk = 64 << 20

// publishEvery bounds how many records are indexed before waiters see them.
const publishEvery = 4096

// closedCh makes the run loop go round again at once while a backlog remains.
var closedCh = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// run is the dispatching goroutine: the only writer of the consume queues
// once Open has returned.
func (d *Dispatcher) run() {
	defer close(d.done)
	ticker := time.NewTicker(d.opts.CheckpointInterval)
	defer ticker.Stop()
	var retry <-chan time.Time
	for {
		appended := d.log.Appended()
		caughtUp := true
		if retry == nil {
			pos, wo := d.dispatched.Load(), d.log.WriteOffset()
			limit := min(wo, pos+dispatchChunk)
			if err := d.dispatchTo(limit); err != nil {
				// Usually a full disk under the queues: keep the data, say so, try again.
				d.logger.WithError(err).Error("dispatch failed; retrying in 1s")
				retry = time.After(time.Second)
			}
			caughtUp = limit == wo
		}
		d.applyRetention()
		if !caughtUp && retry == nil {
			appended = closedCh
		}
		select {
		case <-appended:
		case <-retry:
			retry = nil
		case <-d.kick:
		case <-ticker.C:
			if err := d.checkpoint(); err != nil {
				d.logger.WithError(err).Error("checkpoint failed")
			}
		case req := <-d.requests:
			req()
		case <-d.stop:
			return
		}
	}
}

// dispatchTo indexes every record that starts before limit.
func (d *Dispatcher) dispatchTo(limit int64) error {
	start := d.dispatched.Load()
	pos := start
	n := 0
	defer func() {
		if pos != start {
			d.publish(pos)
		}
		d.wakeTouched()
	}()
	c := d.cursor
	for pos < limit {
		r, err := c.Next()
		if err != nil {
			c.Reset(pos)
			return fmt.Errorf("dispatcher: read commit log at %d: %w", pos, err)
		}
		if r == nil {
			break
		}
		if err := d.index(r); err != nil {
			// Read it again on the retry.
			c.Reset(pos)
			return err
		}
		pos = c.Offset()
		if n++; n%publishEvery == 0 {
			d.publish(pos)
			d.wakeTouched()
		}
	}
	return nil
}

// wakeTouched wakes the waiters of partitions that grew.
func (d *Dispatcher) wakeTouched() {
	for id, max := range d.touched {
		d.watches.wake(id, max)
		delete(d.touched, id)
	}
}

// storeTimeAt is the store timestamp of the first record at or after pos.
func (d *Dispatcher) storeTimeAt(pos int64) (int64, bool) {
	v, err := d.log.Read(pos)
	if err != nil {
		return 0, false
	}
	defer v.Release()
	return v.Record().StoreTimestamp, true
}

// applyRetention drops consume-queue files that only index deleted log files.
func (d *Dispatcher) applyRetention() {
	newMin := d.retention.Swap(-1)
	if newMin < 0 {
		return
	}
	if err := d.queues.DeleteBefore(newMin); err != nil {
		d.logger.WithError(err).WithField("min", newMin).Error("deleting consume-queue files behind retention failed")
	}
}

// checkpoint flushes the queues and records how far they are complete.
func (d *Dispatcher) checkpoint() error {
	dispatched := d.dispatched.Load()
	flushed := d.log.FlushedOffset()
	cp := Checkpoint{CommitLogFlushed: flushed, Dispatched: min(dispatched, flushed)}
	d.cpMu.Lock()
	prev := d.cp
	d.cpMu.Unlock()
	if prev.CommitLogFlushed == cp.CommitLogFlushed && prev.Dispatched == cp.Dispatched && !prev.Time.IsZero() {
		return nil
	}
	if err := d.queues.Flush(); err != nil {
		return fmt.Errorf("dispatcher: flush consume queues: %w", err)
	}
	cp.Time = time.Now().UTC()
	if err := writeCheckpoint(d.opts.Dir, cp); err != nil {
		return err
	}
	d.cpMu.Lock()
	d.cp = cp
	d.cpMu.Unlock()
	return nil
}
