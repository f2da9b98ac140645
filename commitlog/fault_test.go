package commitlog

import (
	"context"
	"errors"
	"os"
	"runtime/debug"
	"testing"
)

// appendUntil appends 1000-byte messages until one lands at or after phys.
func appendUntil(t *testing.T, l *Log, phys int64) ([]Position, []Message) {
	t.Helper()
	var pos []Position
	var msgs []Message
	for i := 0; len(pos) == 0 || pos[len(pos)-1].PhysOffset < phys; i++ {
		m := testMessage(i, 1000)
		p, err := l.Append(&m)
		if err != nil {
			t.Fatal(err)
		}
		pos, msgs = append(pos, p), append(msgs, m)
	}
	return pos, msgs
}

// TestViewIsReadOnly stores through a View's bytes: the store must fault
// (the reader's mapping is read-only) and the record must stay intact.
func TestViewIsReadOnly(t *testing.T) {
	l := openLog(t, testOptions(t, "", 64<<10))
	defer l.Close()
	m := testMessage(1, 100)
	p, err := l.Append(&m)
	if err != nil {
		t.Fatal(err)
	}
	v, err := l.Read(p.PhysOffset)
	if err != nil {
		t.Fatal(err)
	}
	faulted := func() (faulted bool) {
		defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
		defer func() { faulted = recover() != nil }()
		v.Bytes()[len(v.Bytes())-1] ^= 0xff
		return false
	}()
	v.Release()
	if !faulted {
		t.Fatal("a store through View.Bytes did not fault")
	}
	v, err = l.Read(p.PhysOffset)
	if err != nil {
		t.Fatalf("record after the stray store: %v", err)
	}
	defer v.Release()
	if d := sameMessage(v.Record(), &m); d != "" {
		t.Fatal(d)
	}
}

// TestTruncatedUnderTheLog truncates a sealed file of an open log behind
// its back: reading from it, through Read, a Cursor or a View taken
// before, fails with ErrIO instead of killing the process with SIGBUS,
// and the rest of the log still reads.
func TestTruncatedUnderTheLog(t *testing.T) {
	const fileSize = 64 << 10
	l := openLog(t, testOptions(t, "", fileSize))
	defer l.Close()
	pos, msgs := appendUntil(t, l, 2*fileSize)
	held, err := l.Read(pos[1].PhysOffset)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Release()
	if err := os.Truncate(l.Files()[0].Path, 0); err != nil {
		t.Fatal(err)
	}

	if _, err := l.Read(pos[2].PhysOffset); !errors.Is(err, ErrIO) {
		t.Fatalf("Read in the truncated file: %v, want ErrIO", err)
	}
	if _, err := held.AppendBody(nil); !errors.Is(err, ErrIO) {
		t.Fatalf("AppendBody of a View in the truncated file: %v, want ErrIO", err)
	}
	c := l.Cursor(pos[0].PhysOffset)
	defer c.Close()
	if _, err := c.Next(); !errors.Is(err, ErrIO) {
		t.Fatalf("Cursor in the truncated file: %v, want ErrIO", err)
	}
	var later []Position
	var laterMsgs []Message
	for i, p := range pos {
		if p.PhysOffset >= fileSize {
			later, laterMsgs = append(later, p), append(laterMsgs, msgs[i])
		}
	}
	checkReadable(t, l, later, laterMsgs)
}

// TestCursorAllocations keeps the guarded decode allocation-free.
func TestCursorAllocations(t *testing.T) {
	l := openLog(t, testOptions(t, "", 1<<20))
	defer l.Close()
	for i := 0; i < 200; i++ {
		m := testMessage(i, 100)
		if _, err := l.Append(&m); err != nil {
			t.Fatal(err)
		}
	}
	c := l.Cursor(0)
	defer c.Close()
	if _, err := c.Next(); err != nil { // interns the topics
		t.Fatal(err)
	}
	n := testing.AllocsPerRun(100, func() {
		if r, err := c.Next(); err != nil || r == nil {
			t.Fatalf("Next: %v, %v", r, err)
		}
	})
	if n != 0 {
		t.Fatalf("Cursor.Next allocates %v times per record", n)
	}
}

// TestTruncatedUnderTheWriter truncates the file being written. The next
// append's pwrite succeeds (it extends the file again, over a hole where
// the file's records were), so the flush is what notices: it fails with
// ErrFlushFailed and ErrIO instead of reporting the lost records durable,
// FlushedOffset stays, and the log stops; the earlier files still read.
func TestTruncatedUnderTheWriter(t *testing.T) {
	const fileSize = 64 << 10
	l := openLog(t, testOptions(t, "", fileSize))
	defer l.Close()
	pos, msgs := appendUntil(t, l, fileSize)
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	files := l.Files()
	if err := os.Truncate(files[len(files)-1].Path, 0); err != nil {
		t.Fatal(err)
	}
	flushed := l.FlushedOffset()
	m := testMessage(len(pos), 1000)
	p, err := l.Append(&m)
	if err != nil {
		t.Fatalf("append into the truncated file: %v", err)
	}
	if err := l.Flush(); !errors.Is(err, ErrFlushFailed) || !errors.Is(err, ErrIO) {
		t.Fatalf("flush of the truncated file: %v, want ErrFlushFailed and ErrIO", err)
	}
	if l.FlushedOffset() != flushed {
		t.Fatalf("the failed flush moved the flushed offset from %d to %d", flushed, l.FlushedOffset())
	}
	if err := l.WaitDurable(context.Background(), p.End()); !errors.Is(err, ErrFlushFailed) {
		t.Fatalf("WaitDurable of the append into the truncated file: %v", err)
	}
	if _, err := l.Append(&m); !errors.Is(err, ErrFlushFailed) {
		t.Fatalf("append after the failure: %v", err)
	}
	if !l.Stats().FlushFailed {
		t.Fatal("Stats().FlushFailed not set")
	}
	checkReadable(t, l, pos[:len(pos)-1], msgs[:len(msgs)-1])
}
