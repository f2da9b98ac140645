package store

import (
	"testing"

	"github.com/unilog/unilog/commitlog"
)

// partitionKey names one partition of one topic in the tests below.
type partitionKey struct {
	topic     string
	partition int32
}

// nextOffsets is every partition's next queue offset after recs.
func nextOffsets(recs []appended) map[partitionKey]int64 {
	next := make(map[partitionKey]int64)
	for _, a := range recs {
		next[partitionKey{a.msg.Topic, a.msg.Partition}] = a.pos.QueueOffset + int64(max(a.msg.Count, 1))
	}
	return next
}

// appendAt appends 100 generated messages, checks that each partition
// continues at its offset in next (which it advances), and waits until
// they are dispatched.
func appendAt(t *testing.T, d *Store, seed uint64, next map[partitionKey]int64) []appended {
	t.Helper()
	more := appendN(t, d, seed, 0, 100)
	for _, a := range more {
		p := partitionKey{a.msg.Topic, a.msg.Partition}
		if a.pos.QueueOffset != next[p] {
			t.Fatalf("%v: appended at offset %d after the cut, want %d", p, a.pos.QueueOffset, next[p])
		}
		next[p] += int64(max(a.msg.Count, 1))
	}
	waitDispatched(t, d)
	return more
}

// TestTruncate cuts a dispatched log at record boundaries in the last file,
// in an earlier file and at its very start: the queues must end exactly
// where the kept records end, new appends must reuse the offsets cut, and
// the directory must verify and reopen with the same content.
func TestTruncate(t *testing.T) {
	for _, tc := range []struct {
		name string
		keep func(n int) int // records kept of n
	}{
		{"last file", func(n int) int { return n - 3 }},
		{"earlier file", func(n int) int { return n / 3 }},
		{"everything", func(int) int { return 0 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			d := mustOpen(t, testOptions(dir))
			defer func() { d.Close() }()
			recs := appendN(t, d, 7, 0, 300)
			waitDispatched(t, d)
			if len(d.log.Files()) < 3 {
				t.Fatalf("want several commit-log files, got %d", len(d.log.Files()))
			}
			k := tc.keep(len(recs))
			to := int64(0)
			if k > 0 {
				to = recs[k-1].pos.End()
			}
			kept := recs[:k]
			if err := d.Truncate(to); err != nil {
				t.Fatalf("Truncate(%d): %v", to, err)
			}
			if got := d.log.WriteOffset(); got != to {
				t.Fatalf("write offset %d after Truncate(%d)", got, to)
			}
			if got := d.Dispatched(); got > to {
				t.Fatalf("dispatched %d after Truncate(%d)", got, to)
			}
			if cp := d.Checkpoint(); cp.Dispatched > to {
				t.Fatalf("checkpoint %+v after Truncate(%d)", cp, to)
			}
			want := nextOffsets(kept)
			for _, a := range recs {
				p := partitionKey{a.msg.Topic, a.msg.Partition}
				q, ok := d.queues.Lookup(p.topic, p.partition)
				if !ok {
					t.Fatalf("%v: queue gone", p)
				}
				if q.MaxOffset() != want[p] {
					t.Fatalf("%v: queue max %d after truncation, want %d", p, q.MaxOffset(), want[p])
				}
			}
			for _, a := range kept {
				checkReadable(t, d, a)
			}

			all := append(kept, appendAt(t, d, 8, want)...)
			for _, a := range all {
				checkReadable(t, d, a)
			}
			if err := d.Close(); err != nil {
				t.Fatal(err)
			}
			if err := Verify(dir); err != nil {
				t.Fatalf("Verify after truncation: %v", err)
			}
			d = mustOpen(t, testOptions(dir))
			for _, a := range all {
				checkReadable(t, d, a)
			}
		})
	}
}

// TestTruncateRefusesNonBoundary leaves everything in place when the
// offset is not where a record starts.
func TestTruncateRefusesNonBoundary(t *testing.T) {
	d := mustOpen(t, testOptions(t.TempDir()))
	defer d.Close()
	recs := appendN(t, d, 9, 0, 50)
	waitDispatched(t, d)
	end := d.log.WriteOffset()
	if err := d.Truncate(recs[10].pos.PhysOffset + 1); err == nil {
		t.Fatal("Truncate inside a record succeeded")
	}
	if got := d.log.WriteOffset(); got != end {
		t.Fatalf("write offset %d after a refused truncation, want %d", got, end)
	}
}

// TestOffsetsAt: a partition's next offset at a position is the offset of
// its first record at or past it, or its end when none is.
func TestOffsetsAt(t *testing.T) {
	d := mustOpen(t, testOptions(t.TempDir()))
	defer d.Close()
	recs := appendN(t, d, 13, 0, 200)
	waitDispatched(t, d)
	for _, at := range []int64{0, recs[1].pos.PhysOffset, recs[99].pos.PhysOffset, recs[99].pos.PhysOffset + 1, d.log.WriteOffset()} {
		want := nextOffsets(recs)
		for i := len(recs) - 1; i >= 0; i-- {
			if a := recs[i]; a.pos.PhysOffset >= at {
				want[partitionKey{a.msg.Topic, a.msg.Partition}] = a.pos.QueueOffset
			}
		}
		got := d.OffsetsAt(at)
		if len(got) != len(want) {
			t.Fatalf("at %d: %d partitions, want %d", at, len(got), len(want))
		}
		for _, p := range got {
			if k := (partitionKey{p.Topic, p.Partition}); p.TopicID != (commitlog.TopicID{}) || p.Next != want[k] {
				t.Fatalf("at %d: %v (id %x) next %d, want %d", at, k, p.TopicID, p.Next, want[k])
			}
		}
	}
}

// TestRestart empties the log and starts it again at a later file base,
// as a follower does when its leader's retention passed it: every queue
// and log counter takes the leader's next offset there (0 for a queue the
// leader has none of), a partition the follower never saw included, and
// keeps it across a reopen; records written from there are indexed at the
// offsets they carry.
func TestRestart(t *testing.T) {
	dir := t.TempDir()
	opts := testOptions(dir)
	d := mustOpen(t, opts)
	defer func() { d.Close() }()
	recs := appendN(t, d, 11, 0, 200)
	waitDispatched(t, d)
	at := 10 * opts.CommitLog.FileSize

	want := nextOffsets(recs)
	var leader []commitlog.PartitionOffset
	var unnamed partitionKey
	for p := range want {
		unnamed = p
	}
	for p, n := range want {
		if p == unnamed {
			want[p] = 0
			continue
		}
		want[p] = n + 5 + int64(opts.ConsumeQueue.EntriesPerFile) // past records the follower never saw
		leader = append(leader, commitlog.PartitionOffset{Topic: p.topic, Partition: p.partition, Next: want[p]})
	}
	gone := partitionKey{"gone", 2}
	want[gone] = 99
	leader = append(leader, commitlog.PartitionOffset{Topic: gone.topic, Partition: gone.partition, Next: 99})

	if err := d.Restart(at, leader); err != nil {
		t.Fatalf("Restart(%d): %v", at, err)
	}
	if lo, hi := d.log.MinOffset(), d.log.WriteOffset(); lo != at || hi != at || d.Dispatched() != at {
		t.Fatalf("after Restart(%d): log [%d, %d), dispatched %d", at, lo, hi, d.Dispatched())
	}
	started := func(d *Store, when string) {
		t.Helper()
		for p, n := range want {
			q, ok := d.queues.Lookup(p.topic, p.partition)
			if !ok || q.MinOffset() != n || q.MaxOffset() != n {
				t.Fatalf("%s: %v: queue found %v, want empty at %d", when, p, ok, n)
			}
			if got := d.log.NextQueueOffset(p.topic, commitlog.TopicID{}, p.partition); got != n {
				t.Fatalf("%s: %v: log counter %d, want %d", when, p, got, n)
			}
		}
	}
	started(d, "after Restart")
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	d = mustOpen(t, opts)
	started(d, "reopened")

	more := appendAt(t, d, 12, want)
	for _, a := range more {
		checkReadable(t, d, a)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if err := Verify(dir); err != nil {
		t.Fatalf("Verify after restart: %v", err)
	}
	d = mustOpen(t, opts)
	for _, a := range more {
		checkReadable(t, d, a)
	}
}
