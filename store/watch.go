package store

import (
	"sync"
	"sync/atomic"

	"github.com/unilog/unilog/consumequeue"
)

// Waiter is one long poll: it watches any number of partitions through a
// single notify channel, so a fetch over N partitions costs one channel and
// one select, not N. A partition registration lasts until that partition
// grows past its offset or until Release, whichever comes first; a fetch
// that returns calls Release, so an idle partition keeps nothing registered
// once nobody polls it.
//
// A Waiter is used by one goroutine at a time.
type Waiter interface {
	// Watch registers the partition of the live incarnation of topic
	// until it holds an offset beyond offset.
	Watch(topic string, partition int32, offset int64)
	// C receives once after any watched partition grew, its topic was
	// deleted or the store closed. Callers re-read the partitions after a
	// signal.
	C() <-chan struct{}
	// Release unregisters every partition and drops a pending signal; the
	// waiter can then watch again.
	Release()
}

// waiter is the Store's Waiter.
type waiter struct {
	s   *Store
	ch  chan struct{} // capacity 1: a pending signal, however many partitions grew
	ids []consumequeue.ID
}

// NewWaiter returns an empty long poll on the dispatcher's partitions.
func (s *Store) NewWaiter() Waiter {
	return &waiter{s: s, ch: make(chan struct{}, 1)}
}

// Watch registers the partition of the live incarnation of topic until its
// MaxOffset exceeds offset. When it already does, when the topic does not
// exist (or the dispatcher is closed) the waiter is signalled at once and
// nothing is registered.
func (wt *waiter) Watch(topic string, partition int32, offset int64) {
	tid, ok := wt.s.liveID(topic)
	if !ok {
		wt.signal()
		return
	}
	id := consumequeue.ID{Topic: QueueName(topic, tid), Partition: partition}
	if wt.s.watches.add(id, offset, wt) {
		wt.ids = append(wt.ids, id)
	}
}

// C receives once after any watched partition grew, its topic was deleted
// or the dispatcher closed. Callers re-read the partitions after a signal.
func (wt *waiter) C() <-chan struct{} { return wt.ch }

// Release unregisters every partition and drops a pending signal; the
// waiter can then watch again.
func (wt *waiter) Release() {
	if len(wt.ids) > 0 {
		wt.s.watches.remove(wt.ids, wt)
		clear(wt.ids)
		wt.ids = wt.ids[:0]
	}
	select {
	case <-wt.ch:
	default:
	}
}

func (wt *waiter) signal() {
	select {
	case wt.ch <- struct{}{}:
	default:
	}
}

// Watching reports whether any partition is watched (dispatcher.Notifier).
func (w *watches) Watching() bool { return w.count.Load() > 0 }

// Grew wakes the waiters of a partition that grew (dispatcher.Notifier).
func (w *watches) Grew(id consumequeue.ID, max int64) { w.wake(id, max) }

// Watchers is the number of partition registrations of all live waiters.
func (s *Store) Watchers() int64 { return s.watches.count.Load() }

// watch is one partition registration of a Waiter.
type watch struct {
	offset int64
	waiter *waiter
}

// watches holds the registrations of every partition. The dispatcher wakes a
// partition under mu after appending to its queue, and add reads MaxOffset
// under mu before registering, so no wake-up can fall between the two.
type watches struct {
	mu     sync.Mutex
	byID   map[consumequeue.ID][]watch
	count  atomic.Int64 // registrations; lets the dispatcher skip the lock when nobody waits
	max    func(consumequeue.ID) int64
	closed bool
}

func newWatches(max func(consumequeue.ID) int64) *watches {
	return &watches{byID: make(map[consumequeue.ID][]watch), max: max}
}

// add registers wt on id and reports true, or signals wt and reports false
// when id already holds an offset beyond offset.
func (w *watches) add(id consumequeue.ID, offset int64, wt *waiter) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	// Counted before MaxOffset is read: the dispatcher appends, then reads
	// count to decide whether to wake, so one of the two sees the other.
	w.count.Add(1)
	if w.closed || w.max(id) > offset {
		w.count.Add(-1)
		wt.signal()
		return false
	}
	w.byID[id] = append(w.byID[id], watch{offset: offset, waiter: wt})
	return true
}

// remove drops wt's registrations on ids; ones already woken are gone.
func (w *watches) remove(ids []consumequeue.ID, wt *waiter) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, id := range ids {
		w.filter(id, func(x watch) bool { return x.waiter == wt })
	}
}

// wake signals id's waiters whose offset is now below max and drops them.
func (w *watches) wake(id consumequeue.ID, max int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.filter(id, func(x watch) bool {
		if max > x.offset {
			x.waiter.signal()
			return true
		}
		return false
	})
}

// filter drops the registrations of id for which drop reports true. The
// caller holds mu.
func (w *watches) filter(id consumequeue.ID, drop func(watch) bool) {
	list, ok := w.byID[id]
	if !ok {
		return
	}
	keep := list[:0]
	for _, x := range list {
		if !drop(x) {
			keep = append(keep, x)
		}
	}
	w.count.Add(-int64(len(list) - len(keep)))
	if len(keep) == 0 {
		delete(w.byID, id)
		return
	}
	clear(list[len(keep):])
	w.byID[id] = keep
}

// wakeTopic releases every waiter of a deleted topic.
func (w *watches) wakeTopic(topic string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for id := range w.byID {
		if id.Topic == topic {
			w.filter(id, func(x watch) bool { x.waiter.signal(); return true })
		}
	}
}

// close releases every waiter; later registrations signal at once.
func (w *watches) close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.closed = true
	for id := range w.byID {
		w.filter(id, func(x watch) bool { x.waiter.signal(); return true })
	}
}
