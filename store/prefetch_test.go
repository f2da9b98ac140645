package store

import (
	"testing"

	"github.com/unilog/unilog/commitlog"
)

// TestViewBatchPrefetch: Prefetch over any range (past the end, of a
// partition never written) leaves the batches viewed as before, and
// viewing a batch allocates nothing (a read-back at 10,000 partitions
// views one batch per record).
func TestViewBatchPrefetch(t *testing.T) {
	id := commitlog.TopicID{1}
	d := mustOpen(t, incarnationOptions(t.TempDir(), &liveTopics{ids: map[string]commitlog.TopicID{"t": id}}))
	defer func() {
		if err := d.Close(); err != nil {
			t.Error(err)
		}
	}()
	want := []string{"a", "bb", "ccc", "dddd"}
	appendTo(t, d, "t", id, want...)

	h := d.partition("t", 0)
	for _, r := range [][2]int64{{0, 4}, {2, 100}, {-5, 2}, {4, 4}, {100, 200}} {
		h.Prefetch(r[0], r[1])
		d.partition("t", 7).Prefetch(r[0], r[1])
		for off, w := range want {
			v, err := h.ViewBatch(int64(off))
			if err != nil || string(v.Bytes) != w || v.Base != int64(off) || v.Next != int64(off)+1 {
				t.Fatalf("after Prefetch%v: offset %d: %q [%d, %d), %v; want %q", r, off, v.Bytes, v.Base, v.Next, err, w)
			}
			v.Release()
		}
	}
	if n := testing.AllocsPerRun(100, func() {
		v, err := h.ViewBatch(2)
		if err != nil {
			t.Fatal(err)
		}
		v.Release()
	}); n != 0 {
		t.Errorf("ViewBatch: %v allocations, want 0", n)
	}
}
