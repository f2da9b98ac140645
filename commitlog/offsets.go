package commitlog

import "github.com/unilog/unilog/internal/dense"

// incarnationKey names one incarnation of a topic.
type incarnationKey struct {
	topic string
	id    TopicID
}

// queueOffsets is the writer's table of next queue offsets, one dense
// table per topic incarnation. A map keyed by (topic, id, partition) cost
// about 120 bytes and a heap object per partition, 117 MB and a million
// objects for the garbage collector to scan at 1,000,000 partitions; this
// costs 8 bytes a partition and one map entry a topic. A counter's address
// stays valid while its table grows (encodeBatch keeps pointers to the
// counters it moved, to undo them).
type queueOffsets struct {
	topics  map[incarnationKey]*dense.Table[int64]
	lastKey incarnationKey      // the topic of the last lookup, cached:
	last    *dense.Table[int64] // consecutive messages usually share it
}

func newQueueOffsets() queueOffsets {
	return queueOffsets{topics: make(map[incarnationKey]*dense.Table[int64])}
}

// counter returns the counter of a partition, creating it at 0.
func (o *queueOffsets) counter(topic string, id TopicID, partition int32) *int64 {
	if o.last == nil || o.lastKey.id != id || o.lastKey.topic != topic {
		k := incarnationKey{topic: topic, id: id}
		t := o.topics[k]
		if t == nil {
			t = &dense.Table[int64]{}
			o.topics[k] = t
		}
		o.lastKey, o.last = k, t
	}
	return o.last.Ptr(partition)
}

// get returns a partition's counter, 0 for one never seen.
func (o *queueOffsets) get(topic string, id TopicID, partition int32) int64 {
	if t := o.topics[incarnationKey{topic: topic, id: id}]; t != nil {
		return t.Get(partition)
	}
	return 0
}

// remove forgets every partition of one incarnation.
func (o *queueOffsets) remove(topic string, id TopicID) {
	delete(o.topics, incarnationKey{topic: topic, id: id})
	o.lastKey, o.last = incarnationKey{}, nil
}
