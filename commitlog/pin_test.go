package commitlog

import (
	"bytes"
	"testing"
)

// TestPinFileRange: a pinned record's body, and any part of it, is found
// in the log file at the offset FileRange gives; bytes not in the file's
// mapping are not.
func TestPinFileRange(t *testing.T) {
	l := openLog(t, testOptions(t, "", 64<<10))
	defer l.Close()
	pos, msgs := appendUntil(t, l, 100<<10) // into the second file
	for _, i := range []int{0, 3, len(pos) - 1} {
		v, err := l.Read(pos[i].PhysOffset)
		if err != nil {
			t.Fatal(err)
		}
		body := v.Record().Body
		if !bytes.Equal(body, msgs[i].Body) {
			t.Fatalf("record %d: body differs", i)
		}
		p := v.Pin()
		for _, b := range [][]byte{body, body[10:20], body[len(body)-1:]} {
			f, off, ok := p.FileRange(b)
			if !ok {
				t.Fatalf("record %d: a slice of its body is not in its file", i)
			}
			got := make([]byte, len(b))
			if _, err := f.ReadAt(got, off); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, b) {
				t.Fatalf("record %d: the file at %d holds other bytes", i, off)
			}
		}
		if _, _, ok := p.FileRange(append([]byte(nil), body...)); ok {
			t.Fatalf("record %d: a copy of the body was found in the file", i)
		}
		if _, _, ok := p.FileRange(nil); ok {
			t.Fatal("an empty slice was found in the file")
		}
		p.Release()
		if _, _, ok := p.FileRange(body); ok {
			t.Fatal("a released pin still gives its file")
		}
	}
	var zero Pin
	if _, _, ok := zero.FileRange([]byte("x")); ok {
		t.Fatal("the zero Pin gives a file")
	}
}
