package dispatcher

import (
	"github.com/unilog/unilog/commitlog"
	"github.com/unilog/unilog/consumequeue"
	"github.com/unilog/unilog/internal/dense"
)

// topicIncarnation names one incarnation of a topic, all its partitions.
type topicIncarnation struct {
	topic string
	id    commitlog.TopicID
}

// topicQueues is what the dispatcher remembers of one topic incarnation:
// its queue directory name, built once, and the queues it opened, by
// partition. Keyed by partition in a map, the cache cost an entry of
// about 100 bytes per partition; so indexing a record builds no string
// and probes one map per topic.
type topicQueues struct {
	name   string
	queues dense.Table[queueSlot]
}

// queueSlot is one partition's entry in topicQueues: its queue once
// opened, and the round of grown in which the queue was last listed.
type queueSlot struct {
	q      *consumequeue.Queue
	grewIn uint64
}

// queueCache holds a topicQueues per incarnation; the dispatching
// goroutine's alone.
type queueCache struct {
	topics  map[topicIncarnation]*topicQueues
	lastKey topicIncarnation
	last    *topicQueues // consecutive records usually share a topic
}

func newQueueCache() queueCache {
	return queueCache{topics: make(map[topicIncarnation]*topicQueues)}
}

// topic returns the entry of an incarnation, creating it.
func (c *queueCache) topic(topic string, id commitlog.TopicID) *topicQueues {
	if c.last == nil || c.lastKey.id != id || c.lastKey.topic != topic {
		k := topicIncarnation{topic: topic, id: id}
		t := c.topics[k]
		if t == nil {
			t = &topicQueues{name: QueueName(topic, id)}
			c.topics[k] = t
		}
		c.lastKey, c.last = k, t
	}
	return c.last
}

// peek returns the entry of the incarnation last asked for, if it is that
// of topic and id; it creates nothing.
func (c *queueCache) peek(topic string, id commitlog.TopicID) *topicQueues {
	if c.last == nil || c.lastKey.id != id || c.lastKey.topic != topic {
		return nil
	}
	return c.last
}

// forget drops an incarnation's entry.
func (c *queueCache) forget(topic string, id commitlog.TopicID) {
	delete(c.topics, topicIncarnation{topic: topic, id: id})
	c.lastKey, c.last = topicIncarnation{}, nil
}
