package dispatcher

import (
	"sync"
	"sync/atomic"

	"github.com/unilog/unilog/consumequeue"
)

// watcher is one Watch call waiting for a partition to grow past offset.
type watcher struct {
	offset int64
	ch     chan struct{}
}

// watches holds the waiters of every partition. The dispatcher wakes a
// partition under mu after appending to its queue, and Watch reads MaxOffset
// under mu before registering, so no wake-up can fall between the two.
type watches struct {
	mu     sync.Mutex
	byID   map[consumequeue.ID][]watcher
	count  atomic.Int64 // registered waiters; lets the dispatcher skip the lock when nobody waits
	closed bool
}

func newWatches() *watches {
	return &watches{byID: make(map[consumequeue.ID][]watcher)}
}

var closedCh = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// add returns a channel that is closed once max() > offset.
func (w *watches) add(id consumequeue.ID, offset int64, max func() int64) <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed || max() > offset {
		return closedCh
	}
	ch := make(chan struct{})
	w.byID[id] = append(w.byID[id], watcher{offset: offset, ch: ch})
	w.count.Add(1)
	return ch
}

// wake closes the channels of id's waiters whose offset is now below max.
func (w *watches) wake(id consumequeue.ID, max int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	list := w.byID[id]
	keep := list[:0]
	for _, x := range list {
		if max > x.offset {
			close(x.ch)
			w.count.Add(-1)
		} else {
			keep = append(keep, x)
		}
	}
	if len(keep) == 0 {
		delete(w.byID, id)
	} else {
		clear(list[len(keep):])
		w.byID[id] = keep
	}
}

// wakeTopic releases every waiter of a deleted topic.
func (w *watches) wakeTopic(topic string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for id, list := range w.byID {
		if id.Topic != topic {
			continue
		}
		for _, x := range list {
			close(x.ch)
		}
		w.count.Add(-int64(len(list)))
		delete(w.byID, id)
	}
}

// close releases every waiter; later Watch calls return at once.
func (w *watches) close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.closed = true
	for id, list := range w.byID {
		for _, x := range list {
			close(x.ch)
		}
		delete(w.byID, id)
	}
	w.count.Store(0)
}
