package commitlog

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"syscall"
	"testing"

	"github.com/unilog/unilog/internal/fileops/fileopstest"
)

// fillUntilFull appends 1000-byte messages until an append fails and
// returns the positions of the ones that succeeded and the error.
func fillUntilFull(t *testing.T, l *Log, limit int) ([]Position, []Message, error) {
	t.Helper()
	var pos []Position
	var msgs []Message
	for i := 0; i < limit; i++ {
		m := testMessage(i, 1000)
		before := l.WriteOffset()
		p, err := l.Append(&m)
		if err != nil {
			if l.WriteOffset() != before {
				t.Fatalf("failed append moved the write offset from %d to %d", before, l.WriteOffset())
			}
			return pos, msgs, err
		}
		pos = append(pos, p)
		msgs = append(msgs, m)
	}
	t.Fatalf("%d appends and the disk never filled", limit)
	return nil, nil, nil
}

func checkReadable(t *testing.T, l *Log, pos []Position, msgs []Message) {
	t.Helper()
	for i, p := range pos {
		v, err := l.Read(p.PhysOffset)
		if err != nil {
			t.Fatalf("record %d at %d: %v", i, p.PhysOffset, err)
		}
		if d := sameMessage(v.Record(), &msgs[i]); d != "" {
			t.Fatalf("record %d: %s", i, d)
		}
		v.Release()
	}
}

// TestDiskFullFileSizeLimit makes the writer's pwrite fail with EFBIG in
// the middle of a file through RLIMIT_FSIZE (the Go runtime ignores
// SIGXFSZ), as a file system that needs space to write into allocated
// blocks would with ENOSPC: the append, and a batch, fail with
// ErrDiskFull and publish nothing, the log stays writable (no failed
// flush), the bytes the failed write left are cleared, and once the limit
// is lifted appends resume where the failed one would have gone. A
// restart recovers exactly what was appended.
func TestDiskFullFileSizeLimit(t *testing.T) {
	if !fileopstest.InChild(t) {
		return
	}
	const fileSize = 8 << 20
	opts := testOptions(t, "", fileSize)
	l := openLog(t, opts)
	defer l.Close()
	restore := fileopstest.LimitFileSize(t, fileSize/2)

	pos, msgs, err := fillUntilFull(t, l, 10000)
	if !errors.Is(err, ErrDiskFull) || errors.Is(err, ErrFlushFailed) || l.Stats().FlushFailed {
		t.Fatalf("append past the file size limit: %v (flush failed: %v), want ErrDiskFull alone", err, l.Stats().FlushFailed)
	}
	if _, err := l.AppendBatch([]Message{testMessage(1, 10), testMessage(2, 1000)}); !errors.Is(err, ErrDiskFull) {
		t.Fatalf("batch past the file size limit: %v", err)
	}
	w := l.WriteOffset()
	b, err := os.ReadFile(l.Files()[0].Path)
	if err != nil {
		t.Fatal(err)
	}
	if tail := b[w:]; !bytes.Equal(tail, make([]byte, len(tail))) {
		t.Fatal("the failed writes left bytes after the write offset")
	}
	checkReadable(t, l, pos, msgs)
	if err := l.Flush(); err != nil {
		t.Fatalf("Flush on a full disk: %v", err)
	}

	restore()
	more := testMessage(9999, 1000)
	p, err := l.Append(&more)
	if err != nil || p.PhysOffset != w {
		t.Fatalf("append after the limit was lifted: %+v, %v; want it at %d", p, err, w)
	}
	pos, msgs = append(pos, p), append(msgs, more)
	l.Close()

	l2, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Close()
	if end, err := l2.Recover(0, nil); err != nil || end != p.End() {
		t.Fatalf("Recover = %d, %v; want %d", end, err, p.End())
	}
	checkReadable(t, l2, pos, msgs)
}

// TestDiskFullTmpfs runs out of real space (ENOSPC) on a small tmpfs. It
// needs to be allowed to mount and is skipped otherwise; TestAllocateFailure
// injects the same errors into fallocate everywhere.
func TestDiskFullTmpfs(t *testing.T) {
	const fileSize = 128 << 10
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=192k", "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs: %v: %s", err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", dir, err, out)
		}
	})
	opts := testOptions(t, dir, fileSize)
	l := openLog(t, opts)
	defer l.Close()
	pos, msgs, err := fillUntilFull(t, l, 1000)
	if !errors.Is(err, ErrDiskFull) || !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("append on a full tmpfs: %v, want ErrDiskFull wrapping ENOSPC", err)
	}
	if len(pos) < fileSize/1100 {
		t.Fatalf("only %d records fit before the disk was full", len(pos))
	}
	checkReadable(t, l, pos, msgs)
	if err := l.Close(); err != nil {
		t.Fatalf("Close on a full tmpfs: %v", err)
	}
}
