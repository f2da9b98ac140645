package consumequeue

import "os"

// Zeros ahead of the entries.
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
// The zeros are what those bytes hold already (the file is fallocated,
// and no entry is at or past zeroed), so no crash image changes. They
// are dirty, though: a flush before the entries fill the chunk writes its
// zeros to the disk too, at most one chunk per file per flush.

// zeroAhead is the aligned unit of zeros written ahead of the entries.
const zeroAhead = 256 << 10

// zeroAheadLocked makes sure no entry is stored at or past f.zeroed
// without zeros written there first: for a store ending at end past
// f.zeroed it writes zeros up to the end of end's zeroAhead chunk (within
// the file's size), at most one chunk of them, and moves f.zeroed there.
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
	fd, err := os.OpenFile(f.path, os.O_WRONLY, 0)
	if err != nil {
		return
	}
	defer fd.Close()
	if _, err := fd.WriteAt(zeroChunk[:to-from], from); err != nil {
		return
	}
	f.zeroed = to
}
