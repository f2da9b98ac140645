package commitlog

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"
)

// flushGen is one generation of flush waiters: done is closed when the
// flush that started after they registered has finished, with its error.
type flushGen struct {
	done chan struct{}
	err  error
}

type counters struct {
	flushes    atomic.Int64
	waits      atomic.Int64
	rolls      atomic.Int64
	syncAllocs atomic.Int64

	preallocWaits     atomic.Int64
	preallocWaitNanos atomic.Int64
}

// Stats are counters for tests, benchmarks and metrics.
type Stats struct {
	// Flushes counts msync rounds that wrote something.
	Flushes int64
	// DurableWaits counts WaitDurable calls that had to wait for a flush.
	DurableWaits int64
	// Rolls counts moves of the writer to a new file.
	Rolls int64
	// SyncAllocs counts files the writer had to allocate itself because
	// the preallocator had not made one (or had failed).
	SyncAllocs int64
	// PreallocWaits counts rolls that found the next file still being
	// prepared and waited PreallocWait in total for it.
	PreallocWaits int64
	PreallocWait  time.Duration
}

// Stats returns a snapshot of the counters.
func (l *Log) Stats() Stats {
	return Stats{
		Flushes:       l.stats.flushes.Load(),
		DurableWaits:  l.stats.waits.Load(),
		Rolls:         l.stats.rolls.Load(),
		SyncAllocs:    l.stats.syncAllocs.Load(),
		PreallocWaits: l.stats.preallocWaits.Load(),
		PreallocWait:  time.Duration(l.stats.preallocWaitNanos.Load()),
	}
}

// flusher runs the periodic flush (both modes) and the flushes kicked by
// appends in sync mode and by WaitDurable. Kicks arriving while a flush
// runs collapse into one more flush covering all of them: group commit.
func (l *Log) flusher() {
	defer l.wg.Done()
	t := time.NewTicker(l.opts.FlushInterval)
	defer t.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-t.C:
		case <-l.flushKick:
		}
		if err := l.flush(); err != nil {
			l.log.WithError(err).Error("flush failed")
		}
	}
}

func (l *Log) kickFlush() {
	select {
	case l.flushKick <- struct{}{}:
	default:
	}
}

// Flush makes everything appended so far durable.
func (l *Log) Flush() error {
	if l.closed.Load() {
		return ErrClosed
	}
	return l.flush()
}

// flush msyncs the dirty page range [FlushedOffset, WriteOffset) of every
// file it spans and wakes the waiters registered before it started.
func (l *Log) flush() error {
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	l.genMu.Lock()
	gen := l.gen
	if gen.err == ErrClosed {
		// Close already flushed and released the files.
		l.genMu.Unlock()
		return ErrClosed
	}
	l.gen = &flushGen{done: make(chan struct{})}
	l.genMu.Unlock()

	from, to := l.flushed.Load(), l.writeOff.Load()
	var err error
	if to > from {
		for _, s := range l.chain() {
			if s.end() <= from || s.base >= to || !s.tryAcquire() {
				continue
			}
			err = s.msync(max(from, s.base)-s.base, min(to, s.end())-s.base)
			if err == nil && !s.durable.Load() {
				// msync is an fdatasync of the range, which commits the
				// file's size and allocation; the name needs the directory.
				if err = syncDir(l.opts.Dir); err == nil {
					s.durable.Store(true)
				}
			}
			s.release()
			if err != nil {
				break
			}
		}
		if err == nil {
			l.flushed.Store(to)
			l.recordFlushed(to)
			l.stats.flushes.Add(1)
		}
	}
	gen.err = err
	close(gen.done)
	return err
}

// WaitDurable blocks until FlushedOffset >= end, asking for a flush.
// Callers waiting at the same time share one flush. It returns the flush's
// error if the flush meant to cover end failed, ErrClosed if the log closes
// first, and ErrOutOfRange for an end beyond WriteOffset.
func (l *Log) WaitDurable(ctx context.Context, end int64) error {
	waited := false
	for {
		l.genMu.Lock()
		gen := l.gen
		l.genMu.Unlock()
		if l.flushed.Load() >= end {
			return nil
		}
		if l.closed.Load() {
			return ErrClosed
		}
		if w := l.writeOff.Load(); end > w {
			return fmt.Errorf("commitlog: wait durable %d beyond write offset %d: %w", end, w, ErrOutOfRange)
		}
		if !waited {
			waited = true
			l.stats.waits.Add(1)
		}
		l.kickFlush()
		select {
		case <-gen.done:
		case <-ctx.Done():
			return ctx.Err()
		}
		if l.flushed.Load() >= end {
			return nil
		}
		if gen.err != nil && !errors.Is(gen.err, ErrClosed) {
			return gen.err
		}
	}
}
