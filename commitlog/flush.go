package commitlog

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/sirupsen/logrus"
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
	writes     atomic.Int64
	handedOff  atomic.Int64

	preallocWaits     atomic.Int64
	preallocWaitNanos atomic.Int64
}

// Stats are counters for tests, benchmarks and metrics.
type Stats struct {
	// Flushes counts flush rounds that wrote something.
	Flushes int64
	// DurableWaits counts WaitDurable calls that had to wait for a flush.
	DurableWaits int64
	// Rolls counts moves of the writer to a new file.
	Rolls int64
	// Writes counts the writer's writes of appended batches: fewer than the
	// appends when concurrent ones were written together (group commit).
	Writes int64
	// SyncAllocs counts files the writer had to allocate itself because
	// the preallocator had not made one (or had failed).
	SyncAllocs int64
	// PreallocWaits counts rolls that found the next file still being
	// prepared and waited PreallocWait in total for it.
	PreallocWaits int64
	PreallocWait  time.Duration
	// HandedOff counts records the header cursor took from the writer's
	// hand-off rather than reading them from the mapping.
	HandedOff int64
	// FlushFailed is set once a flush has failed: the log refuses appends
	// (ErrFlushFailed) until a restart recovers it.
	FlushFailed bool
}

// Stats returns a snapshot of the counters.
func (l *Log) Stats() Stats {
	return Stats{
		Flushes:       l.stats.flushes.Load(),
		DurableWaits:  l.stats.waits.Load(),
		Rolls:         l.stats.rolls.Load(),
		Writes:        l.stats.writes.Load(),
		SyncAllocs:    l.stats.syncAllocs.Load(),
		PreallocWaits: l.stats.preallocWaits.Load(),
		PreallocWait:  time.Duration(l.stats.preallocWaitNanos.Load()),
		HandedOff:     l.stats.handedOff.Load(),
		FlushFailed:   l.failure() != nil,
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
		// A failure is sticky and logged once, by fail.
		_ = l.flush()
	}
}

// HoldFlushes keeps FlushSync's appends from starting a flush until the
// matching ReleaseFlushes, for an appender whose one answer takes several
// appends: a produce to 10,000 partitions appends its batches in groups
// (the broker's maxAppendGroup), and a flush started by each group's write
// cost an fdatasync, a parked goroutine and a thread handed over per
// group, about 2.5 fdatasyncs a request. Only the eager start is held:
// WaitDurable still asks for a flush, so a waiter is never held up, and
// the flush at ReleaseFlushes covers every group. Holds nest.
func (l *Log) HoldFlushes() { l.flushHolds.Add(1) }

// ReleaseFlushes ends a HoldFlushes; the last one starts a flush under
// FlushSync if anything appended is not yet durable.
func (l *Log) ReleaseFlushes() {
	if l.flushHolds.Add(-1) == 0 && l.opts.FlushMode == FlushSync && l.flushed.Load() < l.writeOff.Load() {
		l.kickFlush()
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

// flush fdatasyncs every file [FlushedOffset, WriteOffset) spans and wakes the waiters registered before it started. After
// a failure it fails at once without writing: see fail.
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
	err := l.failure()
	if err == nil && to > from {
		for _, s := range l.chain() {
			if s.end() <= from || s.base >= to || !s.tryAcquire() {
				continue
			}
			err = s.sync()
			if err == nil && !s.durable.Load() {
				// fdatasync commits the file's size and allocation; the
				// name needs the directory.
				if err = l.opts.FS.SyncDir(l.opts.Dir); err == nil {
					s.durable.Store(true)
				} else {
					err = fmt.Errorf("commitlog: sync dir %s: %w", l.opts.Dir, err)
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
		} else {
			err = l.fail(err, from, to)
		}
	}
	gen.err = err
	close(gen.done)
	if err == nil {
		l.dropCached(to)
	}
	return err
}

// WaitDurable blocks until FlushedOffset >= end, asking for a flush.
// Callers waiting at the same time share one flush. It returns an error
// wrapping ErrFlushFailed if a flush has failed (now or earlier) before
// end was durable, ErrClosed if the log closes first, and ErrOutOfRange
// for an end beyond WriteOffset.
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
		if err := l.failure(); err != nil {
			return err
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

// fail makes a flush failure (or a fault while storing into a mapping)
// sticky, as nats-server's setWriteErr does. A
// failed fdatasync may have dropped the dirty pages it was writing
// (Linux marks them clean after a writeback error), so a later flush that
// succeeds would move FlushedOffset over records that never reached the
// disk: "fsyncgate". From here on every flush fails without writing, every
// waiter and every append gets the error, FlushedOffset stays where it
// was, and only a restart, whose recovery scan reads back what the disk
// really holds, makes the log writable again. It returns the sticky error.
func (l *Log) fail(cause error, from, to int64) error {
	err := fmt.Errorf("%w: %w", ErrFlushFailed, cause)
	if l.failed.CompareAndSwap(nil, &err) {
		l.log.WithError(cause).WithFields(logrus.Fields{
			"dir": l.opts.Dir, "flushed_offset": from, "write_offset": to,
		}).Error("commit log write failed; refusing appends until a restart recovers the log")
	}
	return *l.failed.Load()
}

// failure returns the sticky flush error, or nil.
func (l *Log) failure() error {
	if p := l.failed.Load(); p != nil {
		return *p
	}
	return nil
}
