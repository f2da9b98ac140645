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
	ops  FileOps
	// ro maps the file read-only (MAP_SHARED: the page cache the writer's
	// pwrites fill) for everything handed to readers (View, Cursor), so a
	// stray store through a reader's slice faults instead of silently
	// corrupting stored records.
	ro   mmap.MMap
	refs atomic.Int32
	// durable is set once the file's allocation and directory entry are
	// on disk (always for files found at Open).
	durable atomic.Bool
	// sealedAt is the unix-ms time of the newest record once the writer
	// has left the file (the file's mtime for files found at Open).
	sealedAt atomic.Int64
	mapped   *atomic.Int64
	// zeroed is where the writer's zeros ahead of the records end
	// (zeroahead.go); wmu guards it.
	zeroed int64
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
// failed write of records later), maps it and only then gives it its real
// name: a crash leaves either a *.tmp file (removed by Open) or a complete
// one. It does not fsync: on a busy ext4 a journal commit waits for
// gigabytes of other dirty data, which would make the preallocator late.
// The first flush covering the file makes its allocation and name durable
// before FlushedOffset moves into it.
func createSegment(ops FileOps, dir string, base, size int64, mapped *atomic.Int64) (*segment, error) {
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
	ro, err := mapFile(f, tmp)
	if err != nil {
		return fail(err)
	}
	if err := ops.Rename(tmp, final); err != nil {
		ro.Unmap()
		return fail(fmt.Errorf("commitlog: rename %s: %w", tmp, err))
	}
	s := &segment{base: base, size: size, path: final, f: f, ops: ops, ro: ro, mapped: mapped}
	s.refs.Store(1)
	s.sealedAt.Store(time.Now().UnixMilli())
	mapped.Add(size)
	return s, nil
}

// mapFile maps f read-only for readers. The writer never stores through a
// mapping: see writeAt.
func mapFile(f *os.File, path string) (mmap.MMap, error) {
	ro, err := mmap.Map(f, mmap.RDONLY, 0)
	if err != nil {
		return nil, fmt.Errorf("commitlog: map %s read-only: %w", path, err)
	}
	return ro, nil
}

// openSegment maps an existing file. A last file that is not a whole
// number of pages long (cut by something outside the log: files are
// created complete) is extended with zeros to the next page boundary, so
// recovery stops cleanly at the cut; repair says so.
func openSegment(ops FileOps, path string, base int64, last bool, mapped *atomic.Int64) (s *segment, repaired int64, err error) {
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
	ro, err := mapFile(f, path)
	if err != nil {
		f.Close()
		return nil, 0, err
	}
	s = &segment{base: base, size: size, path: path, f: f, ops: ops, ro: ro, mapped: mapped}
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
	s.ro.Unmap()
	s.f.Close()
	s.mapped.Add(-s.size)
}

// writeAt writes b at pos in the file with pwrite. The page cache it
// fills is the one the read-only mapping shows, so readers see the bytes
// as soon as it returns. pwrite copies into page-cache pages it allocates
// without zeroing them first when it covers them whole, where a store
// through a writable mapping of the fallocated (unwritten) file took a
// fault per page that zeroed the page and then a page_mkwrite: measured,
// more than half of the writer's CPU time (docs/BENCHMARKS.md, "The commit
// log's write path").
func (s *segment) writeAt(b []byte, pos int64) (int64, error) {
	if pos+int64(len(b)) > s.size {
		return 0, fmt.Errorf("commitlog: write %s [%d, %d): past the end of the file (%d): %w", s.path, pos, pos+int64(len(b)), s.size, ErrIO)
	}
	var written int64
	for len(b) > 0 {
		n, err := unix.Pwrite(int(s.f.Fd()), b[:pieceLen(pos+written, int64(len(b)))], pos+written)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return written, s.writeError(pos+written, err)
		}
		b, written = b[n:], written+int64(n)
	}
	return written, nil
}

// writeError wraps a failed write at pos: ErrDiskFull when the file system
// is out of space (or the file over RLIMIT_FSIZE), ErrIO otherwise.
func (s *segment) writeError(pos int64, err error) error {
	if errors.Is(err, unix.ENOSPC) || errors.Is(err, unix.EDQUOT) || errors.Is(err, unix.EFBIG) {
		return fmt.Errorf("commitlog: write %s at %d: %w: %w", s.path, pos, ErrDiskFull, err)
	}
	return fmt.Errorf("commitlog: write %s at %d: %w: %w", s.path, pos, ErrIO, err)
}

// clear writes zeros over n bytes at pos: what a failed write left.
func (s *segment) clear(pos, n int64) error {
	for n > 0 {
		k := min(n, int64(len(zeroPage)))
		if _, err := s.writeAt(zeroPage[:k], pos); err != nil {
			return err
		}
		pos, n = pos+k, n-k
	}
	return nil
}

// sync makes the file's written bytes durable with one fdatasync (it
// also commits the file's size and allocation; its name needs the
// directory). A file no longer as long as the log made it was cut under
// the log: pwrites into it since then may have extended it again, over a
// hole where acknowledged records were, so that fails like a failed
// fdatasync instead of reporting them durable.
func (s *segment) sync() error {
	fi, err := s.f.Stat()
	if err != nil {
		return fmt.Errorf("commitlog: stat %s: %w", s.path, err)
	}
	if fi.Size() != s.size {
		return fmt.Errorf("commitlog: sync %s: the file is %d bytes, the log made it %d: cut under the log: %w", s.path, fi.Size(), s.size, ErrIO)
	}
	if err := s.ops.Fdatasync(s.f); err != nil {
		return fmt.Errorf("commitlog: fdatasync %s: %w", s.path, err)
	}
	return nil
}

// zeroFrom makes every byte from pos to the end of the file zero and
// returns how many bytes it had to clear. It reads the range a page at a
// time through the mapping and writes zeros only over pages that are not
// already zero: the tail after the end of a recovered log is almost always
// zero already (never written, or wiped by an earlier recovery), and
// clearing it wholesale would dirty every page of it for writeback (or,
// with FALLOC_FL_ZERO_RANGE, cost a journal transaction) on every start.
// The stale bytes of a torn write and of the records behind it are
// cleared, and the caller's fdatasync makes that durable. The reads fault
// (SIGBUS) on a file cut under the log: callers run it under guard. Only
// the regions that may hold data are read (dataFrom).
func (s *segment) zeroFrom(pos int64) (int64, error) {
	var cleared int64
	for p := pos; p < s.size; {
		start, end := s.dataFrom(p)
		n, err := s.zeroRange(start, end)
		cleared += n
		if err != nil {
			return cleared, err
		}
		p = end
	}
	return cleared, nil
}

// zeroRange is zeroFrom over [from, to).
func (s *segment) zeroRange(from, to int64) (int64, error) {
	page := int64(os.Getpagesize())
	var cleared int64
	for p := from; p < to; {
		next := min((p/page+1)*page, to)
		// Grow a run of non-zero pages and clear it in one go.
		q := p
		for q < to && !isZero(s.ro[q:next]) {
			q = next
			next = min(q+page, to)
		}
		if q > p {
			if err := s.clear(p, q-p); err != nil {
				return cleared, err
			}
			cleared += q - p
		}
		p = next
	}
	return cleared, nil
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

// dropTail unmaps from this process the pages of the file from pos on
// (MADV_DONTNEED on the read-only shared mapping: the page cache keeps
// them, nothing is written). Recovery reads the whole unwritten rest of
// the last file to check it is zero, and nothing reads there again until
// the writer has written it, so without this up to a file's size (1 GiB)
// of its pages counted in the broker's RSS after every start. Best effort.
func (s *segment) dropTail(pos int64) {
	page := int64(os.Getpagesize())
	if from := (pos + page - 1) / page * page; from < s.size {
		_ = unix.Madvise(s.ro[from:s.size], unix.MADV_DONTNEED)
	}
}
