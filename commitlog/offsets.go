package commitlog

// offsetChunk is how many partitions' counters one block of a topic's
// table holds: 2 KiB, so a 100,000-partition topic is 391 blocks.
const offsetChunk = 256

// incarnationKey names one incarnation of a topic.
type incarnationKey struct {
	topic string
	id    TopicID
}

// topicOffsets is the next queue offsets of one incarnation's partitions,
// dense by partition number in fixed blocks. Blocks never move once
// allocated, so a counter's address stays valid while the table grows
// (encodeBatch keeps pointers to the counters it moved, to undo them), and
// they hold no pointers, so the garbage collector does not scan them.
type topicOffsets struct {
	chunks []*[offsetChunk]int64
}

// counter returns partition's counter, allocating its block if needed.
func (t *topicOffsets) counter(partition int32) *int64 {
	c, i := int(partition)/offsetChunk, int(partition)%offsetChunk
	if c >= len(t.chunks) {
		t.chunks = append(t.chunks, make([]*[offsetChunk]int64, c+1-len(t.chunks))...)
	}
	if t.chunks[c] == nil {
		t.chunks[c] = new([offsetChunk]int64)
	}
	return &t.chunks[c][i]
}

// get returns partition's counter, 0 if its block was never allocated.
func (t *topicOffsets) get(partition int32) int64 {
	c, i := int(partition)/offsetChunk, int(partition)%offsetChunk
	if c >= len(t.chunks) || t.chunks[c] == nil {
		return 0
	}
	return t.chunks[c][i]
}

// queueOffsets is the writer's table of next queue offsets, one dense
// table per topic incarnation. A map keyed by (topic, id, partition) cost
// about 120 bytes and a heap object per partition, 117 MB and a million
// objects for the garbage collector to scan at 1,000,000 partitions; this
// costs 8 bytes a partition and one map entry a topic.
type queueOffsets struct {
	topics  map[incarnationKey]*topicOffsets
	lastKey incarnationKey // the topic of the last lookup, cached:
	last    *topicOffsets  // consecutive messages usually share it
}

func newQueueOffsets() queueOffsets {
	return queueOffsets{topics: make(map[incarnationKey]*topicOffsets)}
}

// counter returns the counter of a partition, creating it at 0.
func (o *queueOffsets) counter(topic string, id TopicID, partition int32) *int64 {
	if o.last == nil || o.lastKey.id != id || o.lastKey.topic != topic {
		k := incarnationKey{topic: topic, id: id}
		t := o.topics[k]
		if t == nil {
			t = &topicOffsets{}
			o.topics[k] = t
		}
		o.lastKey, o.last = k, t
	}
	return o.last.counter(partition)
}

// get returns a partition's counter, 0 for one never seen.
func (o *queueOffsets) get(topic string, id TopicID, partition int32) int64 {
	if t := o.topics[incarnationKey{topic: topic, id: id}]; t != nil {
		return t.get(partition)
	}
	return 0
}

// remove forgets every partition of one incarnation.
func (o *queueOffsets) remove(topic string, id TopicID) {
	delete(o.topics, incarnationKey{topic: topic, id: id})
	o.lastKey, o.last = incarnationKey{}, nil
}
