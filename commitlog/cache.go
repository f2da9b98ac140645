package commitlog

import (
	"os"

	"golang.org/x/sys/unix"
)

// The page cache behind the writer.
//
// Every byte of the log is written once and, in the common case, read
// within seconds of the write: by the dispatcher right behind the writer
// and by consumers at the tail. Left alone, the kernel keeps every written
// page cached until memory runs short, so a log written at disk speed
// grows the page cache at disk speed, and every page it writes is a page
// the kernel must find first. Measured on the 2-core virtual machine of
// docs/BENCHMARKS.md (ext4, 1 GiB fallocated files, fdatasync every
// 100 ms), once the cache had grown by about 3.5 GiB the writer's pwrites
// became CPU-bound at 200-300 MB/s, 44-73% of the samples in the kernel's
// copy into new page-cache pages, while the disk (1.3-1.5 GB/s O_DIRECT)
// idled; freed memory on that machine goes back to the host (virtio-balloon
// free page reporting), and on bare metal the same growth ends in reclaim
// in the writer once free memory is gone. Dropping the flushed pages more
// than a window behind the flushed offset lets the kernel reuse them for
// the next writes and kept the same writer at 1.7-1.9 GB/s over 8 GiB.
//
// The window is 256 MiB by default. On the same kind of machine (a
// Firecracker VM reporting freed memory to its host, module parameter
// max_waiting_mib=1024, and paging out cold unmapped file pages with
// DAMON), a broker given four `bench produce` runs of 300,000 1 KiB
// records into one partition, then a read-back of them, used for the
// produce 125-137 CPU ticks with windows of 128 and 256 MiB, 153-157
// with 512 MiB and 208-224 with 1 GiB (windows interleaved, two rounds
// with each). With 1 GiB the copy into new page-cache pages was 6% of
// the broker's samples over the first run and 51% over the fourth
// (perf, two brokers): most likely, past about 600 MiB written, new
// pages were memory the host had to fault in. The read-back, mostly
// from the disk, cost 66-72 ticks against 93-96 from a 1 GiB window
// (10,000 partitions: produce 606-639 against 724-777, read 350-386
// against 588-679). A consumer more than the window behind reads from
// the disk; where the host does not take memory back, a larger
// CacheWindow keeps such readers in the cache.
//
// So after each flush the log drops from the page cache the pages of the
// bytes more than CacheWindow before the new FlushedOffset (Options); a
// reader of older records (a consumer catching up, replication of a far
// follower, retention) reads them back from the disk, as it would after
// the kernel had evicted them. The pages are first unmapped from the
// readers' mapping (MADV_DONTNEED: the kernel does not drop a page that
// is mapped) and then dropped (POSIX_FADV_DONTNEED). They are clean:
// fdatasync wrote them, so nothing is lost or written, and a reader that
// touches one meanwhile only faults it back in. Durability is untouched:
// FlushedOffset still moves only with fdatasync.

// dropStep is the least a drop covers, so that sync mode's back-to-back
// flushes do not each pay two more system calls.
const dropStep = 8 << 20

// dropCached drops from the page cache the pages before flushed -
// CacheWindow that an earlier call has not dropped; flushMu held. Best
// effort: a failed advice leaves the pages to the kernel.
func (l *Log) dropCached(flushed int64) {
	if l.opts.CacheWindow < 0 {
		return
	}
	to := flushed - l.opts.CacheWindow
	if to-l.droppedTo < dropStep {
		return
	}
	segs := l.chain()
	to = chunkFloor(segs, to)
	for _, s := range segs {
		if s.end() <= l.droppedTo || s.base >= to || !s.tryAcquire() {
			continue
		}
		s.dropCache(max(l.droppedTo, s.base)-s.base, min(to, s.end())-s.base)
		s.release()
	}
	l.droppedTo = to
}

// chunkFloor is the zero-chunk boundary of its file at or before off, so
// that a drop ending there covers whole folios (zeroahead.go): the kernel
// may keep a folio that a range covers in part, and the next drop starts
// after it. The chunks are the file's, not the log's: a file size that is
// no multiple of zeroChunk puts them off the log's multiples.
func chunkFloor(segs []*segment, off int64) int64 {
	for _, s := range segs {
		if s.base <= off && off < s.end() {
			return s.base + (off-s.base)/zeroChunk*zeroChunk
		}
	}
	return off
}

// dropCache drops the whole pages of [from, to) of the file from this
// process's mapping and from the page cache.
func (s *segment) dropCache(from, to int64) {
	page := int64(os.Getpagesize())
	from, to = (from+page-1)/page*page, to/page*page
	if from >= to {
		return
	}
	_ = unix.Madvise(s.ro[from:to], unix.MADV_DONTNEED)
	_ = unix.Fadvise(int(s.f.Fd()), from, to-from, unix.FADV_DONTNEED)
}
