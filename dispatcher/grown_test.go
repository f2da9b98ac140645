package dispatcher

import (
	"maps"
	"testing"

	"github.com/unilog/unilog/commitlog"
	"github.com/unilog/unilog/consumequeue"
)

// grewLog is a Notifier that records the wakes it is given.
type grewLog struct {
	watching bool
	round    map[consumequeue.ID]int64 // the wakes since the test last reset it
}

func (g *grewLog) Watching() bool { return g.watching }

func (g *grewLog) Grew(id consumequeue.ID, max int64) {
	if _, dup := g.round[id]; dup {
		panic("a queue woken twice in one round")
	}
	g.round[id] = max
}

// TestGrewOncePerQueue: after indexing, every queue that grew is reported
// once with its MaxOffset, however many records it took; none while
// nobody watches.
func TestGrewOncePerQueue(t *testing.T) {
	n := &grewLog{watching: true}
	d := New(Options{Queues: openQueues(t, t.TempDir()), Logger: quietLogger(), Notify: n})
	next := map[consumequeue.ID]int64{}
	phys := int64(0)
	index := func(topic string, p int32, count int32) {
		t.Helper()
		id := consumequeue.ID{Topic: topic, Partition: p}
		r := commitlog.Record{TotalSize: 100, PhysOffset: phys, Count: count, QueueOffset: next[id], Partition: p, Topic: topic}
		if err := d.Index(&r); err != nil {
			t.Fatal(err)
		}
		next[id] += int64(count)
		phys += 100
	}
	wake := func() map[consumequeue.ID]int64 {
		n.round = map[consumequeue.ID]int64{}
		d.wakeTouched()
		return n.round
	}

	for _, tc := range []struct {
		name     string
		watching bool
		index    func()
		want     map[consumequeue.ID]int64
	}{
		{"three queues", true, func() {
			index("a", 0, 1)
			index("a", 1, 2)
			index("a", 0, 3)
			index("b", 0, 1)
			index("a", 0, 1)
		}, map[consumequeue.ID]int64{{Topic: "a", Partition: 0}: 5, {Topic: "a", Partition: 1}: 2, {Topic: "b", Partition: 0}: 1}},
		{"a queue again in the next round", true, func() { index("a", 1, 1) }, map[consumequeue.ID]int64{{Topic: "a", Partition: 1}: 3}},
		{"nothing indexed", true, func() {}, map[consumequeue.ID]int64{}},
		{"nobody watching", false, func() { index("a", 0, 1) }, map[consumequeue.ID]int64{}},
		{"watched again", true, func() { index("b", 0, 1) }, map[consumequeue.ID]int64{{Topic: "b", Partition: 0}: 2}},
	} {
		n.watching = tc.watching
		tc.index()
		if got := wake(); !maps.Equal(got, tc.want) {
			t.Errorf("%s: woke %v, want %v", tc.name, got, tc.want)
		}
	}
}
