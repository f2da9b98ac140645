package consumequeue

import (
	"fmt"
	"slices"
)

// TruncateFrom drops every entry from the first one that is invalid or has
// PhysOffset >= phys. After a crash, entries written before the
// dispatcher's checkpoint are intact and point below it, while anything
// after may be torn, missing or stale; both kinds point at or past phys, so
// the predicate "invalid or PhysOffset >= phys" is false then true along the
// queue and a binary search finds the cut. Everything from the cut on is
// zeroed, the file is cut to the size a fresh append of the surviving
// entries would have given it, and later files are deleted.
func (q *Queue) TruncateFrom(phys int64) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed.Load() {
		return fmt.Errorf("consumequeue: truncate %s/%d: %w", q.id.Topic, q.id.Partition, ErrClosed)
	}
	if q.small.Load() {
		// Entries in memory are all valid, so the cut is the first one
		// pointing at or past phys.
		k := q.sq.firstFrom(phys)
		if k >= q.max.Load() {
			return nil
		}
		q.max.Store(k)
		if err := q.s.journal.truncate(q.sq, k); err != nil {
			return fmt.Errorf("consumequeue: truncate %s/%d: %w", q.id.Topic, q.id.Partition, err)
		}
		return nil
	}
	fs := q.snapshot()
	if len(fs) == 0 {
		return nil
	}
	start := q.min.Load()
	cut := func(f *file, slot int) bool {
		e, ok := decodeEntry(f.slotBytes(slot), f.base+int64(slot))
		return !ok || e.PhysOffset >= phys
	}
	// Walk back from the last file: normally the cut is in the last one.
	i := len(fs) - 1
	var k int64
	for ; ; i-- {
		f := fs[i]
		from := 0
		if i == 0 {
			from = int(start - f.base)
		}
		if err := f.lock(); err != nil {
			return err
		}
		n := (len(f.m) - HeaderSize) / EntrySize
		if i > 0 && (n == 0 || cut(f, 0)) {
			f.unlock()
			continue
		}
		k = f.base + int64(searchSlots(from, n, func(s int) bool { return cut(f, s) }))
		f.unlock()
		break
	}
	// Readers must stop asking for the doomed entries before they go.
	if k < q.max.Load() {
		q.max.Store(k)
	}
	keep := i + 1
	if k == fs[i].base && i > 0 {
		keep = i // fs[i] starts at the cut and is not the first file: none of it stays
	} else if err := q.clearFrom(fs[i], k, start); err != nil {
		return err
	}
	q.max.Store(k)
	if keep < len(fs) {
		q.setFiles(slices.Clip(fs[:keep]))
		return q.removeFiles(fs[keep:])
	}
	return nil
}

// clearFrom zeroes f from offset k on and gives it the size of a file whose
// last entry is k-1. Only slots that are not already zero are written, so
// a clean tail is read but never dirtied.
func (q *Queue) clearFrom(f *file, k, start int64) error {
	if err := f.lock(); err != nil {
		return err
	}
	defer f.unlock()
	last := int(k-f.base) - 1
	if k <= start {
		last = -1
	}
	size := min(sizeFor(last, f.epf), int64(len(f.m)))
	from := int64(HeaderSize) + (k-f.base)*EntrySize
	f.cutTailLocked(from)
	if from < size && zero(f.m[from:size]) {
		f.markDirty()
	}
	return f.resizeLocked(size)
}

// zero clears b, writing only the entry-sized chunks that are not zero
// already, and reports whether it wrote anything.
func zero(b []byte) bool {
	wrote := false
	for len(b) > 0 {
		n := min(len(b), EntrySize)
		c := b[:n]
		for _, x := range c {
			if x != 0 {
				clear(c)
				wrote = true
				break
			}
		}
		b = b[n:]
	}
	return wrote
}

// deleteBefore drops the entries whose PhysOffset is below minPhys: whole
// files whose every slot lies before the first surviving entry are
// deleted, and in the first remaining file the header's Start is raised
// and the slots before it are zeroed, which is what a rebuild from the
// retained log writes. The last file always stays: with no entries left it
// keeps MaxOffset across a restart.
func (q *Queue) deleteBefore(minPhys int64) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed.Load() {
		return nil
	}
	lo, hi := q.min.Load(), q.max.Load()
	if lo == hi {
		return nil
	}
	if q.small.Load() {
		k := q.sq.firstFrom(minPhys)
		if k == lo {
			return nil
		}
		q.min.Store(k)
		if err := q.s.journal.setMin(q.sq, k); err != nil {
			return fmt.Errorf("consumequeue: delete %s/%d before %d: %w", q.id.Topic, q.id.Partition, k, err)
		}
		return nil
	}
	below := func(off int64) bool {
		e, err := q.Get(off)
		return err == nil && e.PhysOffset < minPhys
	}
	if !below(lo) {
		return nil
	}
	k := lo + int64(searchSlots(0, int(hi-lo), func(i int) bool { return !below(lo + int64(i)) }))
	q.min.Store(k)

	fs := q.snapshot()
	drop := 0
	for drop < len(fs)-1 && fs[drop].base+q.epf <= k {
		drop++
	}
	first := fs[drop]
	if err := first.lock(); err != nil {
		return err
	}
	old := max(lo, first.base)
	clear(first.m[HeaderSize+int(old-first.base)*EntrySize : HeaderSize+min(int(k-first.base)*EntrySize, len(first.m)-HeaderSize)])
	encodeHeader(first.m[:HeaderSize], header{Base: first.base, Start: k, EntriesPerFile: first.epf})
	first.markDirty()
	var err error
	if k == hi {
		err = first.resizeLocked(sizeFor(-1, first.epf))
	}
	first.unlock()
	if err != nil {
		return err
	}
	if drop > 0 {
		q.setFiles(slices.Clip(fs[drop:]))
		return q.removeFiles(fs[:drop])
	}
	return nil
}
