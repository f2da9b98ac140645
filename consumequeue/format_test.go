package consumequeue

import (
	"encoding/binary"
	"errors"
	"testing"

	"github.com/unilog/unilog/internal/framed"
)

func TestEntryRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		off  int64
		e    Entry
	}{
		{"first", 0, Entry{PhysOffset: 0, Size: 1, Timestamp: 0}},
		{"typical", 12345, Entry{PhysOffset: 1 << 33, Size: 1024, Timestamp: 1_700_000_000_000}},
		{"max values", 1<<63 - 1, Entry{PhysOffset: 1<<63 - 1, Size: 1<<31 - 1, Timestamp: 1<<63 - 1}},
		{"negative timestamp", 7, Entry{PhysOffset: 9, Size: 3, Timestamp: -5}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b [EntrySize]byte
			encodeEntry(b[:], tt.off, tt.e)
			got, ok := decodeEntry(b[:], tt.off)
			if !ok || got != tt.e {
				t.Fatalf("decode = %+v, %v; want %+v", got, ok, tt.e)
			}
			if _, ok := decodeEntry(b[:], tt.off+1); ok {
				t.Fatal("entry decoded at the wrong offset")
			}
			if _, ok := decodeEntry(b[:EntrySize-1], tt.off); ok {
				t.Fatal("short slot decoded")
			}
			for i := range b {
				c := b
				c[i] ^= 0x10
				if _, ok := decodeEntry(c[:], tt.off); ok {
					t.Fatalf("bit flip in byte %d not detected", i)
				}
			}
		})
	}
}

func TestEntryNotWritten(t *testing.T) {
	tests := []struct {
		name string
		e    Entry
	}{
		{"zero size", Entry{PhysOffset: 10, Size: 0}},
		{"negative size", Entry{PhysOffset: 10, Size: -1}},
		{"negative phys", Entry{PhysOffset: -1, Size: 10}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b [EntrySize]byte
			encodeEntry(b[:], 3, tt.e)
			if _, ok := decodeEntry(b[:], 3); ok {
				t.Fatal("invalid entry decoded as written")
			}
		})
	}
	var zero [EntrySize]byte
	if _, ok := decodeEntry(zero[:], 0); ok {
		t.Fatal("all-zero slot decoded as written")
	}
}

func TestHeader(t *testing.T) {
	good := header{Base: 600, Start: 601, EntriesPerFile: 300}
	tests := []struct {
		name   string
		mutate func(b []byte)
		h      header
		ok     bool
	}{
		{"round trip", nil, good, true},
		{"start at base", nil, header{Base: 0, Start: 0, EntriesPerFile: 1}, true},
		{"start at end", nil, header{Base: 300, Start: 600, EntriesPerFile: 300}, true},
		{"crc", func(b []byte) { b[29] ^= 1 }, good, false},
		{"magic", func(b []byte) { b[0] = 'X'; reseal(b) }, good, false},
		{"version 1 (store times)", func(b []byte) { b[5] = 1; reseal(b) }, good, true},
		{"version 3", func(b []byte) { b[5] = 3; reseal(b) }, good, false},
		{"version 0", func(b []byte) { b[5] = 0; reseal(b) }, good, false},
		{"entry size", func(b []byte) { b[7] = 20; reseal(b) }, good, false},
		{"zero entries per file", nil, header{Base: 0, Start: 0, EntriesPerFile: 0}, false},
		{"base not multiple", nil, header{Base: 10, Start: 10, EntriesPerFile: 300}, false},
		{"negative base", nil, header{Base: -300, Start: -300, EntriesPerFile: 300}, false},
		{"start before base", nil, header{Base: 300, Start: 299, EntriesPerFile: 300}, false},
		{"start past end", nil, header{Base: 300, Start: 601, EntriesPerFile: 300}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := make([]byte, HeaderSize)
			encodeHeader(b, tt.h)
			if tt.mutate != nil {
				tt.mutate(b)
			}
			got, err := decodeHeader(b)
			if tt.ok {
				if err != nil || got != tt.h {
					t.Fatalf("decode = %+v, %v; want %+v", got, err, tt.h)
				}
				return
			}
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("decode = %+v, %v; want ErrCorrupt", got, err)
			}
		})
	}
	if _, err := decodeHeader(make([]byte, HeaderSize-1)); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("short header: %v", err)
	}
}

// reseal recomputes a header's CRC after a test changed a field.
func reseal(b []byte) {
	binary.BigEndian.PutUint32(b[28:], framed.Checksum(b[:28]))
}

func TestSizeFor(t *testing.T) {
	tests := []struct {
		slot, epf int
		want      int64
	}{
		{-1, 300_000, 4096},
		{0, 300_000, 4096},
		{126, 300_000, 4096},  // 32+127*32 = 4096
		{127, 300_000, 8192},  // one more slot doubles
		{254, 300_000, 8192},  // 32+255*32 = 8192
		{255, 300_000, 16384}, // and again
		{299_999, 300_000, 32 + 300_000*32},
		{-1, 4, 32 + 4*32}, // small files are never larger than full
		{3, 4, 32 + 4*32},
	}
	for _, tt := range tests {
		if got := sizeFor(tt.slot, tt.epf); got != tt.want {
			t.Errorf("sizeFor(%d, %d) = %d, want %d", tt.slot, tt.epf, got, tt.want)
		}
	}
}
