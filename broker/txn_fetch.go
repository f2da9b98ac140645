package broker

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/unilog/unilog/producerstate"
)

// readCommitted is the isolation level of Fetch and ListOffsets that sees
// only committed transactions.
const readCommitted = 1

// lastStable is the partition's last stable offset: the first offset of
// its oldest open transaction, or hi (the high watermark) if that is
// earlier or none is open. read_committed consumers read up to it.
func (b *Broker) lastStable(topic string, partition int32, hi int64) int64 {
	p := b.knownPartition(topic, partition)
	if p == nil {
		return hi
	}
	p.mu.Lock()
	first, ok := p.FirstUnstable()
	p.mu.Unlock()
	if ok && first < hi {
		return first
	}
	return hi
}

// abortedIn is a read_committed fetch's aborted-transaction list: the
// aborted transactions overlapping [from, to), never null.
func (b *Broker) abortedIn(topic string, partition int32, from, to int64) []kmsg.FetchResponseTopicPartitionAbortedTransaction {
	out := []kmsg.FetchResponseTopicPartitionAbortedTransaction{}
	p := b.knownPartition(topic, partition)
	if p == nil || from >= to {
		return out
	}
	var aborted []producerstate.AbortedTxn
	p.mu.Lock()
	aborted = p.AbortedIn(aborted, from, to)
	p.mu.Unlock()
	for _, a := range aborted {
		at := kmsg.NewFetchResponseTopicPartitionAbortedTransaction()
		at.ProducerID, at.FirstOffset = a.ProducerID, a.FirstOffset
		out = append(out, at)
	}
	return out
}

// fetchEnd is where a fetch of the partition stops reading: the high
// watermark, or for read_committed the last stable offset, which the
// answer carries.
func (f *fetchState) fetchEnd(p fetchPartition, rp *kmsg.FetchResponseTopicPartition, hi int64) int64 {
	if f.req.IsolationLevel != readCommitted {
		return hi
	}
	rp.LastStableOffset = f.b.lastStable(p.topic, p.partition, hi)
	rp.AbortedTransactions = f.b.abortedIn(p.topic, p.partition, p.fetchOffset, rp.LastStableOffset)
	return rp.LastStableOffset
}
