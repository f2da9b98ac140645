package consumequeue

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
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
			r, err := replayBytes(j, 1)
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
				counts[sq.q.id.Topic]++
			}
			if !maps.Equal(counts, r.topicCounts()) {
				t.Errorf("queues per topic %v, counted %v", counts, r.topicCounts())
			}
			if state := int64(len(journalOf(r.queues, 1, 0)) - JournalHeaderSize); r.live != state {
				t.Errorf("live bytes %d, the queues' state takes %d", r.live, state)
			}
			if r.byID.len() != len(r.queues) {
				t.Errorf("%d queues by id, %d by queue id", r.byID.len(), len(r.queues))
			}
			got := map[ID]int64{}
			for _, sq := range r.queues {
				if r.byID.get(sq.q.id) != &sq.q {
					t.Errorf("%v: byID does not hold its queue", sq.q.id)
				}
				lo, hi := sq.bounds()
				got[sq.q.id] = hi
				for off := lo; off < hi; off++ {
					if e, ok := sq.get(off); !ok || e != entryAt(off) {
						t.Errorf("%v at %d: %+v, want %+v", sq.q.id, off, e, entryAt(off))
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

// TestOpenTornDeclaration: a second declaration of a live queue past the
// synced mark is a torn tail, cut at Open, and the queue the records
// before it declared is the one the store serves: the replay's map,
// which Open adopts, must not point at the refused declaration's queue.
func TestOpenTornDeclaration(t *testing.T) {
	a := ID{Topic: "t", Partition: 1}
	j := make([]byte, JournalHeaderSize)
	j = appendDeclare(j, 1, a, 0)
	j = appendEntry(j, 1, 0, entryAt(0))
	synced := len(j)
	j = appendDeclare(j, 2, a, 7)
	encodeJournalHeader(j, 1, int64(synced))
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, journalDirName), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(journalPath(filepath.Join(dir, journalDirName), 1), j, 0o644); err != nil {
		t.Fatal(err)
	}
	s := mustOpen(t, Options{Dir: dir, Logger: quietLogger()})
	q, ok := s.Lookup(a.Topic, a.Partition)
	if !ok {
		t.Fatal("queue lost")
	}
	if q.MinOffset() != 0 || q.MaxOffset() != 1 {
		t.Fatalf("queue [%d, %d), want [0, 1)", q.MinOffset(), q.MaxOffset())
	}
	appendRange(t, q, 1, 3)
	if e, err := q.Get(2); err != nil || e != entryAt(2) {
		t.Fatalf("get 2: %+v, %v", e, err)
	}
	s = reopen(t, s)
	if q, ok := s.Lookup(a.Topic, a.Partition); !ok || q.MaxOffset() != 3 {
		t.Fatalf("after reopen: %v, %v", q, ok)
	}
}

// TestReplayAllocs: a replay carves its small queues and their first two
// entries from slabs, so a thousand queues of two entries cost a few
// chunks, not an allocation each. It was two a queue (the small queue
// with its Queue, and room for two entries), and three before that
// (issue 19).
func TestReplayAllocs(t *testing.T) {
	const queues = 1000
	j := twoEntryJournal("t", queues)
	allocs := testing.AllocsPerRun(5, func() {
		if _, err := replayBytes(j, 1); err != nil {
			t.Fatal(err)
		}
	})
	if per := allocs / queues; per > 0.05 {
		t.Fatalf("%.0f allocations for %d queues: %.3f a queue, want at most 0.05", allocs, queues, per)
	}
}

// BenchmarkReplay100k replays a journal of 100,000 queues of two entries
// (twoEntryJournal).
func BenchmarkReplay100k(b *testing.B) {
	j := twoEntryJournal("m0", 100_000)
	b.SetBytes(int64(len(j)))
	for b.Loop() {
		if _, err := replayBytes(j, 1); err != nil {
			b.Fatal(err)
		}
	}
}

// twoEntryJournal is a journal of queues partitions of topic with exactly
// two entries each: each queue declared with its first entry, the second
// entries after all of them in queue order. (benchJournal spreads keyed
// records as make bench-million does, so its queues hold one to several.)
func twoEntryJournal(topic string, queues int) []byte {
	j := make([]byte, JournalHeaderSize)
	for q := range uint32(queues) {
		j = appendDeclare(j, q+1, ID{Topic: topic, Partition: int32(q)}, 0)
		j = appendEntry(j, q+1, 0, entryAt(0))
	}
	for q := range uint32(queues) {
		j = appendEntry(j, q+1, 1, entryAt(1))
	}
	encodeJournalHeader(j, 1, int64(len(j)))
	return j
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
		if got, err := countDeclares(newWindow(bytes.NewReader(tc.b), int64(len(tc.b)), make([]byte, windowSize))); err != nil || got != tc.want {
			t.Errorf("%s: %d declares (%v), want %d", tc.name, got, err, tc.want)
		}
	}
}

// BenchmarkOpenJournal opens a store whose journal is laid out as `make
// bench-million` leaves it: topics of 100,000 partitions, two keyed
// records per partition on average, so each queue's declaration is
// followed by its first entry and its second entry comes among the other
// queues' records. Open's replay and queue registration are most of a
// restart at a million partitions (issue 19).
func BenchmarkOpenJournal(b *testing.B) {
	for _, topics := range []int{1, 10} {
		b.Run(fmt.Sprintf("partitions=%d", topics*100_000), func(b *testing.B) {
			dir := b.TempDir()
			j := benchJournal(topics, 100_000)
			if err := os.MkdirAll(filepath.Join(dir, journalDirName), 0o755); err != nil {
				b.Fatal(err)
			}
			if err := os.WriteFile(journalPath(filepath.Join(dir, journalDirName), 1), j, 0o644); err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(len(j)))
			for b.Loop() {
				s, err := Open(Options{Dir: dir, Logger: quietLogger()})
				if err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				if err := s.Close(); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
		})
	}
}

// benchJournal is the journal of 2*parts records per topic, each to
// partition hash(i) mod parts, in the order a producer sends them.
func benchJournal(topics, parts int) []byte {
	j := make([]byte, JournalHeaderSize)
	qid := uint32(0)
	var phys int64
	for t := range topics {
		topic := fmt.Sprintf("m%d", t)
		qids := make([]uint32, parts)
		next := make([]int64, parts)
		for i := range 2 * parts {
			p := int(uint32(i*2654435761) % uint32(parts))
			if qids[p] == 0 {
				qid++
				qids[p] = qid
				j = appendDeclare(j, qid, ID{Topic: topic, Partition: int32(p)}, 0)
			}
			j = appendEntry(j, qids[p], next[p], Entry{PhysOffset: phys, Size: 100, Timestamp: int64(i)})
			next[p]++
			phys += 100
		}
	}
	encodeJournalHeader(j, 1, int64(len(j)))
	return j
}
