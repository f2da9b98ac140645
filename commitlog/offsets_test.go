package commitlog

import "testing"

func TestQueueOffsets(t *testing.T) {
	idA, idB := TopicID{1}, TopicID{2}
	o := newQueueOffsets()
	// A counter handed out stays the partition's while the table grows
	// past it: encodeBatch undoes a failed batch through such pointers.
	first := o.counter("t", idA, 3)
	*first = 7
	for _, p := range []int32{0, offsetChunk - 1, offsetChunk, 5*offsetChunk + 1, 99_999} {
		*o.counter("t", idA, p) = int64(p) + 100
	}
	*o.counter("t", idB, 3) = 42
	*o.counter("u", idA, 3) = 43
	if first != o.counter("t", idA, 3) {
		t.Fatal("partition 3's counter moved when the table grew")
	}
	for _, c := range []struct {
		topic     string
		id        TopicID
		partition int32
		want      int64
	}{
		{"t", idA, 3, 7},
		{"t", idA, 0, 100},
		{"t", idA, offsetChunk - 1, offsetChunk + 99},
		{"t", idA, offsetChunk, offsetChunk + 100},
		{"t", idA, 5*offsetChunk + 1, 5*offsetChunk + 101},
		{"t", idA, 99_999, 100_099},
		{"t", idA, 4, 0},               // in an allocated block, never set
		{"t", idA, 2 * offsetChunk, 0}, // in a block never allocated
		{"t", idA, 1 << 30, 0},         // past the table
		{"t", idB, 3, 42},              // another incarnation counts apart
		{"u", idA, 3, 43},
		{"v", idA, 3, 0},
	} {
		if got := o.get(c.topic, c.id, c.partition); got != c.want {
			t.Errorf("get(%s, %v, %d) = %d, want %d", c.topic, c.id[:1], c.partition, got, c.want)
		}
	}
	o.remove("t", idA)
	if got := o.get("t", idA, 3); got != 0 {
		t.Errorf("after remove: %d, want 0", got)
	}
	if got := o.get("t", idB, 3); got != 42 {
		t.Errorf("remove took another incarnation: %d, want 42", got)
	}
	if *o.counter("t", idA, 3) != 0 {
		t.Error("a removed incarnation's counter came back")
	}
}
