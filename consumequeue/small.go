package consumequeue

import (
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/unilog/unilog/internal/intern"
	"github.com/unilog/unilog/internal/slab"
)

// smallQueue is the in-memory state of a queue that lives in the journal:
// its entries from MinOffset on. The journal's writer changes it under the
// journal's lock, so a compaction sees every queue as its records left it;
// mu only keeps readers from copying an entry while its slot is rewritten,
// and is held for a slice access at a time. It is a Mutex, not an RWMutex:
// readers of one partition rarely meet, while the dispatcher takes it for
// every record it indexes, and an RWMutex's write side costs two more
// atomic operations.
type smallQueue struct {
	qid uint32
	// gone marks a queue a replay saw promoted or removed, which Open
	// passes over in the replay's declared list.
	gone bool

	mu    sync.Mutex
	start int64   // MinOffset; also MaxOffset while ents is empty
	ents  []Entry // offsets start, start+1, ...
	// cuts counts truncations and retention cuts, so that a promotion
	// prepared from a snapshot can tell the entries it copied still hold.
	cuts uint64
	// next is the address add writes the next entry to, or 0 when ents
	// must grow first: a hint for Queue.Prefetch, which may find it stale
	// (the array since grown and freed), harmless for a prefetch.
	next atomic.Uintptr

	// q is the Queue that serves this small queue, allocated with it: at
	// a million partitions a replay made a million of each, and fewer
	// objects are less for the collector to mark (issue 19). Its id is
	// the small queue's too.
	q Queue
}

// newSmallQueue returns the small queue qid of id, from offset start on.
func newSmallQueue(id ID, qid uint32, start int64) *smallQueue {
	sq := &smallQueue{qid: qid, start: start}
	sq.q.id = id
	return sq
}

func (sq *smallQueue) cutCount() uint64 {
	sq.mu.Lock()
	defer sq.mu.Unlock()
	return sq.cuts
}

func (sq *smallQueue) bounds() (lo, hi int64) {
	sq.mu.Lock()
	defer sq.mu.Unlock()
	return sq.start, sq.start + int64(len(sq.ents))
}

// get copies out the entry at off.
func (sq *smallQueue) get(off int64) (Entry, bool) {
	sq.mu.Lock()
	defer sq.mu.Unlock()
	i := off - sq.start
	if i < 0 || i >= int64(len(sq.ents)) {
		return Entry{}, false
	}
	return sq.ents[i], true
}

// getRange appends the entries at offsets [from, to) that it holds, up to
// the first it does not, under one lock: since queues stay small for
// thousands of entries, a fetch's run of them comes from here as often as
// from a file.
func (sq *smallQueue) getRange(dst []Entry, from, to int64) []Entry {
	sq.mu.Lock()
	defer sq.mu.Unlock()
	if from < sq.start {
		return dst
	}
	lo, hi := from-sq.start, min(to-sq.start, int64(len(sq.ents)))
	if lo >= hi {
		return dst
	}
	return append(dst, sq.ents[lo:hi]...)
}

// add appends e at off, which must be the next offset, or any later one
// while the queue is empty (as Queue.Append allows).
func (sq *smallQueue) add(off int64, e Entry) error {
	sq.mu.Lock()
	next := sq.start + int64(len(sq.ents))
	switch {
	case off == next:
	case len(sq.ents) == 0 && off > next:
		sq.start = off
	default:
		sq.mu.Unlock()
		return fmt.Errorf("entry at %d, next is %d: %w", off, next, ErrOffsetGap)
	}
	if sq.ents == nil {
		// Room for two from the start: append would make room for one
		// and then copy it into room for two, and at a million
		// partitions most queues hold one or two entries.
		sq.ents = make([]Entry, 0, 2)
	}
	sq.ents = append(sq.ents, e)
	var at uintptr
	if n := len(sq.ents); n < cap(sq.ents) {
		at = uintptr(unsafe.Pointer(unsafe.SliceData(sq.ents))) + uintptr(n)*unsafe.Sizeof(Entry{})
	}
	sq.next.Store(at)
	sq.mu.Unlock()
	return nil
}

// truncate drops the entries from k on; k lies in [MinOffset, MaxOffset].
func (sq *smallQueue) truncate(k int64) error {
	return sq.cut("truncate", k, func(i int64) {
		clear(sq.ents[i:])
		sq.ents = sq.ents[:i]
	})
}

// setMin drops the entries before k; k lies in [MinOffset, MaxOffset]. The
// survivors move to a new slice so the dropped ones do not pin memory.
func (sq *smallQueue) setMin(k int64) error {
	return sq.cut("set-min", k, func(i int64) {
		sq.ents = append([]Entry(nil), sq.ents[i:]...)
		sq.start = k
	})
}

// cut checks k against [MinOffset, MaxOffset] and runs apply with k's
// index in ents, under the write lock.
func (sq *smallQueue) cut(what string, k int64, apply func(i int64)) error {
	sq.mu.Lock()
	defer sq.mu.Unlock()
	if hi := sq.start + int64(len(sq.ents)); k < sq.start || k > hi {
		return fmt.Errorf("%s at %d outside [%d, %d]: %w", what, k, sq.start, hi, ErrCorrupt)
	}
	apply(k - sq.start)
	sq.cuts++
	return nil
}

// firstFrom is the first offset whose entry has PhysOffset >= phys
// (MaxOffset if none); PhysOffset grows along a queue.
func (sq *smallQueue) firstFrom(phys int64) int64 {
	sq.mu.Lock()
	defer sq.mu.Unlock()
	return sq.start + int64(sort.Search(len(sq.ents), func(i int) bool { return sq.ents[i].PhysOffset >= phys }))
}

// snapshot copies the entries out as FileEntries.
func (sq *smallQueue) snapshot() []FileEntry {
	sq.mu.Lock()
	defer sq.mu.Unlock()
	out := make([]FileEntry, len(sq.ents))
	for i, e := range sq.ents {
		out[i] = FileEntry{Offset: sq.start + int64(i), Entry: e}
	}
	return out
}

// appendState appends the records that recreate sq: its declaration at
// MinOffset and one entry record per entry. Caller holds the journal lock.
func (sq *smallQueue) appendState(b []byte) []byte {
	sq.mu.Lock()
	defer sq.mu.Unlock()
	b = appendDeclare(b, sq.qid, sq.q.id, sq.start)
	for i, e := range sq.ents {
		b = appendEntry(b, sq.qid, sq.start+int64(i), e)
	}
	return b
}

// stateSize is what appendState writes for sq.
func (sq *smallQueue) stateSize() int64 {
	sq.mu.Lock()
	defer sq.mu.Unlock()
	return declareSize(sq.q.id) + int64(len(sq.ents))*entryRecordSize
}

func declareSize(id ID) int64 { return recordHeaderSize + declareBody + int64(len(id.Topic)) }

// replayed is what a journal's records leave: the queues still small.
type replayed struct {
	queues map[uint32]*smallQueue // declared, neither promoted nor removed
	byID   queueIndex             // the same queues' Queues, which Open adopts as its index
	last   *smallQueue            // the queue of the last record: most often the next one's too
	// declared holds every queue declared, in the order of the records
	// and so of memory: the replay carves queues and their first entries
	// from slabs, and Open initializes them in this order instead of the
	// map's, which missed the cache for each of a million queues.
	declared []*smallQueue
	sqs      slab.Slab[smallQueue]
	ents     slab.Slab[Entry]
	maxQID   uint32
	live     int64 // bytes appendState would write for queues
	physEnd  int64 // past the highest PhysOffset of an entry record
	end      int64 // end of the last good record
	stopped  error // why replay stopped before the end of the bytes, or nil
}

// replay applies the records of a journal file read through w, which
// holds declares declarations. It stops at the first record that fails to
// decode or does not apply to the state so far (a queue never declared,
// an offset out of sequence): written records are always valid, so
// whatever stops it is a torn tail or damage, and the caller tells the
// two apart by the synced mark. A failure to read the file is an error.
func replay(w *window, declares int) (*replayed, error) {
	r := &replayed{
		queues:   make(map[uint32]*smallQueue, declares),
		byID:     newQueueIndex(),
		end:      w.pos,
		declared: make([]*smallQueue, 0, declares),
	}
	topics := intern.New()
	for b := w.next(); len(b) > 0; b = w.next() {
		rec, n, err := decodeRecord(b, topics)
		if err == nil {
			err = r.apply(rec)
		}
		if err != nil {
			r.stopped = fmt.Errorf("record at %d: %w", w.pos, err)
			break
		}
		w.skip(n)
		r.end = w.pos
	}
	if w.err != nil {
		return nil, w.err
	}
	return r, nil
}

func (r *replayed) apply(rec journalRecord) error {
	if rec.Type == recDeclare {
		if rec.QID == 0 || rec.QID <= r.maxQID {
			return fmt.Errorf("declare of queue id %d after %d: %w", rec.QID, r.maxQID, ErrCorrupt)
		}
		// A lookup before the insert, so that a refused declaration
		// leaves byID as the records before it did: the replay may stop
		// here at a torn tail, and Open adopts byID. (The insert finds
		// the lookup's group in the cache: measured, one map operation
		// with a repair on refusal was no faster.)
		if r.byID.get(rec.ID) != nil {
			return fmt.Errorf("declare of %s/%d as %d while another queue id holds it: %w", rec.ID.Topic, rec.ID.Partition, rec.QID, ErrCorrupt)
		}
		sq := r.sqs.New()
		sq.qid, sq.start, sq.q.id = rec.QID, rec.Offset, rec.ID
		// Room for two, as add makes: most queues at a million
		// partitions hold one or two entries.
		sq.ents = r.ents.Take(2)
		r.declared = append(r.declared, sq)
		r.byID.put(rec.ID, &sq.q)
		r.queues[rec.QID] = sq
		r.last = sq
		r.maxQID = rec.QID
		r.live += declareSize(rec.ID)
		return nil
	}
	sq := r.last
	if sq == nil || sq.qid != rec.QID {
		sq = r.queues[rec.QID]
		r.last = sq
	}
	if sq == nil {
		return fmt.Errorf("record type %d for undeclared queue id %d: %w", rec.Type, rec.QID, ErrCorrupt)
	}
	if rec.Type == recEntry {
		// The most records by far, so without stateSize's two locks: an
		// entry that applies adds one entry record to the state.
		if err := sq.add(rec.Offset, rec.Entry); err != nil {
			return fmt.Errorf("%w (%w)", ErrCorrupt, err)
		}
		r.live += entryRecordSize
		r.physEnd = max(r.physEnd, rec.Entry.PhysOffset+1)
		return nil
	}
	before := sq.stateSize()
	var err error
	switch rec.Type {
	case recTruncate:
		err = sq.truncate(rec.Offset)
	case recSetMin:
		err = sq.setMin(rec.Offset)
	case recPromoted, recRemoved:
		sq.gone = true
		delete(r.queues, rec.QID)
		r.byID.remove(sq.q.id)
		r.last = nil
		r.live -= before
		return nil
	}
	r.live += sq.stateSize() - before
	return err
}

// topicCounts is the number of queues per topic, which the journal keeps
// from here on: every queue a replay indexes is small.
func (r *replayed) topicCounts() map[string]int {
	counts := make(map[string]int, len(r.byID.topics))
	for topic, t := range r.byID.topics {
		counts[topic] = t.n
	}
	return counts
}

// dropTopic counts one queue of topic less in counts.
func dropTopic(counts map[string]int, topic string) {
	if counts[topic]--; counts[topic] <= 0 {
		delete(counts, topic)
	}
}

// JournalQueue is one queue held in a journal, as ReadJournal finds it.
type JournalQueue struct {
	ID      ID
	Min     int64       // MinOffset
	Max     int64       // MaxOffset
	Entries []FileEntry // in offset order
}
