package commitlog

import (
	"fmt"
	"os"
	"time"

	"github.com/sirupsen/logrus"
)

type preallocResult struct {
	seg *segment
	err error
}

const (
	// warmWindow is how far ahead of the write position pages are
	// pre-faulted; it bounds the zero pages dirtied ahead of the writer.
	warmWindow = 256 << 20
	// warmChunk is the step of pre-faulting, short enough that a request
	// for the next file is never kept waiting long.
	warmChunk = 4 << 20
	// warmPoll is how often the pre-faulter looks at the write position
	// when it is a whole window ahead.
	warmPoll = 10 * time.Millisecond
)

// warming is a file whose pages are pre-faulted up to off.
type warming struct {
	s   *segment
	off int64
}

// preallocate creates the file after the one being written while the
// writer fills the current one (the writer keeps at most one request
// outstanding and asks for the next file as soon as it enters a new one),
// and pre-faults pages of the current and the next file a window ahead of
// the writer. Pre-faulting a whole 1 GiB file at once takes seconds when
// memory is tight and dirties a gigabyte of zero pages that writeback may
// write before the records do; a sliding window does neither.
func (l *Log) preallocate() {
	defer l.wg.Done()
	var queue []warming
	defer func() {
		for _, w := range queue {
			w.s.release()
		}
	}()
	poll := time.NewTicker(warmPoll)
	defer poll.Stop()
	for {
		// Drop what is done, then pre-fault one chunk if one is due.
		for len(queue) > 0 && queue[0].off >= queue[0].s.size {
			queue[0].s.release()
			queue = queue[1:]
		}
		if len(queue) > 0 {
			w := &queue[0]
			if w.off < l.writeOff.Load()-w.s.base+warmWindow {
				select {
				case base, ok := <-l.preReq:
					if !ok {
						return
					}
					queue = l.create(base, queue)
				case <-l.stop:
					return
				default:
					end := min(w.s.size, w.off+warmChunk)
					w.s.prefault(w.off, end)
					w.off = end
				}
				continue
			}
		}
		select {
		case base, ok := <-l.preReq:
			if !ok {
				return
			}
			queue = l.create(base, queue)
		case <-poll.C:
		case <-l.stop:
			return
		}
	}
}

// create makes the file at base, hands it to the writer and queues it for
// pre-faulting.
func (l *Log) create(base int64, queue []warming) []warming {
	start := time.Now()
	s, err := createSegment(l.opts.fs, l.opts.Dir, base, l.opts.FileSize, &l.mapped)
	if err != nil {
		l.log.WithError(err).WithField("base", base).Warn("preallocating next file failed; the writer will retry")
		l.preRes <- preallocResult{err: err}
		return queue
	}
	l.log.WithFields(logrus.Fields{"file": s.path, "took": time.Since(start)}).Debug("preallocated next file")
	s.tryAcquire() // cannot fail: nobody else has it yet
	l.preRes <- preallocResult{seg: s}
	return append(queue, warming{s: s, off: min(s.size, prefaultChunk)})
}

// requestNext asks the preallocator for the file after the last one the
// writer holds, unless one is ready or being made. wmu must be held.
func (l *Log) requestNext() {
	if l.pending || len(l.ready) > 0 {
		return
	}
	l.preReq <- l.nextBase()
	l.pending = true
}

// nextBase is the base offset of the next file to allocate; wmu held.
func (l *Log) nextBase() int64 {
	if n := len(l.ready); n > 0 {
		return l.ready[n-1].end()
	}
	return l.cur.end()
}

// reserve makes sure n files are allocated after cur, waiting for the
// preallocator or allocating synchronously. On error nothing was written
// and the files allocated so far stay ready for the next attempt. wmu held.
func (l *Log) reserve(n int) error {
	for len(l.ready) < n {
		if l.pending {
			var r preallocResult
			select {
			case r = <-l.preRes:
			default:
				start := time.Now()
				r = <-l.preRes
				l.stats.preallocWaits.Add(1)
				l.stats.preallocWaitNanos.Add(int64(time.Since(start)))
			}
			l.pending = false
			if r.err == nil {
				l.ready = append(l.ready, r.seg)
				continue
			}
		}
		s, err := createSegment(l.opts.fs, l.opts.Dir, l.nextBase(), l.opts.FileSize, &l.mapped)
		if err != nil {
			return err
		}
		l.stats.syncAllocs.Add(1)
		l.ready = append(l.ready, s)
	}
	return nil
}

// dropPending waits for the file being preallocated, if any, and deletes
// it with the files ready ahead: Truncate and Restart move the end of the
// chain, and a file made for the old end must not take a name the new
// chain will use. It returns the files dropped. wmu held.
func (l *Log) dropPending() ([]*segment, error) {
	drop := l.ready
	l.ready = nil
	if l.pending {
		if r := <-l.preRes; r.err == nil {
			drop = append(drop, r.seg)
		}
		l.pending = false
	}
	for _, s := range drop {
		if err := os.Remove(s.path); err != nil {
			return drop, fmt.Errorf("commitlog: remove %s allocated ahead: %w", s.path, err)
		}
	}
	return drop, nil
}
