package store

import (
	"testing"

	"github.com/unilog/unilog/commitlog"
)

// TestViewBatchPrefetch: ViewRun after Prefetch over any range (past the
// end, of a partition never written, another partition's) views the
// batches ViewBatch does, and neither allocates (a read-back at 10,000
// partitions views one batch per record).
func TestViewBatchPrefetch(t *testing.T) {
	d, id := openTopicT(t)
	want := []string{"a", "bb", "ccc", "dddd"}
	appendTo(t, d, "t", id, want...)

	h := d.partition("t", 0)
	var run Run
	for _, r := range [][2]int64{{0, 4}, {2, 100}, {-5, 2}, {4, 4}, {100, 200}} {
		for _, src := range []*partition{h, d.partition("t", 7)} {
			src.Prefetch(&run, r[0], r[1])
			for off, w := range want {
				v, err := h.ViewRun(&run, int64(off))
				if err != nil || string(v.Bytes) != w || v.Base != int64(off) || v.Next != int64(off)+1 {
					t.Fatalf("after Prefetch%v of partition %d: offset %d: %q [%d, %d), %v; want %q", r, src.partition, off, v.Bytes, v.Base, v.Next, err, w)
				}
				v.Release()
				if v, err = h.ViewBatch(int64(off)); err != nil || string(v.Bytes) != w {
					t.Fatalf("ViewBatch(%d): %q, %v; want %q", off, v.Bytes, err, w)
				}
				v.Release()
			}
		}
	}
	h.Prefetch(&run, 0, 4)
	for name, view := range map[string]func() (BatchView, error){
		"ViewBatch": func() (BatchView, error) { return h.ViewBatch(2) },
		"ViewRun":   func() (BatchView, error) { return h.ViewRun(&run, 2) },
	} {
		if n := testing.AllocsPerRun(100, func() {
			v, err := view()
			if err != nil {
				t.Fatal(err)
			}
			v.Release()
		}); n != 0 {
			t.Errorf("%s: %v allocations, want 0", name, n)
		}
	}
}

// TestViewRunStale: a run read before the log was truncated under it (a
// follower cut back to its new leader's log) and the space written again
// by another partition serves none of the other partition's records: its
// stale entries read as errors, its entries below the cut as before.
func TestViewRunStale(t *testing.T) {
	d, id := openTopicT(t)
	appendTo(t, d, "t", id, "a", "bb", "ccc", "dddd")
	h := d.partition("t", 0)
	var run Run
	h.Prefetch(&run, 0, 4)
	e, ok := run.entry(2)
	if !ok {
		t.Fatal("the run holds no entry for offset 2")
	}
	if err := d.Truncate(e.PhysOffset); err != nil {
		t.Fatal(err)
	}
	for _, b := range []string{"xxx", "yyyy"} {
		if _, err := d.log.Append(&commitlog.Message{Topic: "t", TopicID: id, Partition: 1, Body: []byte(b)}); err != nil {
			t.Fatal(err)
		}
	}
	waitDispatched(t, d)

	for off, w := range []string{"a", "bb"} {
		v, err := h.ViewRun(&run, int64(off))
		if err != nil || string(v.Bytes) != w {
			t.Fatalf("offset %d below the cut: %q, %v; want %q", off, v.Bytes, err, w)
		}
		v.Release()
	}
	for off := int64(2); off < 4; off++ {
		v, err := h.ViewRun(&run, off)
		if err == nil {
			v.Release()
			t.Fatalf("offset %d, cut away: served %q from a stale entry", off, v.Bytes)
		}
	}
}

// openTopicT opens a store in which topic "t" is live, closed when the
// test ends.
func openTopicT(t *testing.T) (*Store, commitlog.TopicID) {
	id := commitlog.TopicID{1}
	d := mustOpen(t, incarnationOptions(t.TempDir(), &liveTopics{ids: map[string]commitlog.TopicID{"t": id}}))
	t.Cleanup(func() {
		if err := d.Close(); err != nil {
			t.Error(err)
		}
	})
	return d, id
}

// TestPrefetchBoundsOfAnyPartition: the bounds hint takes any partition
// number, of a topic with or without a live incarnation, without a fault,
// an allocation or a handle kept for a partition never read.
func TestPrefetchBoundsOfAnyPartition(t *testing.T) {
	d, id := openTopicT(t)
	appendTo(t, d, "t", id, "a")
	d.partition("t", 0).Bounds() // keeps partition 0's handle
	for _, topic := range []string{"t", "unknown"} {
		ahead := d.PrefetchBoundsOf(topic)
		for _, p := range []int32{0, 1, 7, -1, -1 << 31, 1<<31 - 1} {
			if n := testing.AllocsPerRun(10, func() { ahead(p) }); n != 0 {
				t.Errorf("%s partition %d: %v allocations, want 0", topic, p, n)
			}
		}
	}
	if hs := d.handleTable("t", id); hs.Load(7) != nil {
		t.Error("the hint kept a handle for partition 7, never read")
	}
}
