package consumequeue

import (
	"fmt"
	"testing"

	"github.com/unilog/unilog/internal/fileops"
	"github.com/unilog/unilog/internal/fileops/fileopstest"
)

// TestPowerCut appends to many queues with a Flush every few rounds, as the
// dispatcher's checkpoint does, then cuts the power: the store is rebuilt
// from only what the Recorder saw made durable (msync ranges, fdatasynced
// and syncfs'ed files, fsynced directory entries; zeros or garbage
// elsewhere). Every entry appended before the last successful Flush must
// come back. The cases take each sync path of Flush: msync of mapped
// files, fdatasync of files the LRU unmapped, and syncfs, with the entries
// stored through the mappings and in tails.
func TestPowerCut(t *testing.T) {
	for _, tc := range []struct {
		name      string
		queues    int
		maxMapped int
		garbage   bool
		tails     bool // every append in a tail (tail.go)
	}{
		{"msync", 4, 64, false, false},
		{"fdatasync", 6, 2, true, false},
		{"syncfs", syncfsThreshold + 10, 1024, true, false},
		{"tails, fdatasync", 6, 2, true, true},
		{"tails, syncfs", syncfsThreshold + 10, 1024, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const epf, rounds, flushEvery = 300, 700, 97
			src := t.TempDir()
			rec := fileopstest.NewRecorder(fileops.OS{}, src)
			s, err := Open(Options{Dir: src, EntriesPerFile: epf, MaxMapped: tc.maxMapped, Logger: quietLogger(), FS: rec})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if tc.tails {
				everyFileCold(s)
			}
			qs := make([]*Queue, tc.queues)
			for i := range qs {
				qs[i] = mustQueue(t, s, fmt.Sprintf("t%d", i%3), int32(i))
			}
			// Queue i starts at offset 37*i, mid-file, at round i.
			start := func(i int) int64 { return 37 * int64(i) }
			acked := make([]int64, len(qs))
			for i := range acked {
				acked[i] = start(i)
			}
			for r := int64(0); r < rounds; r++ {
				for i, q := range qs {
					if r < int64(i) {
						continue
					}
					off := max(q.MaxOffset(), start(i))
					if err := q.Append(off, entryAt(off)); err != nil {
						t.Fatal(err)
					}
				}
				if r%flushEvery == flushEvery-1 {
					var ends []int64
					for _, q := range qs {
						ends = append(ends, q.MaxOffset())
					}
					if err := s.Flush(); err != nil {
						t.Fatal(err)
					}
					copy(acked, ends)
				}
			}
			img := t.TempDir()
			if err := rec.Image(img, tc.garbage, uint64(tc.queues)); err != nil {
				t.Fatal(err)
			}
			cut := openStore(t, img, epf, tc.maxMapped)
			for i, q := range qs {
				c := mustQueue(t, cut, q.id.Topic, q.id.Partition)
				if c.MaxOffset() < acked[i] {
					t.Fatalf("queue %v: max offset %d after the cut, %d were flushed", q.id, c.MaxOffset(), acked[i])
				}
				// Entries past the flushed ones may be torn; the dispatcher's
				// TruncateFrom cuts those, and none before.
				if acked[i] > start(i) && c.MinOffset() != start(i) {
					t.Fatalf("queue %v: min offset %d after the cut, want %d", q.id, c.MinOffset(), start(i))
				}
				for off := start(i); off < acked[i]; off++ {
					e, err := c.Get(off)
					if err != nil || e != entryAt(off) {
						t.Fatalf("queue %v offset %d after the cut: %+v, %v; want %+v", q.id, off, e, err, entryAt(off))
					}
				}
			}
		})
	}
}

// TestPowerCutJournal is TestPowerCut over small queues and promoted ones:
// queue i gets an entry every i+1 rounds, so the busy ones are promoted
// (some between Flushes, some across one) and the quiet ones stay in the
// journal, while a topic of short-lived queues is created and deleted
// again and again, so the journal is mostly dead and compacts in the
// middle. The store rebuilt from what was made durable holds every entry
// appended before the last successful Flush.
func TestPowerCutJournal(t *testing.T) {
	const queues, rounds, flushEvery = 30, 400, 37
	src := t.TempDir()
	rec := fileopstest.NewRecorder(fileops.OS{}, src)
	opts := Options{Dir: src, EntriesPerFile: 16, MaxMapped: 8, SmallEntries: 24, Logger: quietLogger(), FS: rec, compactAt: 8 << 10}
	s := mustOpen(t, opts)
	qs := make([]*Queue, queues)
	for i := range qs {
		qs[i] = mustQueue(t, s, "t", int32(i))
	}
	acked := make([]int64, queues)
	flush := func() {
		ends := make([]int64, queues)
		for i, q := range qs {
			ends[i] = q.MaxOffset()
		}
		if err := s.Flush(); err != nil {
			t.Fatal(err)
		}
		acked = ends
	}
	for r := range rounds {
		for i, q := range qs {
			if r%(i+1) == 0 {
				appendRange(t, q, q.MaxOffset(), q.MaxOffset()+1)
			}
		}
		if r%50 == 25 {
			for p := range int32(20) {
				appendRange(t, mustQueue(t, s, "churn", p), 0, 3)
			}
			if err := s.DeleteTopic("churn"); err != nil {
				t.Fatal(err)
			}
		}
		if r%flushEvery == flushEvery-1 {
			flush()
		}
	}
	if s.journal.seq < 2 {
		// Promotions that finished after every Flush (a promoter starved
		// on a busy machine: seen once in a full run of the package) left
		// the journal live; a Flush after them commits them and compacts.
		waitPromotions(t, s)
		flush()
	}
	if s.journal.seq < 2 {
		t.Fatal("the journal was never compacted")
	}
	// Promotions finished since the last Flush are unconfirmed: the cut
	// must bring those queues back from the journal.
	waitPromotions(t, s)
	promoted := 0
	for _, q := range qs {
		if !q.small.Load() {
			promoted++
		}
	}
	if promoted == 0 || promoted == queues {
		t.Fatalf("%d of %d queues promoted, want a mix", promoted, queues)
	}
	img := t.TempDir()
	if err := rec.Image(img, true, 7); err != nil {
		t.Fatal(err)
	}
	cut := mustOpen(t, Options{Dir: img, EntriesPerFile: 16, MaxMapped: 8, SmallEntries: 24, Logger: quietLogger()})
	for i, q := range qs {
		c := mustQueue(t, cut, q.id.Topic, q.id.Partition)
		if c.MaxOffset() < acked[i] {
			t.Fatalf("queue %v: max offset %d after the cut, %d were flushed", q.id, c.MaxOffset(), acked[i])
		}
		for off := int64(0); off < acked[i]; off++ {
			if e, err := c.Get(off); err != nil || e != entryAt(off) {
				t.Fatalf("queue %v offset %d after the cut: %+v, %v; want %+v", q.id, off, e, err, entryAt(off))
			}
		}
	}
	for p := range int32(20) {
		if _, ok := cut.Lookup("churn", p); ok {
			t.Fatalf("deleted queue churn/%d is back after the cut", p)
		}
	}
}
