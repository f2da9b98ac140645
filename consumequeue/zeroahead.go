package consumequeue

import (
	"os"

	"github.com/unilog/unilog/internal/fileops"
	"golang.org/x/sys/unix"
)

// Zeros ahead of the entries, and their pages mapped.
//
// A file grows by fallocate (resizeLocked), which gives it blocks but no
// page-cache pages: the first store into each page of the mapping then
// faults, and the kernel allocates the page, fills it with zeros and maps
// it, one page per fault. On the 2-core virtual machine of
// docs/BENCHMARKS.md, filling a 9.6 MB file with 32-byte entries through
// its mapping that way, growing it as resizeLocked does, cost 27-40 ms of
// CPU (12-17 µs a page); writing zeros over the next 256 KiB with one
// pwrite before the entries reach them, so that the kernel makes the
// pages in its write path, cost 14-19 ms (6-8 µs a page), and msyncing
// the full file 9-12 ms against 12-17 (a small Go program, three rounds
// of eight files each way). At one partition the stores into fresh pages
// of the queue's files were 14% of the broker's CPU samples.
//
// MADV_POPULATE_WRITE (Linux 5.14) makes the chunk's pages and maps them
// writable in one call, zeroing them in the kernel instead of copying a
// buffer of zeros in: 5.7 µs a page against 6.7-9.0 for the pwrite of
// zeros and 6.9-9.0 for the stores' own faults (64 MiB fallocated files
// filled with 32-byte stores, three rounds of each, stop 33). In the
// broker at one partition, the first store of each entry
// (consumequeue.encodeEntry) fell from 0.13 to 0.07 s of samples over
// four 300,000-record produces, and broker CPU over them from 186 to 155
// ticks (medians of six runs, rotated with the build before; one more
// build in the rotation, without the frame pool either, had 174). The
// stores took almost no fault after the zeros either:
// TestZeroAheadMapsPages, run against the pwrite, counted 1 fault for 24
// pages (most likely its large folios mapped whole by one fault), and 24
// for 24 with nothing made ahead. What remains on that store is most
// likely the cache line's miss, the chunk being made 8,192 entries,
// megabytes of log, before the entries reach it. The zeros stay as the
// fallback where the kernel lacks the call.
//
// The zeros are what those bytes hold already (the file is fallocated,
// and no entry is at or past zeroed), so no crash image changes. They
// are dirty, though: a flush before the entries fill the chunk writes its
// zeros to the disk too, at most one chunk per file per flush.

// zeroAhead is the aligned unit of zeros written ahead of the entries.
const zeroAhead = 256 << 10

// zeroAheadLocked makes sure no entry is stored at or past f.zeroed
// without its page made first: for a store ending at end past f.zeroed
// it populates (or writes zeros over) up to the end of end's zeroAhead
// chunk (within the file's size), at most one chunk, and moves f.zeroed
// there.
// Nothing at or past f.zeroed is an entry, so the zeros never cover one.
// Best effort: a failed write leaves the pages to the stores' faults, as
// without it. Caller holds mu for writing and the file is mapped.
func (f *file) zeroAheadLocked(end int64) {
	if end <= f.zeroed {
		return
	}
	to := min((end+zeroAhead-1)/zeroAhead*zeroAhead, int64(len(f.m)))
	from := max(f.zeroed, to-zeroAhead)
	if from >= to {
		return
	}
	if populateWrite(f.m[from&^int64(pageSize-1) : to]) {
		f.zeroed = to
		return
	}
	fd, err := fileops.Open(f.path, os.O_WRONLY, 0)
	if err != nil {
		return
	}
	defer fd.Close()
	if _, err := fd.WriteAt(zeroChunk[:to-from], from); err != nil {
		return
	}
	f.zeroed = to
}

var pageSize = os.Getpagesize()

// populateWrite makes the pages of b, which starts on a page boundary of
// a shared file mapping, present and writable in one system call
// (MADV_POPULATE_WRITE, Linux 5.14), as a store into each would, and
// reports whether the kernel did. It leaves their bytes as they are.
func populateWrite(b []byte) bool {
	return unix.Madvise(b, unix.MADV_POPULATE_WRITE) == nil
}
