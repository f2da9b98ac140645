package consumequeue

import "golang.org/x/sys/unix"

// Dirty pages leave the mapping before they are written back.
//
// The dispatcher stores entries through a writable shared mapping. To
// write a dirty page back, the kernel first write-protects it in every
// mapping that holds it (folio_mkclean), and each page-table entry it
// changes there is a TLB flush of its own, an interprocessor interrupt to
// the other cores running the broker's threads (a hypercall on the
// 2-core virtual machine of docs/BENCHMARKS.md). A checkpoint after a
// gigabyte of 1 KiB records at one partition msyncs about 7,800 queue
// pages (32 bytes an entry, one entry a record), and that msync was 30%
// of the broker's CPU samples over the 300,000-record run it fell in
// (perf, smp_call_function_many_cond under page_vma_mkclean_one): about
// 0.25 s of the run's 0.85 s, so roughly 30 µs a page. And the
// dispatcher's appends to the file waited all that time on the read lock
// the msync held (sync now holds no lock of the file through its
// write-back).
//
// MADV_DONTNEED on a shared file mapping drops the page-table entries of
// the range with one TLB flush for all of them; the pages stay in the page
// cache with their data, and the dirty bits of the entries move to the
// pages, so the flush that follows writes the same bytes and finds them
// mapped nowhere. The next access to a page faults it back in: a read
// maps it read-only (about 1.5 µs a page here, bench/unitcost.go), the
// appender's next store into its tail page makes it writable again, once
// a file per flush.

// unmapDirtyMin is the fewest entries stored into a file since its last
// flush for which its page-table entries are dropped: four pages of them.
// Dropping costs one TLB flush for the call and a fault to map the tail
// page again, so a file holding a page or two of new entries costs no
// more flushes when written back in place. Only a flush that syncs file by
// file drops them (at most syncfsThreshold files): past that, syncfs hands
// the write-back to the kernel's flusher threads, and dropping every dirty
// file of 10,000 partitions first raised a 1,500,000-record run's TLB
// flushes from 4,592 to 41,136 and its page faults from 65,370 to 96,362
// (perf stat -e tlb:tlb_flush,page-faults on the broker), where at one
// partition they fell from 15,038 to 86.
const unmapDirtyMin = 4 * 4096 / EntrySize

// unmapDirtyLocked drops the page-table entries of f's mapping ahead of a
// flush when enough entries were stored since the last (unmapDirtyMin).
// Best effort: if the kernel refuses, the flush cleans the pages one by
// one as before. Caller holds mu for writing and f is mapped.
func (f *file) unmapDirtyLocked() {
	if f.stored >= unmapDirtyMin {
		_ = unix.Madvise(f.m, unix.MADV_DONTNEED)
	}
}

// After the write-back, the stores fault again. A flush that left the
// page-table entries (syncfs, past syncfsThreshold dirty files) has the
// kernel write-protect every page it writes back, and the next store into
// each is a fault; one that dropped them has every next access fault.
// Either way the pages at the queue's tail, the one it is filling and
// the ones zeroAheadLocked made ahead of it, fault one by one on the
// dispatcher's goroutine. On the 2-core virtual machine of
// docs/BENCHMARKS.md each such exception costs 10-20 µs, and at 10,000
// partitions a checkpoint was followed by about 1.8 of them a queue
// written (perf -e page-faults: 17,800 in encodeEntry over a
// 1,000,000-record run with one checkpoint; at 1,000 partitions 5,500
// with one and none without). So the
// first store after a flush maps the tail page and the one after it
// again with MADV_POPULATE_WRITE, one system call doing in the kernel what
// the faults did. Only two pages: pages made writable are dirty again,
// and the next flush writes whatever they hold, the zeros ahead too.
const remapPages = 2

// remapTailLocked maps writable again the page of slot and the next
// remapPages-1, within what zeroAheadLocked made (f.zeroed), after a
// flush. It changes no byte. Best effort: a refused call leaves the pages
// to the stores' faults. Caller holds mu for writing and f is mapped.
func (f *file) remapTailLocked(slot int) {
	from := int64(HeaderSize+slot*EntrySize) &^ int64(pageSize-1)
	to := min(f.zeroed, from+remapPages*int64(pageSize), int64(len(f.m)))
	if from < to {
		populateWrite(f.m[from:to])
	}
}
