package commitlog

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"
	"github.com/unilog/unilog/internal/fileops"
	"github.com/unilog/unilog/internal/fileops/fileopstest"
)

// faultyLog opens and recovers a log in sync mode whose file calls go
// through the returned Faults, logging into the returned hook.
func faultyLog(t *testing.T, fileSize int64) (*Log, Options, *fileopstest.Faults, *logtest.Hook) {
	t.Helper()
	logger, hook := logtest.NewNullLogger()
	faults := fileopstest.NewFaults(fileops.OS{})
	opts := testOptions(t, "", fileSize)
	opts.Logger = logger
	opts.FlushMode = FlushSync
	opts.FlushInterval = time.Hour
	opts.FS = faults
	return openLog(t, opts), opts, faults, hook
}

// appendDurable appends message i and waits for it to be durable.
func appendDurable(t *testing.T, l *Log, i int) (Position, Message, error) {
	t.Helper()
	m := testMessage(i, 1000)
	p, err := l.Append(&m)
	if err != nil {
		return p, m, err
	}
	return p, m, l.WaitDurable(context.Background(), p.End())
}

// fitInFile is how many appendDurable records fill a file of size bytes.
func fitInFile(size int64) int {
	n := 0
	for used := int64(0); ; n++ {
		m := testMessage(n, 1000)
		if used += int64(EncodedSize(&m)); used > size {
			return n
		}
	}
}

// reopenAndCheck opens the log's directory with the real file calls,
// recovers it and reads every acknowledged record back.
func reopenAndCheck(t *testing.T, opts Options, pos []Position, msgs []Message) {
	t.Helper()
	opts.FS = nil
	opts.Logger = quietLogger()
	l := openLog(t, opts)
	defer l.Close()
	checkReadable(t, l, pos, msgs)
}

func errorLines(hook *logtest.Hook) int {
	n := 0
	for _, e := range hook.AllEntries() {
		if e.Level <= logrus.ErrorLevel {
			n++
		}
	}
	return n
}

// TestFlushFailureIsSticky fails the fdatasync, or the directory fsync that
// makes a new file's name durable, under a sync-mode log: the waiter of
// the failed flush and every later append, flush and waiter get
// ErrFlushFailed, the failed call is never retried (a retry can succeed
// after the kernel dropped the dirty pages), one error line is logged, and
// after a restart every record acknowledged before is there.
func TestFlushFailureIsSticky(t *testing.T) {
	const fileSize = 64 << 10
	for _, tc := range []struct {
		op fileopstest.Op
		// before: records acknowledged before the fault; the failing flush
		// is the first one after them.
		before int
	}{
		{fileopstest.Fdatasync, 10},
		// The records that fill the first file; the next one enters the
		// second, whose first flush syncs the directory.
		{fileopstest.SyncDir, fitInFile(fileSize)},
	} {
		t.Run(string(tc.op), func(t *testing.T) {
			l, opts, faults, hook := faultyLog(t, fileSize)
			defer l.Close()
			var pos []Position
			var msgs []Message
			for i := 0; i < tc.before; i++ {
				p, m, err := appendDurable(t, l, i)
				if err != nil {
					t.Fatalf("append %d before the fault: %v", i, err)
				}
				pos, msgs = append(pos, p), append(msgs, m)
			}
			faults.Fail(tc.op, syscall.EIO)
			p, _, err := appendDurable(t, l, tc.before)
			if !errors.Is(err, ErrFlushFailed) || !errors.Is(err, syscall.EIO) {
				t.Fatalf("wait on the failed flush: %v, want ErrFlushFailed wrapping EIO", err)
			}
			if l.FlushedOffset() >= p.End() {
				t.Fatalf("flushed offset %d passed the record whose flush failed (end %d)", l.FlushedOffset(), p.End())
			}
			calls := faults.Calls(tc.op)
			faults.Set(tc.op, nil) // a retry would now succeed
			if _, _, err := appendDurable(t, l, tc.before+1); !errors.Is(err, ErrFlushFailed) {
				t.Fatalf("append after the failure: %v, want ErrFlushFailed", err)
			}
			if err := l.Flush(); !errors.Is(err, ErrFlushFailed) {
				t.Fatalf("Flush after the failure: %v", err)
			}
			if err := l.WaitDurable(context.Background(), p.End()); !errors.Is(err, ErrFlushFailed) {
				t.Fatalf("WaitDurable of the unflushed record: %v", err)
			}
			if err := l.WaitDurable(context.Background(), pos[len(pos)-1].End()); err != nil {
				t.Fatalf("WaitDurable of a record flushed before the failure: %v", err)
			}
			if n := faults.Calls(tc.op); n != calls {
				t.Fatalf("%s called %d more times after it failed", tc.op, n-calls)
			}
			if !l.Stats().FlushFailed {
				t.Fatal("Stats().FlushFailed not set")
			}
			checkReadable(t, l, pos, msgs)
			if n := errorLines(hook); n != 1 {
				t.Fatalf("%d error lines logged, want 1: %v", n, hook.AllEntries())
			}
			if err := l.Close(); !errors.Is(err, ErrFlushFailed) {
				t.Fatalf("Close: %v, want ErrFlushFailed", err)
			}
			reopenAndCheck(t, opts, pos, msgs)
		})
	}
}

// TestRecoverSyncFailure fails the fdatasync with which Recover makes the
// recovered files durable: Recover fails with the cause and the next open
// recovers everything.
func TestRecoverSyncFailure(t *testing.T) {
	l, opts, _, _ := faultyLog(t, 64<<10)
	var pos []Position
	var msgs []Message
	for i := 0; i < 70; i++ {
		p, m, err := appendDurable(t, l, i)
		if err != nil {
			t.Fatal(err)
		}
		pos, msgs = append(pos, p), append(msgs, m)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	faults := fileopstest.NewFaults(fileops.OS{})
	faults.Fail(fileopstest.Fdatasync, syscall.EIO)
	opts.FS = faults
	l, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Recover(0, nil); !errors.Is(err, syscall.EIO) {
		t.Fatalf("Recover with a failing fdatasync: %v", err)
	}
	if _, err := l.Append(&msgs[0]); !errors.Is(err, ErrNotRecovered) {
		t.Fatalf("append after a failed Recover: %v", err)
	}
	l.Close()
	reopenAndCheck(t, opts, pos, msgs)
}

// TestAllocateFailure fails the fallocate or the rename that makes the
// third file: the append that needs it fails before writing anything, with
// ErrDiskFull for a full disk and a clear error otherwise, nothing is left
// behind, appends resume once the call works again, and every
// acknowledged record survives a restart.
func TestAllocateFailure(t *testing.T) {
	const fileSize = 64 << 10
	third := segmentName(2 * fileSize)
	for _, tc := range []struct {
		name string
		op   fileopstest.Op
		err  error
		want error
	}{
		{"fallocate ENOSPC", fileopstest.Fallocate, syscall.ENOSPC, ErrDiskFull},
		{"fallocate EFBIG", fileopstest.Fallocate, syscall.EFBIG, ErrDiskFull},
		{"fallocate EIO", fileopstest.Fallocate, syscall.EIO, syscall.EIO},
		{"rename EIO", fileopstest.Rename, syscall.EIO, syscall.EIO},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, opts, faults, _ := faultyLog(t, fileSize)
			defer l.Close()
			faults.Set(tc.op, func(path string) error {
				if strings.HasPrefix(filepath.Base(path), third) {
					return tc.err
				}
				return nil
			})
			var pos []Position
			var msgs []Message
			var err error
			for i := 0; ; i++ {
				var p Position
				var m Message
				before := l.WriteOffset()
				if p, m, err = appendDurable(t, l, i); err != nil {
					if l.WriteOffset() != before {
						t.Fatalf("failed append moved the write offset from %d to %d", before, l.WriteOffset())
					}
					break
				}
				pos, msgs = append(pos, p), append(msgs, m)
			}
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), third) {
				t.Fatalf("append needing the third file: %v, want %v naming %s", err, tc.want, third)
			}
			if errors.Is(err, ErrFlushFailed) || l.Stats().FlushFailed {
				t.Fatalf("an allocation failure made the log read-only: %v", err)
			}
			if last := pos[len(pos)-1]; last.PhysOffset < fileSize {
				t.Fatalf("the second file was never used: last record at %d", last.PhysOffset)
			}
			if leftovers, _ := filepath.Glob(filepath.Join(opts.Dir, "*"+tmpSuffix)); len(leftovers) != 0 {
				t.Fatalf("failed allocation left %v", leftovers)
			}
			checkReadable(t, l, pos, msgs)

			faults.Set(tc.op, nil)
			p, m, err := appendDurable(t, l, len(pos))
			if err != nil {
				t.Fatalf("append once the call works again: %v", err)
			}
			if p.PhysOffset < 2*fileSize {
				t.Fatalf("record after the fault at %d, not in the third file", p.PhysOffset)
			}
			pos, msgs = append(pos, p), append(msgs, m)
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			reopenAndCheck(t, opts, pos, msgs)
		})
	}
}
