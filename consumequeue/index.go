package consumequeue

import (
	"iter"

	"github.com/unilog/unilog/internal/dense"
)

// queueIndex holds the open queues by topic, and in each topic in a table
// indexed by partition. A map keyed by ID cost about 40 bytes a queue, and
// each lookup hashed the topic and missed the cache in a table of 40 MB at
// a million queues: a sixth of a journal replay's time (issue 19). A table
// costs 8 bytes a partition, and deleting a topic visits its own queues
// only. Readers hold the store's mu for reading, writers for writing.
type queueIndex struct {
	topics map[string]*topicQueues
	n      int
}

type topicQueues struct {
	parts dense.Table[*Queue]
	n     int
}

func newQueueIndex() queueIndex {
	return queueIndex{topics: make(map[string]*topicQueues)}
}

// get returns id's queue, or nil.
func (x *queueIndex) get(id ID) *Queue {
	t := x.topics[id.Topic]
	if t == nil {
		return nil
	}
	return t.parts.Get(id.Partition)
}

// put makes q id's queue.
func (x *queueIndex) put(id ID, q *Queue) {
	t := x.topics[id.Topic]
	if t == nil {
		t = new(topicQueues)
		x.topics[id.Topic] = t
	}
	p := t.parts.Ptr(id.Partition)
	if *p == nil {
		t.n++
		x.n++
	}
	*p = q
}

// remove forgets id's queue; a topic left without queues is dropped.
func (x *queueIndex) remove(id ID) {
	t := x.topics[id.Topic]
	if t == nil || t.parts.Get(id.Partition) == nil {
		return
	}
	*t.parts.Ptr(id.Partition) = nil
	x.n--
	if t.n--; t.n == 0 {
		delete(x.topics, id.Topic)
	}
}

// len is the number of queues.
func (x *queueIndex) len() int { return x.n }

// topic yields each queue of topic, in partition order.
func (x *queueIndex) topic(topic string) iter.Seq[*Queue] {
	return func(yield func(*Queue) bool) {
		t := x.topics[topic]
		if t == nil {
			return
		}
		for _, q := range t.parts.All() {
			if *q != nil && !yield(*q) {
				return
			}
		}
	}
}

// all yields every queue, a topic at a time.
func (x *queueIndex) all() iter.Seq[*Queue] {
	return func(yield func(*Queue) bool) {
		for topic := range x.topics {
			for q := range x.topic(topic) {
				if !yield(q) {
					return
				}
			}
		}
	}
}
