package consumequeue

import (
	"os"
	"testing"
)

// onDisk counts the leading offsets of queue t/0 from 0 whose slots the
// file holds, as a reader of the file (not of the store) sees them: the
// entries stored through the mapping and the tails written out, not the
// tails in memory.
func onDisk(t *testing.T, dir string, epf int) int64 {
	t.Helper()
	var n int64
	for {
		path, pos := slotAt(QueueDir(dir, ID{Topic: "t"}), epf, n)
		b, err := os.ReadFile(path)
		if os.IsNotExist(err) {
			return n
		}
		if err != nil {
			t.Fatal(err)
		}
		if pos+EntrySize > int64(len(b)) {
			return n
		}
		if _, ok := decodeEntry(b[pos:pos+EntrySize], n); !ok {
			return n
		}
		n++
	}
}

// TestTail: single appends wait in the tail until it is full, a Flush or
// Close writes it, and readers see its entries meanwhile; appends of
// several entries, truncations and a spent budget keep the queue what the
// stores through the mapping made it.
func TestTail(t *testing.T) {
	const epf = 1000
	perTail := int64(tailBytes / EntrySize)
	// The ranges case's ranges, after ten single entries: one that joins
	// the tail; one that does not fit, so the tail is written and the
	// range starts the next; one larger than a tail, so the tail is
	// written and the range stored through the mapping. disk is what the
	// file holds after each.
	ranges := []struct{ from, n, disk int64 }{
		{10, 3, 0},
		{13, perTail - 10, 13},
		{perTail + 3, perTail + 1, 2*perTail + 4},
	}
	rangeStart := func(off int64) int64 {
		for _, r := range ranges {
			if off >= r.from && off < r.from+r.n {
				return r.from
			}
		}
		return off
	}
	for _, tc := range []struct {
		name string
		// run appends and checks what the file holds before any Flush;
		// it returns the queue's range after it.
		run func(t *testing.T, s *Store, q *Queue, disk func() int64) (min, max int64)
		// at is the offset whose entryAt each offset holds; nil: its own.
		at func(off int64) int64
	}{
		{"single entries", func(t *testing.T, s *Store, q *Queue, disk func() int64) (int64, int64) {
			appendRange(t, q, 0, perTail-1)
			if got := disk(); got != 0 {
				t.Fatalf("%d entries on disk before the tail is full, want 0", got)
			}
			appendRange(t, q, perTail-1, perTail+8)
			if got := disk(); got != perTail {
				t.Fatalf("%d entries on disk after a full tail, want %d", got, perTail)
			}
			return 0, perTail + 8
		}, nil},
		{"ranges", func(t *testing.T, s *Store, q *Queue, disk func() int64) (int64, int64) {
			appendRange(t, q, 0, 10)
			for _, r := range ranges {
				e := entryAt(r.from)
				if err := q.AppendRange(r.from, r.n, e); err != nil {
					t.Fatal(err)
				}
				if got := disk(); got != r.disk {
					t.Fatalf("%d entries on disk after the range [%d, %d), want %d", got, r.from, r.from+r.n, r.disk)
				}
				for off := r.from; off < r.from+r.n; off++ {
					if got, err := q.Get(off); err != nil || got != e {
						t.Fatalf("get %d = %+v, %v, want %+v", off, got, err, e)
					}
				}
			}
			last := ranges[len(ranges)-1]
			return 0, last.from + last.n
		}, rangeStart},
		{"truncated within the tail", func(t *testing.T, s *Store, q *Queue, disk func() int64) (int64, int64) {
			appendRange(t, q, 0, perTail+20)
			if err := q.TruncateFrom(entryAt(perTail + 15).PhysOffset); err != nil {
				t.Fatal(err)
			}
			if q.MaxOffset() != perTail+15 {
				t.Fatalf("MaxOffset %d after the cut, want %d", q.MaxOffset(), perTail+15)
			}
			appendRange(t, q, perTail+15, perTail+18)
			return 0, perTail + 18
		}, nil},
		{"truncated before the tail", func(t *testing.T, s *Store, q *Queue, disk func() int64) (int64, int64) {
			appendRange(t, q, 0, perTail+8)
			if err := q.TruncateFrom(entryAt(20).PhysOffset); err != nil {
				t.Fatal(err)
			}
			if got := disk(); got != 20 {
				t.Fatalf("%d entries on disk after a cut at 20, want 20", got)
			}
			appendRange(t, q, 20, 25)
			return 0, 25
		}, nil},
		{"no tail left", func(t *testing.T, s *Store, q *Queue, disk func() int64) (int64, int64) {
			storeThroughMapping(s)
			appendRange(t, q, 0, 5)
			if got := disk(); got != 5 {
				t.Fatalf("%d entries on disk, want all 5 stored through the mapping", got)
			}
			return 0, 5
		}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			s := openStore(t, dir, epf, 0)
			everyFileCold(s)
			q := mustQueue(t, s, "t", 0)
			disk := func() int64 { return onDisk(t, dir, epf) }
			lo, hi := tc.run(t, s, q, disk)
			at := tc.at
			if at == nil {
				at = func(off int64) int64 { return off }
			}
			check := func(q *Queue, hi int64) {
				t.Helper()
				if q.MinOffset() != lo || q.MaxOffset() != hi {
					t.Fatalf("range [%d, %d), want [%d, %d)", q.MinOffset(), q.MaxOffset(), lo, hi)
				}
				for off := lo; off < hi; off++ {
					if e, err := q.Get(off); err != nil || e != entryAt(at(off)) {
						t.Fatalf("get %d = %+v, %v, want %+v", off, e, err, entryAt(at(off)))
					}
				}
			}
			check(q, hi)
			if got := q.OffsetForTime(entryAt(at(hi - 1)).Timestamp); got > hi-1 {
				t.Fatalf("OffsetForTime of the last entry's time = %d, past it", got)
			}
			if err := s.Flush(); err != nil {
				t.Fatal(err)
			}
			if got := disk(); got != hi {
				t.Fatalf("%d entries on disk after Flush, want %d", got, hi)
			}
			for off := hi; off < hi+3; off++ {
				if err := q.Append(off, entryAt(at(off))); err != nil {
					t.Fatal(err)
				}
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			if got := disk(); got != hi+3 {
				t.Fatalf("%d entries on disk after Close, want %d", got, hi+3)
			}
			s2 := openStore(t, dir, epf, 0)
			check(mustQueue(t, s2, "t", 0), hi+3)
			if n := s2.tails.held(); n != 0 {
				t.Fatalf("%d tails held by a store that appended nothing", n)
			}
		})
	}
}

// TestTailBudget: tails are given back when written, cut or removed, so
// the budget counts only those holding entries.
func TestTailBudget(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, 1000, 0)
	everyFileCold(s)
	for p := range int32(10) {
		appendRange(t, mustQueue(t, s, "t", p), 0, 3)
	}
	if n := s.tails.held(); n != 10 {
		t.Fatalf("%d tails for 10 queues with unwritten entries", n)
	}
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	if n := s.tails.held(); n != 0 {
		t.Fatalf("%d tails after Flush", n)
	}
	appendRange(t, mustQueue(t, s, "t", 0), 3, 5)
	if err := s.DeleteTopic("t"); err != nil {
		t.Fatal(err)
	}
	if n := s.tails.held(); n != 0 {
		t.Fatalf("%d tails after the topic's deletion", n)
	}
}
