package consumequeue

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func FuzzDecodeEntry(f *testing.F) {
	var b [EntrySize]byte
	encodeEntry(b[:], 42, Entry{PhysOffset: 4200, Size: 100, Timestamp: 1_700_000_000_000})
	f.Add(b[:], int64(42))
	f.Add(make([]byte, EntrySize), int64(0))
	f.Fuzz(func(t *testing.T, data []byte, off int64) {
		e, ok := decodeEntry(data, off)
		if !ok {
			return
		}
		var re [EntrySize]byte
		encodeEntry(re[:], off, e)
		if string(re[:]) != string(data[:EntrySize]) {
			t.Fatalf("entry %+v does not re-encode to its bytes", e)
		}
	})
}

func FuzzDecodeHeader(f *testing.F) {
	b := make([]byte, HeaderSize)
	encodeHeader(b, header{Base: 600, Start: 601, EntriesPerFile: 300})
	f.Add(b)
	f.Add(make([]byte, HeaderSize))
	f.Fuzz(func(t *testing.T, data []byte) {
		h, err := decodeHeader(data)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error %v is not ErrCorrupt", err)
			}
			return
		}
		re := make([]byte, HeaderSize)
		encodeHeader(re, h)
		if string(re) != string(data[:HeaderSize]) {
			t.Fatalf("header %+v does not re-encode to its bytes", h)
		}
	})
}

// FuzzOpenQueue writes arbitrary bytes as the last file of a queue whose
// first file is intact, opens it and runs every operation on it: nothing
// may panic, the range must stay consistent, and whatever Get returns
// inside it is either a valid entry or ErrCorrupt.
func FuzzOpenQueue(f *testing.F) {
	const epf = 8
	for _, n := range []int64{0, 3, 8} {
		b := make([]byte, HeaderSize+epf*EntrySize)
		encodeHeader(b, header{Base: 8, Start: 8, EntriesPerFile: epf})
		for off := int64(8); off < 8+n; off++ {
			encodeEntry(b[HeaderSize+(off-8)*EntrySize:], off, entryAt(off))
		}
		f.Add(b, entryAt(9).PhysOffset)
	}
	f.Add([]byte{}, int64(0))
	f.Fuzz(func(t *testing.T, data []byte, phys int64) {
		dir := memDir(t)
		buildQueue(t, dir, epf, 2, 8)
		if err := os.WriteFile(filepath.Join(dir, "t", "0", fileName(8)), data, 0o644); err != nil {
			t.Fatal(err)
		}
		s, err := Open(Options{Dir: dir, EntriesPerFile: epf, MaxMapped: 2, SmallEntries: -1, Logger: quietLogger()})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		q, err := s.Queue("t", 0)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("open: %v", err)
			}
			return
		}
		exercise := func() {
			lo, hi := q.MinOffset(), q.MaxOffset()
			if lo > hi {
				t.Fatalf("range [%d, %d)", lo, hi)
			}
			for off := lo - 1; off <= hi; off++ {
				_, err := q.Get(off)
				inside := off >= lo && off < hi
				if inside && err != nil && !errors.Is(err, ErrCorrupt) {
					t.Fatalf("get %d in range: %v", off, err)
				}
				if !inside && !errors.Is(err, ErrOutOfRange) {
					t.Fatalf("get %d out of range: %v", off, err)
				}
			}
			if got := q.OffsetForTime(1003); got < lo || got > hi {
				t.Fatalf("OffsetForTime %d outside [%d, %d]", got, lo, hi)
			}
		}
		exercise()
		if err := q.TruncateFrom(phys); err != nil {
			t.Fatalf("truncate: %v", err)
		}
		exercise()
		if err := q.Append(q.MaxOffset(), entryAt(q.MaxOffset())); err != nil {
			t.Fatalf("append: %v", err)
		}
		if err := s.DeleteBefore(entryAt(5).PhysOffset); err != nil {
			t.Fatalf("delete before: %v", err)
		}
		exercise()
	})
}

// seedJournal is a journal holding every record type.
func seedJournal() []byte {
	b := make([]byte, JournalHeaderSize)
	b = appendDeclare(b, 1, ID{"t", 0}, 0)
	b = appendEntry(b, 1, 0, entryAt(0))
	b = appendEntry(b, 1, 1, entryAt(1))
	b = appendEntry(b, 1, 2, entryAt(2))
	b = appendDeclare(b, 2, ID{"u@0123", 7}, 40)
	b = appendEntry(b, 2, 45, entryAt(45))
	b = appendOffset(b, recTruncate, 1, 2)
	b = appendOffset(b, recSetMin, 1, 1)
	b = appendDeclare(b, 3, ID{"v", 1}, 0)
	b = appendQID(b, recPromoted, 3)
	b = appendQID(b, recRemoved, 2)
	encodeJournalHeader(b, 1, int64(len(b)))
	return b
}

// FuzzJournalReplay replays arbitrary bytes as a journal file: nothing may
// panic, a failure is ErrCorrupt, and the queues a replay yields, written
// out as a compaction writes them, replay to the same queues.
func FuzzJournalReplay(f *testing.F) {
	f.Add(seedJournal())
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := replayBytes(data, 1)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error %v is not ErrCorrupt", err)
			}
			return
		}
		if r.stopped != nil && !errors.Is(r.stopped, ErrCorrupt) {
			t.Fatalf("stop %v is not ErrCorrupt", r.stopped)
		}
		again, err := replayBytes(journalOf(r.queues, 1, r.live), 1)
		if err != nil || again.stopped != nil {
			t.Fatalf("compacted state does not replay: %v, %v", err, again.stopped)
		}
		if len(again.queues) != len(r.queues) || again.live != r.live {
			t.Fatalf("compacted: %d queues of %d bytes, was %d of %d", len(again.queues), again.live, len(r.queues), r.live)
		}
		for qid, sq := range r.queues {
			a := again.queues[qid]
			alo, ahi := a.bounds()
			lo, hi := sq.bounds()
			if a.q.id != sq.q.id || alo != lo || ahi != hi || !slices.Equal(a.snapshot(), sq.snapshot()) {
				t.Fatalf("queue %d changed by compaction", qid)
			}
		}
	})
}
