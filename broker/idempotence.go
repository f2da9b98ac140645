package broker

import (
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
)

// dedupWindow is how many recent batches per producer and partition are
// remembered, as Kafka: a client retries at most 5 in-flight batches.
const dedupWindow = 5

// partitionState serializes appends to one partition and carries its
// idempotent-producer state, loaded at start from the producer-state
// snapshot and the log after it (producer_snapshot.go), then kept current
// by every append.
type partitionState struct {
	mu        sync.Mutex
	producers map[int64]*producerSeq
	// inRequest marks the partition in the produce group being appended;
	// guarded by Broker.appendMu.
	inRequest bool
}

type seqBatch struct {
	firstSeq, lastSeq int32
	baseOffset        int64
	// end is the physical end of the stored record, which a retry of the
	// batch waits on before it is acknowledged like the original.
	end int64
}

// producerSeq is one producer's recent batches in one partition.
type producerSeq struct {
	epoch   int16
	batches []seqBatch // oldest first, at most dedupWindow
}

// seqResult is the outcome of checking a batch's sequence.
type seqResult struct {
	duplicate bool
	original  seqBatch // when duplicate
	err       *kerr.Error
}

func lastSeq(first, count int32) int32 {
	return int32(uint32(first) + uint32(count) - 1) // sequences wrap at int32
}

// check validates an idempotent batch against the producer's history, as
// Kafka's ProducerStateManager: a newer epoch must restart at sequence 0, a
// batch equal to one of the last five is a duplicate, anything else must
// follow the last batch exactly. A producer with no history is accepted.
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
			return seqResult{duplicate: true, original: sb}
		}
	}
	if n := len(ps.batches); n > 0 && bi.firstSequence != ps.batches[n-1].lastSeq+1 {
		return seqResult{err: kerr.OutOfOrderSequenceNumber}
	}
	return seqResult{}
}

// record remembers an appended idempotent batch.
func (p *partitionState) record(bi batchInfo, baseOffset, end int64) {
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
	ps.batches = append(ps.batches, seqBatch{firstSeq: bi.firstSequence, lastSeq: lastSeq(bi.firstSequence, bi.numRecords), baseOffset: baseOffset, end: end})
}

// replay applies a batch read back from the log unless the state already
// holds it or a later batch of its producer (the snapshot may have been
// taken after some of the records it is replayed with).
func (p *partitionState) replay(bi batchInfo, baseOffset, end int64) {
	if ps, ok := p.producers[bi.producerID]; ok {
		if n := len(ps.batches); n > 0 && ps.batches[n-1].baseOffset >= baseOffset {
			return
		}
	}
	p.record(bi, baseOffset, end)
}
