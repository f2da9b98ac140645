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

// preallocate creates the file after the one being written while the
// writer fills the current one (the writer keeps at most one request
// outstanding and asks for the next file as soon as it enters a new one),
// so a roll only swaps a pointer.
func (l *Log) preallocate() {
	defer l.wg.Done()
	for {
		select {
		case base, ok := <-l.preReq:
			if !ok {
				return
			}
			l.create(base)
		case <-l.stop:
			return
		}
	}
}

// create makes the file at base and hands it to the writer.
func (l *Log) create(base int64) {
	start := time.Now()
	s, err := createSegment(l.opts.FS, l.opts.Dir, base, l.opts.FileSize, &l.mapped)
	if err != nil {
		l.log.WithError(err).WithField("base", base).Warn("preallocating next file failed; the writer will retry")
		l.preRes <- preallocResult{err: err}
		return
	}
	l.log.WithFields(logrus.Fields{"file": s.path, "took": time.Since(start)}).Debug("preallocated next file")
	l.preRes <- preallocResult{seg: s}
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
		s, err := createSegment(l.opts.FS, l.opts.Dir, l.nextBase(), l.opts.FileSize, &l.mapped)
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
