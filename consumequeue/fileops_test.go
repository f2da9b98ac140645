package consumequeue

import (
	"errors"
	"os"
	"syscall"
	"testing"

	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"
	"github.com/unilog/unilog/internal/fileops"
	"github.com/unilog/unilog/internal/fileops/fileopstest"
)

// faultyStore opens a store whose file calls go through the returned
// Faults, logging into the returned hook.
func faultyStore(t *testing.T, dir string, epf, maxMapped int) (*Store, Options, *fileopstest.Faults, *logtest.Hook) {
	t.Helper()
	logger, hook := logtest.NewNullLogger()
	faults := fileopstest.NewFaults(fileops.OS{})
	opts := Options{Dir: dir, EntriesPerFile: epf, MaxMapped: maxMapped, SmallEntries: -1, Logger: logger, FS: faults}
	s, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s, opts, faults, hook
}

var syncOps = []fileopstest.Op{fileopstest.Msync, fileopstest.Fdatasync, fileopstest.SyncDir, fileopstest.Syncfs}

func syncCalls(f *fileopstest.Faults) int {
	n := 0
	for _, op := range syncOps {
		n += f.Calls(op)
	}
	return n
}

// TestFlushFailureIsSticky fails each kind of sync a Flush makes:
// fdatasync of a mapped file and of one the LRU unmapped, fsync of a
// directory that gained a queue, and syncfs when many files are dirty. The Flush and
// every later one fail with ErrFlushFailed without syncing again (a retry
// can succeed after the kernel dropped the dirty pages, and the dispatcher
// would checkpoint entries that are gone), one error line is logged, and
// after a restart every entry of the last good Flush is there.
func TestFlushFailureIsSticky(t *testing.T) {
	for _, tc := range []struct {
		name  string
		op    fileopstest.Op
		dirty func(t *testing.T, s *Store)
	}{
		{"mapped", fileopstest.Fdatasync, func(t *testing.T, s *Store) { appendRange(t, mustQueue(t, s, "a", 0), 50, 100) }},
		{"unmapped", fileopstest.Fdatasync, func(t *testing.T, s *Store) {
			appendRange(t, mustQueue(t, s, "a", 0), 50, 100)
			appendRange(t, mustQueue(t, s, "b", 0), 0, 10) // evicts a's dirty file (MaxMapped 1)
		}},
		{"directory", fileopstest.SyncDir, func(t *testing.T, s *Store) { appendRange(t, mustQueue(t, s, "new", 0), 0, 10) }},
		{"many files", fileopstest.Syncfs, func(t *testing.T, s *Store) {
			for p := int32(0); p <= syncfsThreshold; p++ {
				appendRange(t, mustQueue(t, s, "many", p), 0, 1)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			s, opts, faults, hook := faultyStore(t, dir, 1000, 1)
			a := mustQueue(t, s, "a", 0)
			appendRange(t, a, 0, 50)
			if err := s.Flush(); err != nil {
				t.Fatal(err)
			}
			tc.dirty(t, s)
			faults.Fail(tc.op, syscall.EIO)
			before := faults.Calls(tc.op)
			if err := s.Flush(); !errors.Is(err, ErrFlushFailed) || !errors.Is(err, syscall.EIO) {
				t.Fatalf("Flush with a failing %s: %v, want ErrFlushFailed wrapping EIO", tc.op, err)
			}
			if faults.Calls(tc.op) == before {
				t.Fatalf("Flush did not call %s", tc.op)
			}
			faults.Set(tc.op, nil) // a retry would now succeed
			calls := syncCalls(faults)
			if err := s.Flush(); !errors.Is(err, ErrFlushFailed) {
				t.Fatalf("Flush after the failure: %v", err)
			}
			if err := s.Close(); !errors.Is(err, ErrFlushFailed) {
				t.Fatalf("Close after the failure: %v", err)
			}
			if n := syncCalls(faults); n != calls {
				t.Fatalf("%d syncs after the failure", n-calls)
			}
			if !s.FlushFailed() {
				t.Fatal("FlushFailed not set")
			}
			errs := 0
			for _, e := range hook.AllEntries() {
				if e.Level <= logrus.ErrorLevel {
					errs++
				}
			}
			if errs != 1 {
				t.Fatalf("%d error lines, want 1", errs)
			}

			opts.FS, opts.Logger = nil, quietLogger()
			s2, err := Open(opts)
			if err != nil {
				t.Fatal(err)
			}
			defer s2.Close()
			a2 := mustQueue(t, s2, "a", 0)
			if a2.MaxOffset() < 50 {
				t.Fatalf("max offset %d after restart, entries flushed up to 50", a2.MaxOffset())
			}
			checkRange(t, a2, 0, a2.MaxOffset())
		})
	}
}

// TestFallocateFailure fails the growth of a file: Append reports
// ErrDiskFull for a full disk and the cause otherwise, stores nothing,
// keeps every entry before, and appends resume once space returns.
func TestFallocateFailure(t *testing.T) {
	for _, tc := range []struct {
		err, want error
	}{{syscall.ENOSPC, ErrDiskFull}, {syscall.EDQUOT, ErrDiskFull}, {syscall.EIO, syscall.EIO}} {
		t.Run(tc.err.Error(), func(t *testing.T) {
			dir := t.TempDir()
			s, opts, faults, _ := faultyStore(t, dir, 1000, 4)
			q := mustQueue(t, s, "a", 0)
			appendRange(t, q, 0, 10)
			faults.Fail(fileopstest.Fallocate, tc.err)
			var err error
			off := int64(10)
			for ; err == nil; off++ {
				err = q.Append(off, entryAt(off))
			}
			off--
			if !errors.Is(err, tc.want) {
				t.Fatalf("append %d on a failing fallocate: %v, want %v", off, err, tc.want)
			}
			if q.MaxOffset() != off {
				t.Fatalf("failed append moved MaxOffset to %d, want %d", q.MaxOffset(), off)
			}
			checkRange(t, q, 0, off)
			faults.Set(fileopstest.Fallocate, nil)
			appendRange(t, q, off, off+200)
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			opts.FS = nil
			s2, err := Open(opts)
			if err != nil {
				t.Fatal(err)
			}
			defer s2.Close()
			checkRange(t, mustQueue(t, s2, "a", 0), 0, off+200)
		})
	}
}

// TestNoFallocate runs on a file system without fallocate (EOPNOTSUPP):
// files grow by written zeros, never as sparse holes, which a store
// through the mapping would turn into a SIGBUS on a full disk; and when
// the zeros cannot be written (here the file size limit, EFBIG, as on a
// full disk) Append fails with ErrDiskFull and the process lives. The
// limit, a little over one queue file, is set in a child process: it
// holds for go test's own log of opened files too (InChild).
func TestNoFallocate(t *testing.T) {
	if !fileopstest.InChild(t) {
		return
	}
	dir := t.TempDir()
	s, opts, faults, _ := faultyStore(t, dir, 100_000, 4)
	faults.Fail(fileopstest.Fallocate, syscall.EOPNOTSUPP)
	q := mustQueue(t, s, "a", 0)
	// 2100 entries grow the file to 128 KiB and write a little over half;
	// the room maker (room.go) is let finish before the size is taken.
	appendRange(t, q, 0, 2100)
	waitRoom(t, q)
	f := q.snapshot()[0]
	st, err := os.Stat(f.path)
	if err != nil {
		t.Fatal(err)
	}
	if alloc := st.Sys().(*syscall.Stat_t).Blocks * 512; alloc < st.Size() {
		t.Fatalf("%s: %d bytes allocated of %d: sparse", f.path, alloc, st.Size())
	}

	restore := fileopstest.LimitFileSize(t, uint64(st.Size())+1000)
	off := int64(2100)
	for ; err == nil; off++ {
		err = q.Append(off, entryAt(off))
	}
	off--
	if !errors.Is(err, ErrDiskFull) {
		t.Fatalf("append %d past the file size limit: %v, want ErrDiskFull", off, err)
	}
	if st2, err := os.Stat(f.path); err != nil || st2.Size() != st.Size() {
		t.Fatalf("failed growth left %s at %d bytes (%v), want %d", f.path, st2.Size(), err, st.Size())
	}
	checkRange(t, q, 0, off)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	restore()
	opts.FS = nil
	s2, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	checkRange(t, mustQueue(t, s2, "a", 0), 0, off)
}

// TestTruncatedUnderTheStore truncates a queue file behind the store's
// back: reading or appending through its mapping faults, and the store
// turns that into ErrIO instead of a SIGBUS that kills the process.
func TestTruncatedUnderTheStore(t *testing.T) {
	s := openStore(t, t.TempDir(), 1000, 4)
	storeThroughMapping(s)
	q := mustQueue(t, s, "a", 0)
	appendRange(t, q, 0, 100)
	waitRoom(t, q)
	if err := os.Truncate(q.snapshot()[0].path, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := q.Get(10); !errors.Is(err, ErrIO) {
		t.Fatalf("Get from the truncated file: %v, want ErrIO", err)
	}
	if err := q.Append(100, entryAt(100)); !errors.Is(err, ErrIO) {
		t.Fatalf("Append into the truncated file: %v, want ErrIO", err)
	}
	if q.MaxOffset() != 100 {
		t.Fatalf("failed append moved MaxOffset to %d", q.MaxOffset())
	}
}
