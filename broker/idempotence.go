package broker

import (
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
)

// dedupWindow is how many recent batches per producer and partition are
// remembered, as Kafka: a client retries at most 5 in-flight batches.
const dedupWindow = 5

// rebuildBatches is how many of a partition's newest batches are scanned to
// rebuild producer sequence state after a restart.
const rebuildBatches = 256

// partitionState serializes appends to one partition and carries its
// idempotent-producer state.
type partitionState struct {
	mu sync.Mutex
	// producers is built lazily from the partition's tail on the first
	// idempotent batch after start, then kept current by every append.
	producers map[int64]*producerSeq
	rebuilt   bool
}

type seqBatch struct {
	firstSeq, lastSeq int32
	baseOffset        int64
}

// producerSeq is one producer's recent batches in one partition.
type producerSeq struct {
	epoch   int16
	batches []seqBatch // oldest first, at most dedupWindow
}

// seqResult is the outcome of checking a batch's sequence.
type seqResult struct {
	duplicate  bool
	baseOffset int64 // of the original batch when duplicate
	err        *kerr.Error
}

func lastSeq(first, count int32) int32 {
	return int32(uint32(first) + uint32(count) - 1) // sequences wrap at int32
}

// check validates an idempotent batch against the producer's history, as
// Kafka's ProducerStateManager: a newer epoch must restart at sequence 0, a
// batch equal to one of the last five is a duplicate, anything else must
// follow the last batch exactly. A producer with no history is accepted, so
// state lost beyond the rebuild window degrades to at-least-once.
func (p *partitionState) check(bi batchInfo) seqResult {
	ps, ok := p.producers[bi.producerID]
	if !ok {
		return seqResult{}
	}
	switch {
	case bi.producerEpoch < ps.epoch:
		return seqResult{err: kerr.InvalidProducerEpoch}
	case bi.producerEpoch > ps.epoch:
		if bi.firstSequence != 0 {
			return seqResult{err: kerr.OutOfOrderSequenceNumber}
		}
		return seqResult{}
	}
	last := lastSeq(bi.firstSequence, bi.numRecords)
	for _, sb := range ps.batches {
		if sb.firstSeq == bi.firstSequence && sb.lastSeq == last {
			return seqResult{duplicate: true, baseOffset: sb.baseOffset}
		}
	}
	if n := len(ps.batches); n > 0 && bi.firstSequence != ps.batches[n-1].lastSeq+1 {
		return seqResult{err: kerr.OutOfOrderSequenceNumber}
	}
	return seqResult{}
}

// record remembers an appended idempotent batch.
func (p *partitionState) record(bi batchInfo, baseOffset int64) {
	if p.producers == nil {
		p.producers = make(map[int64]*producerSeq)
	}
	ps, ok := p.producers[bi.producerID]
	if !ok || bi.producerEpoch != ps.epoch {
		ps = &producerSeq{epoch: bi.producerEpoch}
		p.producers[bi.producerID] = ps
	}
	if len(ps.batches) == dedupWindow {
		copy(ps.batches, ps.batches[1:])
		ps.batches = ps.batches[:dedupWindow-1]
	}
	ps.batches = append(ps.batches, seqBatch{firstSeq: bi.firstSequence, lastSeq: lastSeq(bi.firstSequence, bi.numRecords), baseOffset: baseOffset})
}

// rebuild loads producer state from the newest stored batches of the
// partition; stored batches carry producer id, epoch and first sequence, so
// nothing beyond the log itself needs persisting.
func (p *partitionState) rebuild(st Storage, topic string, partition int32) {
	p.producers = make(map[int64]*producerSeq)
	p.rebuilt = true
	lo, hi := st.Bounds(topic, partition)
	type found struct {
		bi   batchInfo
		base int64
	}
	var tail []found
	var buf []byte
	for off, n := hi, 0; off > lo && n < rebuildBatches; n++ {
		out, base, _, err := st.ReadBatch(topic, partition, off-1, buf[:0])
		if err != nil {
			break
		}
		buf = out
		if bi, ok := storedBatchProducer(out); ok && bi.producerID >= 0 {
			tail = append(tail, found{bi, base})
		}
		off = base
	}
	for i := len(tail) - 1; i >= 0; i-- {
		p.record(tail[i].bi, tail[i].base)
	}
}
