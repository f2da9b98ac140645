package commitlog

import (
	"errors"
	"os/exec"
	"syscall"
	"testing"
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

// TestDiskFullTmpfs runs out of real space (ENOSPC) on a small tmpfs. It
// needs to be allowed to mount and is skipped otherwise; TestAllocateFailure
// injects the same errors everywhere. (RLIMIT_FSIZE cannot stand in for a
// full disk: it limits the writer's pwrites as much as fallocate.)
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
