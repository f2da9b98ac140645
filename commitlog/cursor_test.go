package commitlog

import (
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestCursorReadsInOrder tails a log over file rolls (markers and short
// zero tails) while it grows, and compares every record with what was
// appended.
func TestCursorReadsInOrder(t *testing.T) {
	const fileSize = 8192
	l := openLog(t, testOptions(t, "", fileSize))
	defer l.Close()
	c := l.Cursor(l.MinOffset())
	defer c.Close()
	if r, err := c.Next(); r != nil || err != nil {
		t.Fatalf("Next on an empty log = %v, %v", r, err)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	var msgs []Message
	var pos []Position
	read := 0
	for round := 0; round < 20; round++ {
		for range 1 + rng.IntN(8) {
			m := testMessage(len(msgs), 1+rng.IntN(2000))
			p, err := l.Append(&m)
			if err != nil {
				t.Fatal(err)
			}
			msgs, pos = append(msgs, m), append(pos, p)
		}
		for {
			r, err := c.Next()
			if err != nil {
				t.Fatalf("Next at %d: %v", c.Offset(), err)
			}
			if r == nil {
				break
			}
			if read == len(msgs) {
				t.Fatalf("record at %d beyond the %d appended", r.PhysOffset, len(msgs))
			}
			if d := sameMessage(r, &msgs[read]); d != "" || r.Position() != pos[read] {
				t.Fatalf("record %d: %s (position %+v, want %+v)", read, d, r.Position(), pos[read])
			}
			if c.Offset() != pos[read].End() {
				t.Fatalf("Offset %d after record %d, want %d", c.Offset(), read, pos[read].End())
			}
			read++
		}
		if read != len(msgs) {
			t.Fatalf("round %d: read %d of %d records", round, read, len(msgs))
		}
	}
	if len(l.Files()) < 3 {
		t.Fatalf("only %d files: the test never rolled", len(l.Files()))
	}
	// Back to an earlier record in another file.
	c.Reset(pos[1].PhysOffset)
	if r, err := c.Next(); err != nil || r.Position() != pos[1] {
		t.Fatalf("after Reset: %v, %v; want %+v", r, err, pos[1])
	}
}

// TestCursorOutOfRange: a cursor behind retention gets ErrOutOfRange; one
// already inside a deleted file keeps reading it.
func TestCursorOutOfRange(t *testing.T) {
	const fileSize = 8192
	opts := testOptions(t, "", fileSize)
	opts.RetentionBytes = 1
	l := openLog(t, opts)
	defer l.Close()
	var pos []Position
	for len(l.Files()) < 4 {
		m := testMessage(len(pos), 1000)
		p, err := l.Append(&m)
		if err != nil {
			t.Fatal(err)
		}
		pos = append(pos, p)
	}
	inside := l.Cursor(0)
	defer inside.Close()
	if _, err := inside.Next(); err != nil {
		t.Fatal(err)
	}
	behind := l.Cursor(0)
	defer behind.Close()
	if n := l.retain(time.Now()); n != 3 {
		t.Fatalf("retention deleted %d files, want 3", n)
	}
	if r, err := behind.Next(); !errors.Is(err, ErrOutOfRange) {
		t.Fatalf("Next below MinOffset = %v, %v; want ErrOutOfRange", r, err)
	}
	if r, err := inside.Next(); err != nil || r.Position() != pos[1] {
		t.Fatalf("Next in a deleted file still held = %v, %v; want %+v", r, err, pos[1])
	}
}

// TestCursorVerifiesBeforeRecovery: records before the offset Recover
// started from were not checked by it, so the cursor checks their CRC.
func TestCursorVerifiesBeforeRecovery(t *testing.T) {
	const fileSize = 64 << 10
	p := writePristine(t, fileSize, 20)
	path := filepath.Join(p.dir, segmentName(0))
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b[p.pos[5].End()-1] ^= 0x10 // last body byte of record 5
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := Open(testOptions(t, p.dir, fileSize))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if end, err := l.Recover(p.pos[10].PhysOffset, nil); err != nil || end != p.end {
		t.Fatalf("Recover = %d, %v; want %d", end, err, p.end)
	}
	c := l.Cursor(0)
	defer c.Close()
	for i := 0; i < 5; i++ {
		if r, err := c.Next(); err != nil || r.Position() != p.pos[i] {
			t.Fatalf("record %d: %v, %v", i, r, err)
		}
	}
	if r, err := c.Next(); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("damaged record 5 = %v, %v; want ErrCorrupt", r, err)
	}
	if c.Offset() != p.pos[5].PhysOffset {
		t.Fatalf("Offset %d after a failed Next, want %d", c.Offset(), p.pos[5].PhysOffset)
	}
}
