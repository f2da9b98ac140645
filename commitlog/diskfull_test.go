package commitlog

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/unilog/unilog/internal/fileops/fileopstest"
	"github.com/unilog/unilog/internal/poll"
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

// TestDiskFullFileSizeLimit makes fallocate of the next file fail with
// EFBIG through RLIMIT_FSIZE (the Go runtime ignores SIGXFSZ), which the
// log reports as ErrDiskFull exactly like ENOSPC.
func TestDiskFullFileSizeLimit(t *testing.T) {
	const fileSize = 64 << 10
	opts := testOptions(t, "", fileSize)
	l := openLog(t, opts)
	defer l.Close()
	poll.Until(t, "the second file preallocated", func() error {
		_, err := os.Stat(filepath.Join(opts.Dir, segmentName(fileSize)))
		return err
	})

	restore := fileopstest.LimitFileSize(t, fileSize/2)

	pos, msgs, err := fillUntilFull(t, l, 1000)
	if !errors.Is(err, ErrDiskFull) {
		t.Fatalf("append on a full disk: %v, want ErrDiskFull", err)
	}
	if last := pos[len(pos)-1]; last.PhysOffset < fileSize {
		t.Fatalf("the preallocated second file was not used: last record at %d", last.PhysOffset)
	}
	if _, err := l.AppendBatch([]Message{testMessage(1, 10), testMessage(2, 1000)}); !errors.Is(err, ErrDiskFull) {
		t.Fatalf("batch on a full disk: %v", err)
	}
	checkReadable(t, l, pos, msgs)
	if err := l.Flush(); err != nil {
		t.Fatalf("Flush on a full disk: %v", err)
	}
	leftovers, _ := filepath.Glob(filepath.Join(opts.Dir, "*"+tmpSuffix))
	if len(leftovers) != 0 {
		t.Fatalf("failed allocation left %v", leftovers)
	}

	restore()
	more := testMessage(9999, 1000)
	p, err := l.Append(&more)
	if err != nil {
		t.Fatalf("append after space came back: %v", err)
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
// needs to be allowed to mount and is skipped otherwise; the file size
// limit test above covers the same path everywhere.
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
