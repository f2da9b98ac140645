package dispatcher

import (
	"context"
	"fmt"
	"testing"

	"github.com/unilog/unilog/commitlog"
	"github.com/unilog/unilog/consumequeue"
)

// TestIndexManyQueuesRoundTrip indexes records round robin over many
// partitions, as a producer's linger spreads one-record batches, until
// some queues are promoted to files and the rest are still in the journal;
// then reopens the store, indexes everything again (as recovery re-scans)
// and more after it. Every queue reads back exactly what was indexed.
func TestIndexManyQueuesRoundTrip(t *testing.T) {
	const (
		parts    = 200
		perPhase = 48 // records a partition takes in each phase; promotion comes at 32-64 entries
	)
	dir := t.TempDir()
	open := func() (*consumequeue.Store, *Dispatcher) {
		t.Helper()
		// SmallEntries alone: promotion at 32-64 entries whatever the
		// journal holds.
		qs := openQueuesWith(t, consumequeue.Options{Dir: dir, SmallEntries: consumequeue.DefaultSmallEntries})
		return qs, New(Options{Queues: qs, Logger: quietLogger()})
	}

	// The records, and the entries each queue must hold.
	type want struct {
		phys int64
		size int32
		ts   int64
	}
	var recs [2][]commitlog.Record
	wants := make([][]want, parts)
	phys := int64(0)
	for phase := range recs {
		for k := range parts * perPhase {
			p := int32(k % parts)
			count := int32(1)
			if k%7 == 0 {
				count = 3 // a batch: its offsets all point at the record
			}
			r := commitlog.Record{
				TotalSize: int32(100 + k%50), PhysOffset: phys, Count: count, Partition: p,
				QueueOffset: int64(len(wants[p])), ProducerTimestamp: int64(1000 + (k*37)%101), Topic: "t",
			}
			recs[phase] = append(recs[phase], r)
			phys += int64(r.TotalSize)
			ts := r.ProducerTimestamp
			if n := len(wants[p]); n > 0 {
				ts = max(ts, wants[p][n-1].ts) // timestamps never decrease along a queue
			}
			for range count {
				wants[p] = append(wants[p], want{r.PhysOffset, r.TotalSize, ts})
			}
		}
	}
	index := func(d *Dispatcher, rs []commitlog.Record) {
		t.Helper()
		for i := range rs {
			if err := d.Index(&rs[i]); err != nil {
				t.Fatal(err)
			}
		}
	}
	check := func(qs *consumequeue.Store, upTo func(p int) int, when string) {
		t.Helper()
		for p := range parts {
			q, err := qs.Queue("t", int32(p))
			if err != nil {
				t.Fatal(err)
			}
			n := upTo(p)
			if q.MinOffset() != 0 || q.MaxOffset() != int64(n) {
				t.Fatalf("%s: partition %d holds [%d, %d), want [0, %d)", when, p, q.MinOffset(), q.MaxOffset(), n)
			}
			for off, w := range wants[p][:n] {
				e, err := q.Get(int64(off))
				if err != nil || e.PhysOffset != w.phys || e.Size != w.size || e.Timestamp != w.ts {
					t.Fatalf("%s: partition %d offset %d: %+v, %v; want %+v", when, p, off, e, err, w)
				}
			}
		}
	}
	// Offsets of partition p written by the first phase.
	phase1 := make([]int, parts)
	for _, r := range recs[0] {
		phase1[r.Partition] += int(r.Count)
	}

	qs, d := open()
	index(d, recs[0])
	if err := qs.WaitPromotions(context.Background()); err != nil {
		t.Fatal(err)
	}
	check(qs, func(p int) int { return phase1[p] }, "before the restart")
	if err := qs.Close(); err != nil {
		t.Fatal(err)
	}
	small, err := consumequeue.ReadJournal(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(small) == 0 || len(small) == parts {
		t.Fatalf("%d of %d queues in the journal: the test wants both small and promoted queues", len(small), parts)
	}

	qs, d = open()
	index(d, recs[0])
	index(d, recs[1])
	check(qs, func(p int) int { return len(wants[p]) }, fmt.Sprintf("after the restart (%d queues were small)", len(small)))
}
