package consumequeue

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"

	"github.com/unilog/unilog/internal/framed"
)

// TestTimestampsNeverDecrease: a batch's max timestamp is stored raised
// to the largest before it, so OffsetForTime answers the first offset of
// the first batch whose own max timestamp reaches the time, as Kafka's
// time index does, even when producers' timestamps go back.
func TestTimestampsNeverDecrease(t *testing.T) {
	s := openStore(t, t.TempDir(), 4, 0)
	q := mustQueue(t, s, "t", 0)
	// Batches of 2 offsets with max timestamps 100, 300, 200, 400.
	for i, ts := range []int64{100, 300, 200, 400} {
		off := int64(2 * i)
		if err := q.AppendRange(off, 2, Entry{PhysOffset: off*100 + 1, Size: 10, Timestamp: ts}); err != nil {
			t.Fatal(err)
		}
	}
	for off, want := range []int64{100, 100, 300, 300, 300, 300, 400, 400} {
		if e, err := q.Get(int64(off)); err != nil || e.Timestamp != want {
			t.Errorf("entry %d: %+v %v, timestamp want %d", off, e, err, want)
		}
	}
	for _, tc := range []struct{ ts, want int64 }{
		{0, 0}, {100, 0}, {101, 2}, {200, 2}, {300, 2}, {301, 6}, {400, 6}, {401, 8},
	} {
		if got := q.OffsetForTime(tc.ts); got != tc.want {
			t.Errorf("OffsetForTime(%d) = %d, want %d", tc.ts, got, tc.want)
		}
	}
}

// TestVersion1Readable opens a store whose queue files and journal carry
// version 1 headers (entries holding store times): they are read as they
// are, and new entries continue from their timestamps.
func TestVersion1Readable(t *testing.T) {
	dir := t.TempDir()
	opts := Options{Dir: dir, EntriesPerFile: 8, SmallEntries: 16, Logger: quietLogger()}
	s, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	appendRange(t, mustQueue(t, s, "files", 0), 0, 40) // promoted to files
	appendRange(t, mustQueue(t, s, "small", 0), 0, 3)  // in the journal
	waitPromotions(t, s)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	downgraded := 0
	err = filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		binary.BigEndian.PutUint16(b[4:], 1)
		if filepath.Base(filepath.Dir(path)) == journalDirName {
			binary.BigEndian.PutUint32(b[16:], framed.Checksum(b[:16]))
		} else {
			reseal(b)
		}
		downgraded++
		return os.WriteFile(path, b, 0o644)
	})
	if err != nil || downgraded < 2 {
		t.Fatalf("downgrading %d files: %v", downgraded, err)
	}

	s = openStore(t, dir, 8, 0)
	for _, tc := range []struct {
		topic string
		max   int64
	}{{"files", 40}, {"small", 3}} {
		q := mustQueue(t, s, tc.topic, 0)
		checkRange(t, q, 0, tc.max)
		if err := q.AppendRange(tc.max, 2, Entry{PhysOffset: 1 << 20, Size: 1, Timestamp: 5}); err != nil {
			t.Fatal(err)
		}
		if e, err := q.Get(tc.max + 1); err != nil || e.Timestamp != entryAt(tc.max-1).Timestamp {
			t.Errorf("%s: appended %+v %v, want the timestamp raised to the last one read, %d", tc.topic, e, err, entryAt(tc.max-1).Timestamp)
		}
	}
}
