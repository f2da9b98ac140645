package commitlog

import (
	"errors"
	"testing"
)

// TestReadChecksUntrustedCRCs: Read checks the CRC of a record before
// where Recover started (written by an earlier run and not scanned since)
// and not of one after (scanned by Recover or written by this process,
// as Cursor); a damaged header is refused either way.
func TestReadChecksUntrustedCRCs(t *testing.T) {
	const fileSize = 1 << 20
	opts := testOptions(t, "", fileSize)
	l := openLog(t, opts)
	var ms []Message
	for i := range 3 {
		ms = append(ms, testMessage(i, 200))
	}
	pos, err := l.AppendBatch(ms)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	flipByte(t, opts.Dir, fileSize, pos[0].End()-1, 0x40) // the body of the first

	l, err = Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if _, err := l.Recover(pos[1].PhysOffset, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Read(pos[0].PhysOffset); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("the damaged record before the recovery's start: %v, want ErrCorrupt", err)
	}
	v, err := l.Read(pos[1].PhysOffset)
	if err != nil {
		t.Fatalf("a record the recovery scanned: %v", err)
	}
	if d := sameMessage(v.Record(), &ms[1]); d != "" {
		t.Fatal(d)
	}
	v.Release()
	flipByte(t, opts.Dir, fileSize, pos[2].PhysOffset+offMagic, 0x01)
	if _, err := l.Read(pos[2].PhysOffset); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("a trusted record with a damaged magic: %v, want ErrCorrupt", err)
	}
}
