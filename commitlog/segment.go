package commitlog

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/edsrzf/mmap-go"
	"github.com/unilog/unilog/internal/fileops"
	"golang.org/x/sys/unix"
)

const tmpSuffix = fileops.TmpSuffix

// segment is one mapped file of the log. refs counts the log's own
// reference (dropped when the file leaves the log) plus one per View; the
// mapping is unmapped only when it reaches zero, so retention never pulls a
// mapping out from under a reader.
type segment struct {
	base int64
	size int64
	path string
	f    *os.File
	ops  fileOps
	// m is the writer's read-write mapping; ro maps the same file
	// read-only for everything handed to readers (View, Cursor), so a
	// stray store through a reader's slice faults instead of silently
	// corrupting stored records.
	m    mmap.MMap
	ro   mmap.MMap
	refs atomic.Int32
	// durable is set once the file's allocation and directory entry are
	// on disk (always for files found at Open).
	durable atomic.Bool
	// sealedAt is the unix-ms time of the newest record once the writer
	// has left the file (the file's mtime for files found at Open).
	sealedAt atomic.Int64
	mapped   *atomic.Int64
}

func segmentName(base int64) string { return fileops.OffsetName(base) }

// allocError maps the errors of a failed space allocation to ErrDiskFull.
// EFBIG is included because RLIMIT_FSIZE and per-file limits end the same
// way for the caller: the next file cannot exist.
func allocError(path string, err error) error {
	if errors.Is(err, unix.ENOSPC) || errors.Is(err, unix.EDQUOT) || errors.Is(err, unix.EFBIG) {
		return fmt.Errorf("commitlog: allocate %s: %w: %w", path, ErrDiskFull, err)
	}
	return fmt.Errorf("commitlog: allocate %s: %w", path, err)
}

// createSegment makes the file for base under a temporary name, allocates
// every block (fallocate, so a full disk is an error here and never a
// SIGBUS on a later store into the mapping), maps it, pre-faults its
// first prefaultChunk bytes (the preallocator does the rest) and only then
// gives it its real name: a crash leaves either a *.tmp file
// (removed by Open) or a complete one. It does not fsync: on a busy ext4 a
// journal commit waits for gigabytes of other dirty data, which would make
// the preallocator late. The first flush covering the file makes its
// allocation and name durable before FlushedOffset moves into it.
func createSegment(ops fileOps, dir string, base, size int64, mapped *atomic.Int64) (*segment, error) {
	final := filepath.Join(dir, segmentName(base))
	tmp := final + tmpSuffix
	f, err := os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, fmt.Errorf("commitlog: create %s: %w", tmp, err)
	}
	fail := func(err error) (*segment, error) {
		f.Close()
		os.Remove(tmp)
		return nil, err
	}
	if err := ops.Fallocate(f, size); err != nil {
		return fail(allocError(tmp, err))
	}
	m, ro, err := mapFile(f, tmp)
	if err != nil {
		return fail(err)
	}
	s := &segment{base: base, size: size, path: final, f: f, ops: ops, m: m, ro: ro, mapped: mapped}
	s.prefault(0, min(size, prefaultChunk))
	if err := ops.Rename(tmp, final); err != nil {
		m.Unmap()
		ro.Unmap()
		return fail(fmt.Errorf("commitlog: rename %s: %w", tmp, err))
	}
	s.refs.Store(1)
	s.sealedAt.Store(time.Now().UnixMilli())
	mapped.Add(size)
	return s, nil
}

// mapFile maps f twice: read-write for the writer, read-only for readers.
func mapFile(f *os.File, path string) (rw, ro mmap.MMap, err error) {
	rw, err = mmap.Map(f, mmap.RDWR, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("commitlog: map %s: %w", path, err)
	}
	ro, err = mmap.Map(f, mmap.RDONLY, 0)
	if err != nil {
		rw.Unmap()
		return nil, nil, fmt.Errorf("commitlog: map %s read-only: %w", path, err)
	}
	return rw, ro, nil
}

// prefault populates the page tables of [from, to) of both mappings: the
// writer's for writing (see prefault), then the readers' for reading. Both
// map the same page-cache pages, so once the first call has brought them
// in the second only fills page-table entries; without it every reader's
// first pass over a file takes a minor fault per 16 pages (fault-around),
// measured to double the dispatcher's CPU time on freshly written data.
func (s *segment) prefault(from, to int64) {
	prefault(s.m[from:to])
	_ = unix.Madvise(s.ro[from:to], unix.MADV_POPULATE_READ) // best effort, as prefault
}

// prefaultChunk is how much of a new file is populated before the file is
// handed to the writer, and the step of populating the rest behind it.
const prefaultChunk = 16 << 20

// prefault populates the page tables of m for writing, so the appender
// takes no page faults: a write fault on a file mapping costs a
// page_mkwrite with a journal handle per 4 KiB page (measured: ~10 us,
// which caps the writer near 400 MB/s). MADV_POPULATE_WRITE (Linux 5.14)
// does it in one call; older kernels get one load per page (read faults
// only, but still no major faults). It dirties
// the zero pages, so the preallocator only runs it a window ahead of the
// writer.
func prefault(m []byte) {
	if len(m) == 0 || !errors.Is(unix.Madvise(m, unix.MADV_POPULATE_WRITE), unix.EINVAL) {
		// Done, or failed for a reason loads would only turn into a
		// SIGBUS (a file truncated under the log); best effort either way.
		return
	}
	// Loads, not stores: the range may be behind the writer.
	page := os.Getpagesize()
	var sum byte
	_ = guard(func() {
		for i := 0; i < len(m); i += page {
			sum += m[i]
		}
	})
	prefaultSink = sum
}

// prefaultSink keeps the fallback loads of prefault from being optimized away.
var prefaultSink byte

// openSegment maps an existing file. A last file that is not a whole
// number of pages long (cut by something outside the log: files are
// created complete) is extended with zeros to the next page boundary, so
// recovery stops cleanly at the cut; repair says so.
func openSegment(ops fileOps, path string, base int64, last bool, mapped *atomic.Int64) (s *segment, repaired int64, err error) {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return nil, 0, fmt.Errorf("commitlog: open %s: %w", path, err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, fmt.Errorf("commitlog: stat %s: %w", path, err)
	}
	size := fi.Size()
	if page := int64(os.Getpagesize()); size < page || size%page != 0 {
		if !last {
			f.Close()
			return nil, 0, fmt.Errorf("commitlog: open %s: size %d is not a positive multiple of the page size: %w", path, size, ErrCorrupt)
		}
		want := max(page, (size+page-1)/page*page)
		if err := ops.Fallocate(f, want); err != nil {
			f.Close()
			return nil, 0, allocError(path, err)
		}
		if err := ops.Fdatasync(f); err != nil {
			f.Close()
			return nil, 0, fmt.Errorf("commitlog: sync %s: %w", path, err)
		}
		repaired, size = want-size, want
	}
	m, ro, err := mapFile(f, path)
	if err != nil {
		f.Close()
		return nil, 0, err
	}
	s = &segment{base: base, size: size, path: path, f: f, ops: ops, m: m, ro: ro, mapped: mapped}
	s.refs.Store(1)
	s.durable.Store(true)
	s.sealedAt.Store(fi.ModTime().UnixMilli())
	mapped.Add(size)
	return s, repaired, nil
}

func (s *segment) end() int64 { return s.base + s.size }

// tryAcquire takes a reference unless the last one is already gone.
func (s *segment) tryAcquire() bool {
	for {
		r := s.refs.Load()
		if r <= 0 {
			return false
		}
		if s.refs.CompareAndSwap(r, r+1) {
			return true
		}
	}
}

// release drops a reference and unmaps the file with the last one.
func (s *segment) release() {
	if s.refs.Add(-1) != 0 {
		return
	}
	s.m.Unmap()
	s.ro.Unmap()
	s.f.Close()
	s.mapped.Add(-s.size)
}

// msync writes [from, to) of the file (offsets inside it) to disk,
// widened to page boundaries as msync requires.
func (s *segment) msync(from, to int64) error {
	page := int64(os.Getpagesize())
	from = from / page * page
	to = min((to+page-1)/page*page, s.size)
	if from >= to {
		return nil
	}
	if err := s.ops.Msync(s.path, s.m[from:to], from); err != nil {
		return fmt.Errorf("commitlog: msync %s [%d, %d): %w", s.path, from, to, err)
	}
	return nil
}

// zeroFrom makes every byte from pos to the end of the file zero and
// returns how many bytes it had to clear. It reads the range a page at a
// time and writes zeros, through the mapping, only to pages that are not
// already zero: the tail after the end of a recovered log is almost always
// zero already (never written, or wiped by an earlier recovery), and
// clearing it wholesale would dirty every page of it for writeback (or,
// with FALLOC_FL_ZERO_RANGE, drop its pre-faulted pages and cost a journal
// transaction) on every start. The stale bytes of a torn write and of the
// records behind it are cleared, and the caller's fdatasync makes that
// durable. The pages are read through the page tables recovery has just
// populated, so an already-zero tail costs a memory scan.
func (s *segment) zeroFrom(pos int64) int64 {
	page := int64(os.Getpagesize())
	var cleared int64
	for p := pos; p < s.size; {
		next := min((p/page+1)*page, s.size)
		// Grow a run of non-zero pages and clear it in one go.
		q := p
		for q < s.size && !isZero(s.m[q:next]) {
			q = next
			next = min(q+page, s.size)
		}
		if q > p {
			clear(s.m[p:q])
			cleared += q - p
			p = q
			continue
		}
		p = next
	}
	return cleared
}

// zeroPage is compared against: bytes.Equal is vectorized, a byte loop is not.
var zeroPage = make([]byte, 64<<10)

// isZero reports whether every byte of b is zero.
func isZero(b []byte) bool {
	for len(b) > 0 {
		n := min(len(b), len(zeroPage))
		if !bytes.Equal(b[:n], zeroPage[:n]) {
			return false
		}
		b = b[n:]
	}
	return true
}
