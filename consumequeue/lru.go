package consumequeue

import (
	"sync"
	"sync/atomic"

	"github.com/sirupsen/logrus"
)

// lruElem is a node of the intrusive recency list.
type lruElem struct {
	f          *file
	prev, next *lruElem
}

// lru bounds the number of mapped files. The list holds mapped files, most
// recently used first; mapping a file beyond max unmaps the tail.
//
// A use only moves a file to the front if at least max/2 other moves
// happened since its own last move (memcached's lazy bump): a file that
// recent cannot be near the tail, so the hot path of a reader re-reading a
// busy partition is two atomic loads instead of a global lock.
type lru struct {
	log   logrus.FieldLogger
	mu    sync.Mutex
	root  lruElem // sentinel; root.next is the most recent
	n     int
	max   int
	clock atomic.Uint64 // counts moves to the front

	mapped atomic.Int64 // files mapped right now, listed or not

	dirtyMu sync.Mutex
	dirty   []*file // files written since the last Flush
}

func newLRU(max int, log logrus.FieldLogger) *lru {
	l := &lru{max: max, log: log}
	l.root.next, l.root.prev = &l.root, &l.root
	return l
}

func (l *lru) unlink(e *lruElem) {
	e.prev.next, e.next.prev = e.next, e.prev
	e.prev, e.next = nil, nil
	l.n--
}

func (l *lru) pushFront(e *lruElem) {
	e.prev, e.next = &l.root, l.root.next
	l.root.next.prev = e
	l.root.next = e
	l.n++
}

// use records that f was just read or written. It must be called without
// f.mu held (eviction takes f.mu of other files, and use takes f.mu
// of f).
func (l *lru) use(f *file) {
	if f.listed.Load() && l.clock.Load()-f.lastMove.Load() < uint64(l.max/2) {
		return
	}
	var victims []*file
	l.mu.Lock()
	switch {
	case f.elem != nil:
		l.unlink(f.elem)
		l.pushFront(f.elem)
	default:
		// Evicted or removed since the caller read it: nothing to track.
		f.mu.RLock()
		mapped := f.m != nil && !f.removed
		f.mu.RUnlock()
		if !mapped {
			l.mu.Unlock()
			return
		}
		f.elem = &lruElem{f: f}
		l.pushFront(f.elem)
		f.listed.Store(true)
		for l.n > l.max {
			v := l.root.prev.f
			l.unlink(v.elem)
			v.elem = nil
			v.listed.Store(false)
			victims = append(victims, v)
		}
	}
	f.lastMove.Store(l.clock.Add(1))
	l.mu.Unlock()

	for _, v := range victims {
		v.evict()
	}
}

// evict unmaps a file that use took off the list, unless a reader put it
// back in the meantime. It does not msync: munmap of a shared mapping keeps
// the written pages in the page cache (they survive kill -9 and reach the
// disk by writeback), and a written file stays on the dirty list, so the
// next Flush fdatasyncs it. A synchronous msync here would put a disk flush
// on every LRU miss of the appender.
func (f *file) evict() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.listed.Load() || f.m == nil {
		return
	}
	if err := f.unmapLocked(false); err != nil {
		f.lru.log.WithError(err).Warn("evicting consume queue file")
	}
}

// remove takes f off the list for good (the file is being unmapped by its
// owner).
func (l *lru) remove(f *file) {
	l.mu.Lock()
	if f.elem != nil {
		l.unlink(f.elem)
		f.elem = nil
		f.listed.Store(false)
	}
	l.mu.Unlock()
}

func (l *lru) addDirty(f *file) {
	l.dirtyMu.Lock()
	l.dirty = append(l.dirty, f)
	l.dirtyMu.Unlock()
}

func (l *lru) takeDirty() []*file {
	l.dirtyMu.Lock()
	d := l.dirty
	l.dirty = nil
	l.dirtyMu.Unlock()
	return d
}
