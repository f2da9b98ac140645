package commitlog

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"github.com/unilog/unilog/internal/framed"
)

// TestEncodeBodyCRC: a record whose CRC is derived from the body CRC its
// caller vouches for is byte for byte the record encoded without it, on
// both sides of combineMin; a wrong vouched CRC stores a record Decode
// refuses.
func TestEncodeBodyCRC(t *testing.T) {
	for _, size := range []int{8, 100, combineMin - 1, combineMin + 20, 64 << 10} {
		for _, from := range []int{8, min(21, size), max(size/2, 8), size} {
			for _, flags := range []uint16{0, FlagStampOffset} {
				t.Run(fmt.Sprintf("body=%d/from=%d/flags=%d", size, from, flags), func(t *testing.T) {
					m := testMessage(size, size)
					m.Flags = flags
					m.Count = 3
					plain := Encode(nil, &m, 4096, 77, 123)
					m.BodyCRCFrom, m.BodyCRC = int32(from), framed.Checksum(m.Body[from:])
					if _, err := validate(&m); err != nil {
						t.Fatal(err)
					}
					if got := Encode(nil, &m, 4096, 77, 123); !bytes.Equal(got, plain) {
						t.Fatalf("encoded with the body CRC: CRC %08x, without %08x", be.Uint32(got[offCRC:]), be.Uint32(plain[offCRC:]))
					}
					m.BodyCRC++
					_, err := Decode(Encode(nil, &m, 4096, 77, 123))
					if derived := len(m.Body)-from >= combineMin; derived != (err != nil) || err != nil && !errors.Is(err, ErrCorrupt) {
						t.Fatalf("a wrong body CRC over %d bytes: Decode error %v", len(m.Body)-from, err)
					}
				})
			}
		}
	}
}

// TestAppendBodyCRCInvalid: a vouched range outside the body, or one the
// offset stamp would change, is refused before anything is stored.
func TestAppendBodyCRCInvalid(t *testing.T) {
	l := openLog(t, testOptions(t, "", 1<<20))
	defer l.Close()
	for _, tc := range []struct {
		name  string
		from  int32
		flags uint16
	}{
		{"negative", -1, 0},
		{"past the body", 101, 0},
		{"over the offset stamp", 7, FlagStampOffset},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := testMessage(0, 100)
			m.Flags, m.BodyCRCFrom = tc.flags, tc.from
			if _, err := l.Append(&m); !errors.Is(err, ErrInvalid) {
				t.Fatalf("Append = %v, want ErrInvalid", err)
			}
			if l.WriteOffset() != 0 {
				t.Fatalf("a refused append moved the write offset to %d", l.WriteOffset())
			}
		})
	}
}
