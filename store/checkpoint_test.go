package store

import (
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/unilog/unilog/internal/fileops"
	"github.com/unilog/unilog/internal/framed"
)

func TestCheckpointRoundTrip(t *testing.T) {
	dir := t.TempDir()
	want := Checkpoint{CommitLogFlushed: 1 << 33, Dispatched: 12345, Time: time.Unix(1700000000, 123456789).UTC()}
	if err := writeCheckpoint(fileops.OS{}, dir, want); err != nil {
		t.Fatal(err)
	}
	got, err := ReadCheckpoint(filepath.Join(dir, checkpointName))
	if err != nil {
		t.Fatal(err)
	}
	if !got.Time.Equal(want.Time) || got.CommitLogFlushed != want.CommitLogFlushed || got.Dispatched != want.Dispatched {
		t.Fatalf("read %+v, wrote %+v", got, want)
	}
	if _, err := os.Stat(filepath.Join(dir, checkpointName+".tmp")); err == nil {
		t.Fatal("temporary file left behind")
	}
}

func TestDecodeCheckpointRejects(t *testing.T) {
	good := encodeCheckpoint(Checkpoint{CommitLogFlushed: 100, Dispatched: 50, Time: time.Unix(1, 0)})
	mod := func(f func(b []byte)) []byte {
		b := append([]byte(nil), good...)
		f(b)
		return b
	}
	// reseal recomputes the CRC so that the field check itself is reached.
	reseal := func(f func(b []byte)) []byte {
		return mod(func(b []byte) {
			f(b)
			binary.BigEndian.PutUint32(b[32:], framed.Checksum(b[:32]))
		})
	}
	for _, tc := range []struct {
		name string
		b    []byte
		want error
	}{
		{"empty", nil, ErrCorrupt},
		{"short", good[:35], ErrCorrupt},
		{"long", append(append([]byte(nil), good...), 0), ErrCorrupt},
		{"bad magic", reseal(func(b []byte) { b[0] = 'X' }), ErrCorrupt},
		{"flipped bit", mod(func(b []byte) { b[17] ^= 4 }), ErrCorrupt},
		{"bad crc", mod(func(b []byte) { b[35] ^= 1 }), ErrCorrupt},
		{"newer version", reseal(func(b []byte) { b[5] = 2 }), ErrUnsupportedVersion},
		{"reserved set", reseal(func(b []byte) { b[7] = 1 }), ErrCorrupt},
		{"dispatched past flushed", reseal(func(b []byte) { binary.BigEndian.PutUint64(b[16:], 101) }), ErrCorrupt},
		{"negative offset", reseal(func(b []byte) { binary.BigEndian.PutUint64(b[8:], 1<<63) }), ErrCorrupt},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := decodeCheckpoint(tc.b); !errors.Is(err, tc.want) {
				t.Fatalf("decode: %v, want %v", err, tc.want)
			}
		})
	}
	if _, err := decodeCheckpoint(good); err != nil {
		t.Fatalf("good checkpoint: %v", err)
	}
}

// TestCorruptCheckpointRecovers shows that a damaged checkpoint costs a
// full scan and nothing else.
func TestCorruptCheckpointRecovers(t *testing.T) {
	dir := t.TempDir()
	d := mustOpen(t, testOptions(dir))
	recs := appendN(t, d, 31, 0, 100)
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, checkpointName), []byte("garbage"), 0o644); err != nil {
		t.Fatal(err)
	}
	d = mustOpen(t, testOptions(dir))
	defer d.Close()
	for _, a := range recs {
		checkReadable(t, d, a)
	}
}

func FuzzDecodeCheckpoint(f *testing.F) {
	f.Add(encodeCheckpoint(Checkpoint{CommitLogFlushed: 4096, Dispatched: 4000, Time: time.Unix(1700000000, 0)}))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := decodeCheckpoint(b)
		if err != nil {
			return
		}
		// Whatever decodes must be consistent and survive a round trip.
		if c.Dispatched < 0 || c.Dispatched > c.CommitLogFlushed {
			t.Fatalf("accepted inconsistent checkpoint %+v", c)
		}
		again, err := decodeCheckpoint(encodeCheckpoint(c))
		if err != nil || again != c {
			t.Fatalf("round trip of %+v: %+v, %v", c, again, err)
		}
	})
}
