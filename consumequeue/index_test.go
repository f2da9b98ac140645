package consumequeue

import (
	"slices"
	"testing"
)

func TestQueueIndex(t *testing.T) {
	x := newQueueIndex()
	qs := map[ID]*Queue{}
	for _, id := range []ID{{"a", 0}, {"a", 300}, {"b", 5}, {"c", 0}} {
		qs[id] = &Queue{id: id}
		x.put(id, qs[id])
	}
	// Put again: replaced, not counted twice.
	qs[ID{"a", 0}] = &Queue{id: ID{"a", 0}}
	x.put(ID{"a", 0}, qs[ID{"a", 0}])

	for _, c := range []struct {
		id   ID
		want *Queue
	}{
		{ID{"a", 0}, qs[ID{"a", 0}]},
		{ID{"a", 300}, qs[ID{"a", 300}]},
		{ID{"a", 1}, nil},       // in an allocated block, never put
		{ID{"a", 100_000}, nil}, // past the table
		{ID{"b", 5}, qs[ID{"b", 5}]},
		{ID{"d", 0}, nil}, // no such topic
	} {
		if got := x.get(c.id); got != c.want {
			t.Errorf("get(%v) = %p, want %p", c.id, got, c.want)
		}
	}
	if x.len() != 4 {
		t.Fatalf("len %d, want 4", x.len())
	}
	var parts []int32
	for q := range x.topic("a") {
		parts = append(parts, q.id.Partition)
	}
	if !slices.Equal(parts, []int32{0, 300}) {
		t.Fatalf("topic a yields partitions %v, want [0 300]", parts)
	}

	x.remove(ID{"a", 300})
	x.remove(ID{"a", 300}) // gone already: no count lost
	x.remove(ID{"d", 1})   // never there
	x.remove(ID{"c", 0})
	if x.get(ID{"a", 300}) != nil || x.len() != 2 {
		t.Fatalf("after removes: get %p, len %d, want nil and 2", x.get(ID{"a", 300}), x.len())
	}
	if _, ok := x.topics["c"]; ok {
		t.Fatal("topic c kept without queues")
	}
	n := 0
	for range x.all() {
		n++
	}
	if n != 2 {
		t.Fatalf("all yields %d queues, want 2", n)
	}
	// Removing every queue while iterating a topic, as DeleteTopic does.
	for q := range x.topic("a") {
		x.remove(q.id)
	}
	if x.len() != 1 || x.get(ID{"b", 5}) == nil {
		t.Fatalf("after deleting topic a: len %d", x.len())
	}
}

func TestQueueIndexZero(t *testing.T) {
	// A closed store's index is the zero one: lookups find nothing.
	var x queueIndex
	if x.get(ID{"a", 0}) != nil || x.len() != 0 {
		t.Fatal("the zero index holds a queue")
	}
	for range x.all() {
		t.Fatal("the zero index yields a queue")
	}
}
