package commitlog

import (
	"time"

	"github.com/sirupsen/logrus"
)

type preallocResult struct {
	seg *segment
	err error
}

// preallocate creates the file after the one being written while the
// writer fills the current one. The writer keeps at most one request
// outstanding and asks for the next file as soon as it enters a new one.
func (l *Log) preallocate() {
	defer l.wg.Done()
	for base := range l.preReq {
		start := time.Now()
		s, err := createSegment(l.opts.Dir, base, l.opts.FileSize, &l.mapped)
		if err != nil {
			l.log.WithError(err).WithField("base", base).Warn("preallocating next file failed; the writer will retry")
		} else {
			l.log.WithFields(logrus.Fields{"file": s.path, "took": time.Since(start)}).Debug("preallocated next file")
		}
		l.preRes <- preallocResult{seg: s, err: err}
		if s != nil {
			l.warm(s)
		}
	}
}

// warm pre-faults the rest of a new file chunk by chunk, so that handing
// the file over waits for one chunk, not for a whole 1 GiB file (populating
// which takes seconds when memory is tight), while the writer usually still
// finds every page present. It stops early on Close.
func (l *Log) warm(s *segment) {
	if !s.tryAcquire() {
		return
	}
	defer s.release()
	for off := min(s.size, prefaultChunk); off < s.size; off += prefaultChunk {
		select {
		case <-l.stop:
			return
		default:
		}
		prefault(s.m[off:min(s.size, off+prefaultChunk)])
	}
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
		s, err := createSegment(l.opts.Dir, l.nextBase(), l.opts.FileSize, &l.mapped)
		if err != nil {
			return err
		}
		l.stats.syncAllocs.Add(1)
		l.ready = append(l.ready, s)
	}
	return nil
}
