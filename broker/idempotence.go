package broker

import (
	"errors"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/unilog/unilog/producerstate"
)

// partitionState serializes appends to one partition and carries its
// idempotent-producer state (package producerstate), loaded at start from
// the producer-state snapshot and the log after it (producer_snapshot.go),
// then kept current by every append.
type partitionState struct {
	mu sync.Mutex
	producerstate.Partition
	// inRequest marks the partition in the produce group being appended;
	// guarded by Broker.appendMu.
	inRequest bool
}

// producerBatch is what the producer state needs of a validated batch.
func (bi batchInfo) producerBatch() producerstate.Batch {
	return producerstate.Batch{ProducerID: bi.producerID, Epoch: bi.producerEpoch, FirstSeq: bi.firstSequence, Records: bi.numRecords}
}

// sequenceError is the Kafka answer to a batch the producer state refuses.
func sequenceError(err error) *kerr.Error {
	if errors.Is(err, producerstate.ErrInvalidEpoch) {
		return kerr.InvalidProducerEpoch
	}
	return kerr.OutOfOrderSequenceNumber
}
