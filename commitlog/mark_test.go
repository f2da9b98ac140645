package commitlog

import (
	"encoding/binary"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/unilog/unilog/internal/framed"
)

func TestFlushedMarkFollowsFlushes(t *testing.T) {
	opts := testOptions(t, "", 16<<10)
	if _, err := ReadFlushedMark(opts.Dir); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("mark of a directory without a log: %v, want fs.ErrNotExist", err)
	}
	l := openLog(t, opts)
	for round := range 3 {
		for i := range 20 {
			m := testMessage(round*20+i, 300)
			if _, err := l.Append(&m); err != nil {
				t.Fatal(err)
			}
		}
		if err := l.Flush(); err != nil {
			t.Fatal(err)
		}
		if mark, err := ReadFlushedMark(opts.Dir); err != nil || mark != l.FlushedOffset() {
			t.Fatalf("round %d: mark %d, %v; flushed offset %d", round, mark, err, l.FlushedOffset())
		}
	}
	end := l.WriteOffset()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if mark, err := ReadFlushedMark(opts.Dir); err != nil || mark != end {
		t.Fatalf("after Close: mark %d, %v; want %d", mark, err, end)
	}
}

// TestRecoverHoldsToOwnMark damages a closed log before its end: the log's
// own mark refuses the cut although the caller passes no Flushed, and after
// a cut with RecoverTruncate the mark follows the new end so that the next
// start opens.
func TestRecoverHoldsToOwnMark(t *testing.T) {
	const fileSize = 16 << 10
	p := writePristine(t, fileSize, 60)
	dir := p.copyTo(t)
	b, err := os.ReadFile(filepath.Join(p.dir, markName))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, markName), b, 0o644); err != nil {
		t.Fatal(err)
	}
	victim := p.pos[len(p.pos)-3]
	flipByte(t, dir, fileSize, victim.PhysOffset+30, 0x11)

	opts := testOptions(t, dir, fileSize)
	l, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	if end, err := l.Recover(0, nil); !errors.Is(err, ErrDamaged) {
		t.Fatalf("Recover = %d, %v; want ErrDamaged from the log's own mark", end, err)
	}
	l.Close()

	opts.RecoverTruncate = true
	l, err = Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	if end, err := l.Recover(0, nil); err != nil || end != victim.PhysOffset {
		t.Fatalf("Recover with RecoverTruncate = %d, %v; want %d", end, err, victim.PhysOffset)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	opts.RecoverTruncate = false
	l, err = Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if end, err := l.Recover(0, nil); err != nil || end != victim.PhysOffset {
		t.Fatalf("Recover after the cut = %d, %v; want %d", end, err, victim.PhysOffset)
	}
}

func TestDecodeMarkRejects(t *testing.T) {
	good := encodeMark(make([]byte, markSize), 12345)
	if off, err := decodeMark(good); err != nil || off != 12345 {
		t.Fatalf("decodeMark(encodeMark(12345)) = %d, %v", off, err)
	}
	withCRC := func(f func(b []byte)) []byte {
		b := append([]byte(nil), good...)
		f(b)
		binary.BigEndian.PutUint32(b[16:], framed.Checksum(b[:16]))
		return b
	}
	for name, b := range map[string][]byte{
		"short":           good[:19],
		"long":            append(append([]byte(nil), good...), 0),
		"bad crc":         append(append([]byte(nil), good[:19]...), good[19]^1),
		"bad magic":       withCRC(func(b []byte) { b[0] ^= 1 }),
		"newer version":   withCRC(func(b []byte) { b[5] = 2 }),
		"reserved set":    withCRC(func(b []byte) { b[7] = 1 }),
		"negative offset": withCRC(func(b []byte) { b[8] = 0x80 }),
	} {
		if off, err := decodeMark(b); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: decodeMark = %d, %v; want ErrCorrupt", name, off, err)
		}
	}
}

// TestUnreadableMarkFallsBack: a damaged mark file is not trusted; recovery
// uses the caller's mark and rewrites the file.
func TestUnreadableMarkFallsBack(t *testing.T) {
	const fileSize = 16 << 10
	p := writePristine(t, fileSize, 30)
	dir := p.copyTo(t)
	if err := os.WriteFile(filepath.Join(dir, markName), []byte("garbage"), 0o644); err != nil {
		t.Fatal(err)
	}
	l := openLog(t, testOptions(t, dir, fileSize))
	end := l.WriteOffset()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if end != p.end {
		t.Fatalf("recovered to %d, want %d", end, p.end)
	}
	if mark, err := ReadFlushedMark(dir); err != nil || mark != end {
		t.Fatalf("mark after recovery %d, %v; want %d", mark, err, end)
	}
}
