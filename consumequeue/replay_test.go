package consumequeue

import (
	"errors"
	"maps"
	"testing"
)

// TestReplayRecords: replay's checks of the record sequence, each record
// under the synced mark so that a refused one is damage (ErrCorrupt), not
// a torn tail: a partition declared twice while live, an entry of a queue
// promoted before it (the queue of the last record is remembered, and
// must be forgotten at its promotion), and, allowed, a partition declared
// again after its promotion and entries of two queues interleaved.
func TestReplayRecords(t *testing.T) {
	a, b := ID{Topic: "t", Partition: 1}, ID{Topic: "t", Partition: 2}
	for _, tc := range []struct {
		name    string
		records func([]byte) []byte
		corrupt bool
		want    map[ID]int64 // MaxOffset of each live queue
	}{
		{name: "declared twice", corrupt: true, records: func(j []byte) []byte {
			j = appendDeclare(j, 1, a, 0)
			j = appendEntry(j, 1, 0, entryAt(0))
			return appendDeclare(j, 2, a, 0)
		}},
		{name: "entry after promotion", corrupt: true, records: func(j []byte) []byte {
			j = appendDeclare(j, 1, a, 0)
			j = appendEntry(j, 1, 0, entryAt(0))
			j = appendQID(j, recPromoted, 1)
			return appendEntry(j, 1, 1, entryAt(1))
		}},
		{name: "declared again after promotion", want: map[ID]int64{a: 6}, records: func(j []byte) []byte {
			j = appendDeclare(j, 1, a, 0)
			j = appendEntry(j, 1, 0, entryAt(0))
			j = appendQID(j, recPromoted, 1)
			j = appendDeclare(j, 2, a, 5)
			return appendEntry(j, 2, 5, entryAt(5))
		}},
		{name: "a topic's last queue promoted", want: map[ID]int64{a: 1}, records: func(j []byte) []byte {
			j = appendDeclare(j, 1, a, 0)
			j = appendEntry(j, 1, 0, entryAt(0))
			j = appendDeclare(j, 2, ID{Topic: "u", Partition: 0}, 0)
			return appendQID(j, recPromoted, 2)
		}},
		{name: "interleaved", want: map[ID]int64{a: 2, b: 3}, records: func(j []byte) []byte {
			j = appendDeclare(j, 1, a, 0)
			j = appendEntry(j, 1, 0, entryAt(0))
			j = appendDeclare(j, 2, b, 1)
			j = appendEntry(j, 2, 1, entryAt(1))
			j = appendEntry(j, 1, 1, entryAt(1))
			return appendEntry(j, 2, 2, entryAt(2))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j := tc.records(make([]byte, JournalHeaderSize))
			encodeJournalHeader(j, 1, int64(len(j)))
			r, err := replayJournal(j, 1)
			if tc.corrupt {
				if !errors.Is(err, ErrCorrupt) {
					t.Fatalf("replay: %v, want ErrCorrupt", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			counts := map[string]int{}
			for _, sq := range r.queues {
				counts[sq.id.Topic]++
			}
			if !maps.Equal(counts, r.topics) {
				t.Errorf("queues per topic %v, counted %v", counts, r.topics)
			}
			if state := int64(len(journalOf(r.queues, 1, 0)) - JournalHeaderSize); r.live != state {
				t.Errorf("live bytes %d, the queues' state takes %d", r.live, state)
			}
			got := map[ID]int64{}
			for _, sq := range r.queues {
				lo, hi := sq.bounds()
				got[sq.id] = hi
				for off := lo; off < hi; off++ {
					if e, ok := sq.get(off); !ok || e != entryAt(off) {
						t.Errorf("%v at %d: %+v, want %+v", sq.id, off, e, entryAt(off))
					}
				}
			}
			if len(got) != len(tc.want) {
				t.Fatalf("live queues %v, want %v", got, tc.want)
			}
			for id, hi := range tc.want {
				if got[id] != hi {
					t.Errorf("%v: MaxOffset %d, want %d", id, got[id], hi)
				}
			}
		})
	}
}

// BenchmarkReplay100k replays a journal of 100,000 queues of two entries,
// laid out as the first produce of make bench-million leaves it: each
// queue declared with its first entry, the second entries after all of
// them.
func BenchmarkReplay100k(b *testing.B) {
	const queues = 100_000
	j := make([]byte, JournalHeaderSize)
	for q := range uint32(queues) {
		j = appendDeclare(j, q+1, ID{Topic: "m0", Partition: int32(q)}, 0)
		j = appendEntry(j, q+1, 0, entryAt(0))
	}
	for q := range uint32(queues) {
		j = appendEntry(j, q+1, 1, entryAt(1))
	}
	encodeJournalHeader(j, 1, int64(len(j)))
	b.SetBytes(int64(len(j)))
	for b.Loop() {
		if _, err := replayJournal(j, 1); err != nil {
			b.Fatal(err)
		}
	}
}

// TestCountDeclares: the count that sizes replay's maps reads frames only,
// and stops at a frame that cannot be a record or runs past the bytes.
func TestCountDeclares(t *testing.T) {
	a, b := ID{Topic: "t", Partition: 1}, ID{Topic: "t", Partition: 2}
	j := make([]byte, JournalHeaderSize)
	j = appendDeclare(j, 1, a, 0)
	j = appendEntry(j, 1, 0, entryAt(0))
	j = appendDeclare(j, 2, b, 0)
	j = appendQID(j, recPromoted, 1)
	whole := len(j)
	j = appendDeclare(j, 3, a, 1)
	for _, tc := range []struct {
		name string
		b    []byte
		want int
	}{
		{"header only", j[:JournalHeaderSize], 0},
		{"all records", j, 3},
		{"last record cut", j[:len(j)-1], 2},
		{"garbage length after the records", append(j[:whole:whole], 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0, recDeclare), 2},
	} {
		if got := countDeclares(tc.b); got != tc.want {
			t.Errorf("%s: %d declares, want %d", tc.name, got, tc.want)
		}
	}
}
