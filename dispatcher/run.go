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
	var retry <-chan time.Time
	for {
		appended := d.log.Appended()
		caughtUp := true
		if retry == nil {
			pos, wo := d.dispatched.Load(), d.log.WriteOffset()
			limit := min(wo, pos+dispatchChunk)
			if err := d.DispatchTo(limit); err != nil {
				// Usually a full disk under the queues: keep the data, say so, try again.
				d.logger.WithError(err).Error("dispatch failed; retrying in 1s")
				retry = time.After(time.Second)
			}
			caughtUp = limit == wo
			if d.opts.AfterPass != nil {
				d.opts.AfterPass()
			}
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
		case req := <-d.requests:
			req()
		case <-d.stop:
			return
		}
	}
}

// DispatchTo indexes every record that starts before limit. It runs on the
// dispatching goroutine (Do) or when it is not running.
func (d *Dispatcher) DispatchTo(limit int64) error {
	start := d.dispatched.Load()
	pos := start
	n := 0
	d.live.forget()
	defer func() {
		if pos != start {
			d.publish(pos)
		}
		d.wakeTouched()
	}()
	for pos < limit {
		w, readErr := d.readWindow(limit)
		for i := range w {
			d.warm(&w[i])
		}
		for i := range w {
			if err := d.Index(&w[i]); err != nil {
				// Read it again on the retry.
				d.cursor.Reset(w[i].PhysOffset)
				return err
			}
			pos = w[i].End()
			if n++; n%publishEvery == 0 {
				d.publish(pos)
				d.wakeTouched()
			}
		}
		if readErr != nil {
			d.cursor.Reset(pos)
			return fmt.Errorf("dispatcher: read commit log at %d: %w", pos, readErr)
		}
		if len(w) < readAhead {
			break
		}
	}
	return nil
}

// wakeTouched wakes the waiters of partitions that grew.
func (d *Dispatcher) wakeTouched() {
	for _, q := range d.grown.queues {
		d.opts.Notify.Grew(q.ID(), q.MaxOffset())
	}
	d.grown.next()
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
