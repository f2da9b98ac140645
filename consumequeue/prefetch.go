package consumequeue

import (
	"unsafe"

	"github.com/unilog/unilog/internal/prefetch"
)

// Prefetch loads what AppendRange reads first of q, the queue's bounds and
// its small-queue state, and asks the CPU for the slot of a queue with
// files that its next entry goes to. It returns a value of no meaning that
// the caller must keep somewhere, or the compiler drops the loads. An
// appender about to append to many queues, each one's memory out of the
// cache and its tail page out of the TLB (the dispatcher at 1,000 and
// 10,000 partitions), prefetches the next few first: their misses then
// overlap instead of following one another. It takes no lock and reads
// only what no writer changes after the queue is published (sq and its
// qid) and atomics, so it may run beside any reader or writer.
func (q *Queue) Prefetch() int64 {
	hi := q.max.Load()
	v := q.min.Load() + hi
	if q.sq != nil {
		v += int64(q.sq.qid)
	}
	if !q.small.Load() {
		if fs := q.snapshot(); len(fs) > 0 {
			fs[len(fs)-1].prefetch(hi)
		}
	}
	return v
}

// prefetch asks for the slot of offset if the file holds it and is
// mapped. The mapping may go between loading its address and the
// prefetch (an eviction): a prefetch of memory no longer mapped is
// dropped, and one of memory mapped again since only warms it.
func (f *file) prefetch(offset int64) {
	slot := offset - f.base
	if slot < 0 || slot >= int64(f.epf) {
		return
	}
	off := HeaderSize + slot*EntrySize
	if off+EntrySize > f.size.Load() {
		return
	}
	if p := f.addr.Load(); p != nil {
		prefetch.Write(unsafe.Add(unsafe.Pointer(p), off))
	}
}
