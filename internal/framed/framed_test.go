package framed

import (
	"bytes"
	"errors"
	"testing"
)

var (
	sealed   = Format{Name: "sealed", Magic: "TSTS", Version: 3, Oldest: 2, Shape: Sealed}
	prefixed = Format{Name: "prefixed", Magic: "TSTP", Version: 1, Shape: Prefixed}
)

func TestRoundTrip(t *testing.T) {
	for _, f := range []Format{sealed, prefixed} {
		for _, payload := range [][]byte{{}, []byte("x"), bytes.Repeat([]byte("payload"), 100)} {
			b := f.Append([]byte("keep"), payload)
			if string(b[:4]) != "keep" || len(b) != 4+len(payload)+f.Overhead() {
				t.Fatalf("%s: Append wrote %d bytes after the prefix", f.Name, len(b)-4)
			}
			v, got, err := f.Decode(b[4:])
			if err != nil || v != f.Version || !bytes.Equal(got, payload) {
				t.Fatalf("%s: Decode = %d, %q, %v", f.Name, v, got, err)
			}
		}
	}
}

// TestOpenSeal: a Sealed frame written in place, its payload appended
// between Open and Seal, is the frame Append writes.
func TestOpenSeal(t *testing.T) {
	for _, payload := range [][]byte{{}, []byte("x"), bytes.Repeat([]byte("payload"), 100)} {
		b := []byte("keep")
		b = sealed.Seal(append(sealed.Open(b), payload...), 4)
		if want := sealed.Append([]byte("keep"), payload); !bytes.Equal(b, want) {
			t.Fatalf("Open and Seal wrote %x, Append %x", b, want)
		}
	}
	defer func() {
		if recover() == nil {
			t.Fatal("Open of a Prefixed frame did not panic")
		}
	}()
	prefixed.Open(nil)
}

// TestDecodeRefuses lists each way a frame can be wrong and the error it
// must give: everything but an intact newer version is damage.
func TestDecodeRefuses(t *testing.T) {
	withVersion := func(f Format, v uint16) []byte {
		f.Version = v
		return f.Append(nil, []byte("body"))
	}
	good := sealed.Append(nil, []byte("body"))
	goodP := prefixed.Append(nil, []byte("body"))
	flip := func(b []byte, i int) []byte {
		c := bytes.Clone(b)
		c[i] ^= 0x40
		return c
	}
	for _, tc := range []struct {
		name string
		f    Format
		b    []byte
		want error
	}{
		{"empty", sealed, nil, ErrDamaged},
		{"short", sealed, good[:9], ErrDamaged},
		{"truncated", sealed, good[:len(good)-1], ErrDamaged},
		{"magic", sealed, flip(good, 0), ErrDamaged},
		{"version bit flip", sealed, flip(good, 5), ErrDamaged},
		{"payload bit flip", sealed, flip(good, 7), ErrDamaged},
		{"crc bit flip", sealed, flip(good, len(good)-1), ErrDamaged},
		{"other kind", sealed, prefixed.Append(nil, []byte("body")), ErrDamaged},
		{"newer", sealed, withVersion(sealed, 4), ErrNewerVersion},
		{"older than oldest", sealed, withVersion(sealed, 1), ErrDamaged},
		{"prefixed length", prefixed, append(bytes.Clone(goodP), 0), ErrDamaged},
		{"prefixed truncated", prefixed, goodP[:len(goodP)-1], ErrDamaged},
		{"prefixed body flip", prefixed, flip(goodP, len(goodP)-1), ErrDamaged},
		{"prefixed length flip", prefixed, flip(goodP, 7), ErrDamaged},
		{"prefixed newer", prefixed, withVersion(prefixed, 2), ErrNewerVersion},
		{"prefixed zero version", prefixed, withVersion(prefixed, 0), ErrDamaged},
	} {
		if _, _, err := tc.f.Decode(tc.b); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
	if _, _, err := sealed.Decode(withVersion(sealed, 2)); err != nil {
		t.Errorf("the oldest version read: %v", err)
	}
}

func TestReader(t *testing.T) {
	r := NewReader([]byte{1, 0, 2, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0, 4, 'a', 'b'})
	if r.U8() != 1 || r.U16() != 2 || r.U32() != 3 || r.U64() != 4 || string(r.Bytes(2)) != "ab" {
		t.Fatal("fields read wrong")
	}
	if r.Done() != nil || r.Len() != 0 {
		t.Fatalf("Done %v, %d left", r.Done(), r.Len())
	}
	if r.U32() != 0 || !errors.Is(r.Err(), ErrDamaged) {
		t.Fatalf("read past the end: %v", r.Err())
	}
	if r.U8() != 0 || r.Bytes(0) != nil {
		t.Fatal("a short reader stays short")
	}
	r = NewReader([]byte{1, 2})
	if r.Bytes(-1) != nil || r.Err() == nil {
		t.Fatal("negative length accepted")
	}
	r = NewReader([]byte{1, 2})
	r.U8()
	if !errors.Is(r.Done(), ErrDamaged) {
		t.Fatal("bytes left over not reported")
	}
}

// FuzzDecode: no input panics, and what decodes re-encodes to the same bytes.
func FuzzDecode(f *testing.F) {
	for _, fm := range []Format{sealed, prefixed} {
		f.Add(fm.Append(nil, []byte("body")))
		f.Add(fm.Append(nil, nil))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, fm := range []Format{sealed, prefixed} {
			v, payload, err := fm.Decode(b)
			if err != nil {
				if !errors.Is(err, ErrDamaged) && !errors.Is(err, ErrNewerVersion) {
					t.Fatalf("%s: error %v wraps neither sentinel", fm.Name, err)
				}
				continue
			}
			fv := fm
			fv.Version = v
			if again := fv.Append(nil, payload); !bytes.Equal(again, b) {
				t.Fatalf("%s: %x decodes but re-encodes as %x", fm.Name, b, again)
			}
		}
		r := NewReader(b)
		for r.Err() == nil && r.Len() > 0 {
			r.Bytes(int(r.U8()))
		}
	})
}
