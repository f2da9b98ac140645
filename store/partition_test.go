package store

import (
	"context"
	"errors"
	"testing"

	"github.com/unilog/unilog/commitlog"
)

// readAll reads every batch of a partition through the handle h and
// returns the batches' bodies.
func readAll(t *testing.T, h Partition) []string {
	t.Helper()
	lo, hi := h.Bounds()
	var out []string
	for off := lo; off < hi; {
		b, base, next, err := h.ReadBatch(off, nil)
		if err != nil || base != off {
			t.Fatalf("offset %d: batch at %d, %v", off, base, err)
		}
		if end, ok := h.RecordEnd(off); !ok || end <= 0 {
			t.Fatalf("offset %d: record end %d, %v", off, end, ok)
		}
		out = append(out, string(b))
		off = next
	}
	return out
}

// TestPartitionHandle: a handle reads its incarnation's batches, is kept
// (taking it again allocates nothing; PartitionsOf gives the same), and a topic deleted and created
// again is read through a new handle of the new incarnation, the old one
// answering out of range.
func TestPartitionHandle(t *testing.T) {
	old, cur := commitlog.TopicID{1}, commitlog.TopicID{2}
	live := &liveTopics{ids: map[string]commitlog.TopicID{"t": old}}
	d := mustOpen(t, incarnationOptions(t.TempDir(), live))
	defer func() {
		if err := d.Close(); err != nil {
			t.Error(err)
		}
	}()
	appendTo(t, d, "t", old, "old-1", "old-2")

	h := d.Partition("t", 0)
	if got := readAll(t, h); len(got) != 2 || got[0] != "old-1" || got[1] != "old-2" {
		t.Fatalf("t/0 through its handle: %q", got)
	}
	if again := d.Partition("t", 0); again != h {
		t.Error("the handle of a partition with a queue is made again")
	}
	if n := testing.AllocsPerRun(100, func() { d.Partition("t", 0).Bounds() }); n != 0 {
		t.Errorf("taking a kept handle: %v allocations", n)
	}
	if lo, hi := d.Partition("t", 1).Bounds(); lo != 0 || hi != 0 {
		t.Errorf("t/1, never written: [%d, %d)", lo, hi)
	}

	// PartitionsOf resolves the topic once and gives the same handles.
	of := d.PartitionsOf("t")
	if of(0) != h {
		t.Error("PartitionsOf's handle of t/0 is not Partition's")
	}
	if lo, hi := of(1).Bounds(); lo != 0 || hi != 0 {
		t.Errorf("t/1 through PartitionsOf, never written: [%d, %d)", lo, hi)
	}
	if lo, hi := d.PartitionsOf("unknown")(0).Bounds(); lo != 0 || hi != 0 {
		t.Errorf("a partition of an unknown topic: [%d, %d)", lo, hi)
	}

	live.drop("t")
	if err := d.DeleteTopic(context.Background(), "t"); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := h.ReadBatch(0, nil); !errors.Is(err, ErrOutOfRange) {
		t.Errorf("the deleted incarnation's handle: %v, want ErrOutOfRange", err)
	}
	live.set("t", cur)
	appendTo(t, d, "t", cur, "new-1")
	if got := readAll(t, d.Partition("t", 0)); len(got) != 1 || got[0] != "new-1" {
		t.Fatalf("t/0 of the new incarnation: %q", got)
	}
}
