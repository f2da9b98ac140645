package commitlog

import "testing"

func TestQueueOffsets(t *testing.T) {
	idA, idB := TopicID{1}, TopicID{2}
	o := newQueueOffsets()
	*o.counter("t", idA, 3) = 7
	*o.counter("t", idA, 99_999) = 8
	*o.counter("t", idB, 3) = 42
	*o.counter("u", idA, 3) = 43
	for _, c := range []struct {
		topic     string
		id        TopicID
		partition int32
		want      int64
	}{
		{"t", idA, 3, 7},
		{"t", idA, 99_999, 8},
		{"t", idA, 4, 0},
		{"t", idB, 3, 42}, // another incarnation counts apart
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
