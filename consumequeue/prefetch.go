package consumequeue

import (
	"unsafe"

	"github.com/unilog/unilog/internal/prefetch"
)

// Prefetch loads what AppendRange reads first of q, the queue's bounds
// and, for a small queue, its journal state, and asks the CPU for the
// slot of its entries' array the next entry goes to (smallQueue.next:
// at 10,000 partitions that store missed the cache for every record and
// the small queue's unlock waited for it); for a queue with files it asks
// for its last file and for the slot its next entry goes to (tail and
// next): in the file's mapping, or in the buffer of the file's tail when
// it is cold (tail.go). It returns a value of no meaning that
// the caller must keep somewhere, or the compiler drops the loads. An
// appender about to append to many queues, each one's memory out of the
// cache and its tail page out of the TLB (the dispatcher at 1,000 and
// 10,000 partitions), prefetches the next few first: their misses then
// overlap instead of following one another. The one load that waits is of
// the queue itself; the file and the slot are prefetches, which never wait
// or fault. It takes no lock and reads only what no writer changes after
// the queue is published (sq and its qid) and atomics, so it may run
// beside any reader or writer.
func (q *Queue) Prefetch() int64 {
	hi := q.max.Load()
	v := q.min.Load() + hi
	if q.small.Load() {
		if next := q.sq.next.Load(); next != 0 {
			prefetch.Write(next)
		}
		return v + int64(q.sq.qid)
	}
	if f := q.tail.Load(); f != nil {
		prefetch.Write(uintptr(unsafe.Pointer(f)))
	}
	if next := q.next.Load(); next != 0 {
		prefetch.Write(next)
	}
	return v
}

// PrefetchBounds asks the CPU for the queue's bounds (MinOffset,
// MaxOffset) without waiting for them: a reader about to read the bounds
// of many queues asks for all of them first, so that their misses overlap.
// Both lines where the allocator puts the two across a line's end (one
// queue in four).
func (q *Queue) PrefetchBounds() {
	prefetch.ReadRange(uintptr(unsafe.Pointer(&q.min)), unsafe.Offsetof(q.max)+unsafe.Sizeof(q.max)-unsafe.Offsetof(q.min))
}

// nextAddr is where the entry of slot, the one after the file's last,
// goes: into the tail's buffer while the file has a tail (tail.go), else
// slotAddr. Without a lock, so a hint that may be stale.
func (f *file) nextAddr(slot int) uintptr {
	if a := f.tailNext.Load(); a != 0 {
		return a
	}
	return f.slotAddr(slot)
}

// slotAddr is the address of slot in the file's mapping, or 0 if the file
// is not mapped or its mapping does not hold the slot.
func (f *file) slotAddr(slot int) uintptr {
	off := int64(HeaderSize + slot*EntrySize)
	p := f.addr.Load()
	if p == nil || off+EntrySize > f.size.Load() {
		return 0
	}
	return uintptr(unsafe.Pointer(p)) + uintptr(off)
}
