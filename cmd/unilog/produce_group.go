package main

import (
	"cmp"
	"slices"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Records handed to the client grouped by partition.
//
// franz-go batches what it holds of each partition while its one request
// in flight (idempotent producer) is answered. With keyed records spread
// over many more partitions than it holds at a time (10,000 records by
// default), each batch carries a single record, and the client and the
// broker pay their per-batch costs once per record. Handing over a
// chunk's keyed records in partition order, each partition's in input
// order, puts each partition's records of the chunk in one batch.
// Producing 200,000 keyed records into 100,000 partitions (issue 19)
// took 35% less client CPU and 45% less broker CPU when its input file
// was sorted that way.
//
// Only the order in which records of different partitions are handed
// over changes: each partition's records keep their input order, and
// the partitioner still places every record. The grouping uses the
// partition count the partitioner last saw, so records produced while
// partitions are being added may be handed over in another order (a
// key's records keep theirs, as they always share a partition).

// partitionCounter wraps a partitioner to note over how many partitions
// it places keyed records: all of the topic's, as a keyed record requires
// consistency.
type partitionCounter struct {
	kgo.Partitioner
	n *atomic.Int64
}

func (p partitionCounter) ForTopic(topic string) kgo.TopicPartitioner {
	tp := &countingTopicPartitioner{TopicPartitioner: p.Partitioner.ForTopic(topic), n: p.n}
	// franz-go partitions a record again after OnNewBatch, which would
	// skip a partition of the round-robin one: only a partitioner that
	// has it gets it.
	if nb, ok := tp.TopicPartitioner.(kgo.TopicPartitionerOnNewBatch); ok {
		return &countingStickyPartitioner{countingTopicPartitioner: tp, onNewBatch: nb}
	}
	return tp
}

type countingTopicPartitioner struct {
	kgo.TopicPartitioner
	n *atomic.Int64
}

func (p *countingTopicPartitioner) Partition(r *kgo.Record, n int) int {
	if r.Key != nil && p.n.Load() != int64(n) {
		p.n.Store(int64(n))
	}
	return p.TopicPartitioner.Partition(r, n)
}

type countingStickyPartitioner struct {
	*countingTopicPartitioner
	onNewBatch kgo.TopicPartitionerOnNewBatch
}

func (p *countingStickyPartitioner) OnNewBatch() { p.onNewBatch.OnNewBatch() }

// partitionOrder returns the order in which to hand over the records of
// lines split by --parse-key at sep: by the partition Kafka's murmur2
// gives each key over n partitions, and in input order within a
// partition. It returns nil (input order) when n < 2 or a line has no
// key, as the partitioner picks the partition of a record without a key
// only when it is handed over.
func partitionOrder(lines [][]byte, sep []byte, n int) []int32 {
	if n < 2 || len(lines) < 2 {
		return nil
	}
	hash := kgo.StickyKeyPartitioner(nil).ForTopic("")
	parts := make([]int32, len(lines))
	var r kgo.Record
	for i, line := range lines {
		if r.Key, _ = splitKey(line, sep); r.Key == nil {
			return nil
		}
		parts[i] = int32(hash.Partition(&r, n))
	}
	order := make([]int32, len(lines))
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortStableFunc(order, func(a, b int32) int { return cmp.Compare(parts[a], parts[b]) })
	return order
}
