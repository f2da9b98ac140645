package consumequeue

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/edsrzf/mmap-go"
	"github.com/unilog/unilog/internal/fileops"
)

// ID names one queue.
type ID struct {
	Topic     string
	Partition int32
}

// Queue is the index of one topic/partition. One goroutine appends (and
// truncates); any number read concurrently. A reader sees an entry only
// after its bytes are in the mapping, because Append and AppendRange
// publish MaxOffset with an atomic store after writing them.
type Queue struct {
	s   *Store
	id  ID
	epf int64

	mu     sync.Mutex // serializes the writer side
	files  atomic.Pointer[[]*file]
	min    atomic.Int64
	max    atomic.Int64
	closed atomic.Bool

	// sq is the queue's state in the journal, nil for a queue that had
	// files when it was opened. small is true while sq holds the entries;
	// promotion to files clears it once the files hold them all, which
	// Append asks the promoter for when sq holds promoteAt entries while
	// the small queues hold more than SmallBudget, or Store.promoteMost
	// of it in any case; promoting is set while the request is queued or
	// under way.
	sq        *smallQueue
	small     atomic.Bool
	promoteAt int64
	promoting atomic.Bool

	// tail is the last of files, and next the address the next entry
	// goes to, its slot in the mapping or in the file's tail (tail.go), 0
	// if unknown: Prefetch's hints, read without a lock from the queue's
	// own cache line, where reaching the same slot through files took
	// three dependent misses (the slice's header, its array, the file)
	// before the prefetch could be asked. next goes stale when the mapping
	// moves or goes, or the tail is written; a prefetch of a stale address
	// is harmless.
	tail atomic.Pointer[file]
	next atomic.Uintptr

	// lastTS is the Timestamp of the entry before lastTSAt, which AppendRange
	// raises the next entry's to; it is known only while lastTSAt is
	// MaxOffset (never 0 for a queue holding entries), so a truncation or
	// reset makes the next append read it again. Writer side, under mu.
	lastTS, lastTSAt int64
}

// dir is the queue's directory. It is built when needed, not kept: a
// million queues kept 77 MB of paths, while only file creation and
// removal use it.
func (q *Queue) dir() string { return q.s.queueDir(q.id) }

// ID returns the queue's topic and partition.
func (q *Queue) ID() ID { return q.id }

// MinOffset is the first offset still present.
func (q *Queue) MinOffset() int64 { return q.min.Load() }

// MaxOffset is the offset the next Append must use: one past the last entry.
func (q *Queue) MaxOffset() int64 { return q.max.Load() }

func (q *Queue) snapshot() []*file {
	if p := q.files.Load(); p != nil {
		return *p
	}
	return nil
}

func (q *Queue) setFiles(fs []*file) {
	q.files.Store(&fs)
	var last *file
	if len(fs) > 0 {
		last = fs[len(fs)-1]
	}
	q.tail.Store(last)
	q.next.Store(0)
}

// fileFor returns the file holding offset, or nil. Files are contiguous,
// so this is arithmetic, not a search.
func fileFor(fs []*file, off, epf int64) *file {
	if len(fs) == 0 || off < fs[0].base {
		return nil
	}
	i := (off - fs[0].base) / epf
	if i >= int64(len(fs)) {
		return nil
	}
	return fs[i]
}

// Get returns the entry at offset.
func (q *Queue) Get(offset int64) (Entry, error) {
	if q.closed.Load() {
		return Entry{}, fmt.Errorf("consumequeue: %s/%d: %w", q.id.Topic, q.id.Partition, ErrClosed)
	}
	if offset >= q.max.Load() || offset < q.min.Load() {
		return Entry{}, q.outOfRange(offset)
	}
	if q.small.Load() {
		if e, ok := q.sq.get(offset); ok {
			return e, nil
		}
		if q.small.Load() {
			return Entry{}, q.outOfRange(offset)
		}
		// Promoted since the check, and its entries released: the files
		// hold them.
	}
	f := fileFor(q.snapshot(), offset, q.epf)
	if f == nil {
		return Entry{}, q.outOfRange(offset)
	}
	e, ok, err := f.read(int(offset-f.base), offset)
	switch {
	case errors.Is(err, errRemoved):
		return Entry{}, q.outOfRange(offset)
	case err != nil:
		return Entry{}, err
	case !ok:
		// Truncated or deleted after the range check, or damaged in place.
		if offset >= q.max.Load() || offset < q.min.Load() {
			return Entry{}, q.outOfRange(offset)
		}
		return Entry{}, fmt.Errorf("consumequeue: %s: entry %d: %w", f.path, offset, ErrCorrupt)
	}
	return e, nil
}

func (q *Queue) outOfRange(off int64) error {
	return fmt.Errorf("consumequeue: %s/%d: offset %d outside [%d, %d): %w",
		q.id.Topic, q.id.Partition, off, q.min.Load(), q.max.Load(), ErrOutOfRange)
}

// OffsetForTime returns the first offset whose Timestamp is at least ts,
// or MaxOffset if there is none: the first offset of the first batch whose
// max timestamp is at least ts, as Kafka's time index answers. Timestamps
// never decrease along a queue (AppendRange keeps the largest so far), so
// this is a binary search.
// An entry that cannot be read counts as late enough, so a damaged slot
// makes the answer earlier, never later.
func (q *Queue) OffsetForTime(ts int64) int64 {
	lo, hi := q.min.Load(), q.max.Load()
	for lo < hi {
		mid := lo + (hi-lo)/2
		e, err := q.Get(mid)
		if err == nil && e.Timestamp < ts {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return max(lo, q.min.Load())
}

// Append stores e at offset, which must be MaxOffset. An empty queue
// (MinOffset == MaxOffset) also accepts any larger offset and then starts
// there: a partition first seen after retention starts mid-way.
func (q *Queue) Append(offset int64, e Entry) error { return q.AppendRange(offset, 1, e) }

// AppendRange stores e at the count offsets from offset, as Append would
// one by one, and publishes them at once: a record batch spans several
// offsets that all point at it, and a reader that saw MaxOffset inside a
// batch would serve the whole batch past it (a fetch's high watermark
// would then split a batch, which Kafka's never does). If a store fails
// midway the entries stored before it are published. e.Timestamp is the
// batch's max timestamp; what is stored is the largest along the queue so
// far (Entry.Timestamp).
func (q *Queue) AppendRange(offset, count int64, e Entry) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed.Load() {
		return fmt.Errorf("consumequeue: append %s/%d: %w", q.id.Topic, q.id.Partition, ErrClosed)
	}
	if e.Size <= 0 || e.PhysOffset < 0 || count <= 0 {
		return fmt.Errorf("consumequeue: append %s/%d at %d: %d entries of size %d phys %d: %w",
			q.id.Topic, q.id.Partition, offset, count, e.Size, e.PhysOffset, ErrInvalidEntry)
	}
	lo, hi := q.min.Load(), q.max.Load()
	empty := lo == hi
	if offset != hi && !(empty && offset > hi) {
		return fmt.Errorf("consumequeue: append %s/%d at %d, next is %d: %w",
			q.id.Topic, q.id.Partition, offset, hi, ErrOffsetGap)
	}
	if empty {
		lo = offset
	} else {
		// An entry that cannot be read (damage, a failed re-map) leaves
		// the timestamp unraised: the dispatcher retries a failed append
		// forever, and one bad slot must not stop indexing everywhere.
		if prev, err := q.lastTimestamp(hi); err == nil {
			e.Timestamp = max(e.Timestamp, prev)
		}
	}
	end := offset
	var err error
	for end < offset+count {
		var n int64
		n, err = q.store(end, offset+count-end, e, lo, end == offset && empty)
		end += n
		if err != nil {
			break
		}
	}
	if end > offset {
		if empty {
			q.min.Store(offset)
		}
		q.max.Store(end)
		q.lastTS, q.lastTSAt = e.Timestamp, end
	}
	return err
}

// lastTimestamp is the Timestamp of the entry before hi, the MaxOffset of
// a queue holding entries. Caller holds mu.
func (q *Queue) lastTimestamp(hi int64) (int64, error) {
	if q.lastTSAt != hi {
		e, err := q.Get(hi - 1)
		if err != nil {
			return 0, err
		}
		q.lastTS, q.lastTSAt = e.Timestamp, hi
	}
	return q.lastTS, nil
}

// store writes e at offset and at up to count-1 offsets after it, not yet
// published, and returns how many it wrote: one into a small queue (whose
// promotion point is checked at each), as many as the file of offset
// holds into a queue of files. lo is MinOffset as it will be, empty says
// the queue holds no entry. Caller holds mu.
func (q *Queue) store(offset, count int64, e Entry, lo int64, empty bool) (int64, error) {
	if q.small.Load() {
		over, err := q.s.journal.add(q.sq, offset, e)
		if err != nil {
			return 0, fmt.Errorf("consumequeue: append %s/%d: %w", q.id.Topic, q.id.Partition, err)
		}
		if n := offset - lo; n >= q.promoteAt && (over || n >= q.s.promoteMost(q.promoteAt)) {
			q.s.promoter.request(q)
		}
		return 1, nil
	}
	return q.appendFile(offset, count, e, empty)
}

// appendFile writes e at offset and the offsets after it, up to count or
// the end of offset's file, into the queue's files, and returns how many
// it wrote; empty says the queue holds no entry (so offset may start it
// anew). Caller holds mu.
func (q *Queue) appendFile(offset, count int64, e Entry, empty bool) (int64, error) {
	base := offset - offset%q.epf
	f := q.tail.Load()
	if empty || f == nil || f.base != base {
		var err error
		if f, err = q.startFile(base, offset, empty); err != nil {
			return 0, err
		}
	}
	slot := int(offset - base)
	n, err := f.putRange(slot, offset, int(min(count, base+q.epf-offset)), e)
	q.next.Store(f.nextAddr(slot + n))
	return int64(n), err
}

// startFile returns the file with slot 0 at base for an append at offset
// that the last file does not take, creating it; empty says the queue
// holds no entry. Caller holds mu.
func (q *Queue) startFile(base, offset int64, empty bool) (*file, error) {
	fs := q.snapshot()
	if empty && len(fs) > 0 {
		// The files hold no entries, only the old MaxOffset; the new first
		// file records the new start, exactly as a rebuild would write it.
		q.setFiles(nil)
		if err := q.removeFiles(fs); err != nil {
			return nil, err
		}
		fs = nil
	}
	if n := len(fs); n > 0 && fs[n-1].base == base {
		return fs[n-1], nil
	}
	nf, err := q.createFile(base, offset)
	if err != nil {
		return nil, err
	}
	q.setFiles(append(slices.Clip(fs), nf))
	return nf, nil
}

// createFile makes a new file with its header. A crash before the header
// reaches the disk leaves an all-zero file, which openQueue removes.
func (q *Queue) createFile(base, start int64) (*file, error) {
	path := filepath.Join(q.dir(), fileName(base))
	fd, err := fileops.Open(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, fmt.Errorf("consumequeue: create %s: %w", path, err)
	}
	var hdr [HeaderSize]byte
	encodeHeader(hdr[:], header{Base: base, Start: start, EntriesPerFile: int(q.epf)})
	size := sizeFor(-1, int(q.epf))
	err = allocate(q.s.opts.FS, fd, size)
	if err == nil {
		_, err = fd.WriteAt(hdr[:], 0)
	}
	// A new file is written at once (the caller appends its first entry),
	// so it is mapped through the descriptor at hand: reopening, stat-ing
	// and checking the header just written cost as much again as creating
	// it, which at 50,000 new partitions is seconds.
	f := q.newFile(base)
	var m mmap.MMap
	if err == nil {
		m, err = mmap.MapRegion(fd, int(f.mapLen(size)), mmap.RDWR, 0, 0)
	}
	if cerr := fd.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		if m != nil {
			_ = m.Unmap()
		}
		_ = os.Remove(path)
		return nil, fmt.Errorf("consumequeue: create %s: %w", path, err)
	}
	q.s.dirChanged(q.dir())
	// The header's write made the file's first page, and no entry is in
	// the file yet.
	f.setMapping(m, size, min(size, minFileSize))
	return f, nil
}

func (q *Queue) newFile(base int64) *file {
	return &file{path: filepath.Join(q.dir(), fileName(base)), base: base, epf: int(q.epf), lru: q.s.lru, ops: q.s.opts.FS, room: q.s.room, tails: &q.s.tails}
}

// removeFiles unmaps and deletes files already unlinked from q.files.
func (q *Queue) removeFiles(fs []*file) error {
	var errs []error
	for _, f := range fs {
		if err := f.remove(false); err != nil {
			errs = append(errs, err)
		}
		if err := os.Remove(f.path); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, fmt.Errorf("consumequeue: remove %s: %w", f.path, err))
		}
	}
	if len(fs) > 0 {
		q.s.dirChanged(q.dir())
	}
	return errors.Join(errs...)
}

// openQueue loads an existing (or empty) queue directory. It maps only the
// last file, to find MaxOffset by binary search, and reads the first
// file's header for MinOffset.
func openQueue(s *Store, id ID, dir string, fresh bool) (*Queue, error) {
	q := &Queue{}
	s.initQueue(q, id)
	if fresh {
		return q, nil
	}
	bases, err := ListFiles(dir)
	if err != nil {
		return nil, fmt.Errorf("consumequeue: open: %w", err)
	}
	for _, base := range bases {
		if base%q.epf != 0 {
			return nil, fmt.Errorf("consumequeue: open %s: file %s is not at a multiple of %d entries: %w", dir, fileName(base), q.epf, ErrCorrupt)
		}
	}
	for i := 1; i < len(bases); i++ {
		if bases[i] != bases[i-1]+q.epf {
			return nil, fmt.Errorf("consumequeue: open %s: files %s and %s are not contiguous: %w",
				dir, fileName(bases[i-1]), fileName(bases[i]), ErrCorrupt)
		}
	}
	fs := make([]*file, len(bases))
	for i, b := range bases {
		fs[i] = q.newFile(b)
	}
	if len(fs) == 0 {
		q.setFiles(nil)
		return q, nil
	}
	last := fs[len(fs)-1]
	for {
		err := last.lock()
		if err == nil {
			break
		}
		if !errors.Is(err, ErrCorrupt) || !allZero(last.path) {
			return nil, err
		}
		// Created, but the header never reached the disk (crash or power
		// loss right after creation): it held nothing.
		s.log.WithField("file", last.path).Warn("removing all-zero consume queue file")
		if err := os.Remove(last.path); err != nil {
			return nil, fmt.Errorf("consumequeue: open %s: %w", dir, err)
		}
		s.dirChanged(dir)
		fs = fs[:len(fs)-1]
		if len(fs) == 0 {
			q.setFiles(nil)
			return q, nil
		}
		last = fs[len(fs)-1]
	}
	h := last.header()
	end := last.base + int64(lastWritten(last, int(h.Start-last.base)))
	last.unlock()
	start := h.Start
	if len(fs) > 1 {
		if start, err = readStart(fs[0]); err != nil {
			return nil, err
		}
	}
	q.setFiles(fs)
	q.min.Store(start)
	q.max.Store(end)
	return q, nil
}

// lastWritten finds, by binary search over [from, slots in file), the
// first slot that holds no valid entry. Entries are appended in order, so
// written slots form a prefix; holes left by a crash are TruncateFrom's job.
// Caller holds f.mu with the file mapped.
func lastWritten(f *file, from int) int {
	n := (len(f.m) - HeaderSize) / EntrySize
	return searchSlots(from, n, func(slot int) bool {
		_, ok := decodeEntry(f.slotBytes(slot), f.base+int64(slot))
		return !ok
	})
}

// searchSlots returns the first slot in [lo, hi) for which pred is true
// (hi if none), pred being false then true along the slots.
func searchSlots(lo, hi int, pred func(int) bool) int {
	return lo + sort.Search(hi-lo, func(i int) bool { return pred(lo + i) })
}

// readStart reads a file's header without mapping the file.
func readStart(f *file) (int64, error) {
	fd, err := os.Open(f.path)
	if err != nil {
		return 0, fmt.Errorf("consumequeue: open %s: %w", f.path, err)
	}
	defer fd.Close()
	var b [HeaderSize]byte
	if _, err := fd.ReadAt(b[:], 0); err != nil {
		return 0, fmt.Errorf("consumequeue: read header %s: %w (%w)", f.path, ErrCorrupt, err)
	}
	if err := f.checkHeader(b[:]); err != nil {
		return 0, err
	}
	h, _ := decodeHeader(b[:])
	return h.Start, nil
}

// allZero reports whether the file at path holds nothing but zero bytes.
func allZero(path string) bool {
	b, err := os.ReadFile(path)
	if err != nil {
		return false
	}
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// closeFiles unmaps every file; with sync they are msynced first.
func (q *Queue) closeFiles(sync bool) error {
	var errs []error
	for _, f := range q.snapshot() {
		if err := f.remove(sync); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
