package txn

import "github.com/twmb/franz-go/pkg/kerr"

// writes is what an id's producer may write now, and its state, published
// for Produce (and metrics) to read without the entry's lock, which an
// ending transaction holds while it appends its markers.
type writes struct {
	producerID int64
	epoch      int16
	state      State
	ongoing    bool
	partitions map[TopicPartition]bool
	// offsets are those committed in the open transaction, which their
	// groups do not see yet (never changed once published).
	offsets []Offset
}

// publish makes the entry's state what Produce checks against and what
// DescribeTransactions and ListTransactions show.
func (e *entry) publish() {
	w := &writes{producerID: e.t.ProducerID, epoch: e.t.Epoch, state: e.t.State, ongoing: e.t.State == Ongoing}
	if e.t.State.open() {
		w.offsets = e.t.Offsets
	}
	if w.ongoing {
		w.partitions = make(map[TopicPartition]bool, len(e.t.Partitions))
		for _, tp := range e.t.Partitions {
			w.partitions[tp] = true
		}
	}
	e.writes.Store(w)
	view := e.t.clone()
	e.view.Store(&view)
}

// closeWrites stops Produce from accepting the transaction's batches
// before its markers are appended: a batch stored after its partition's
// marker would open a transaction nobody ends (a hanging transaction,
// which holds the last stable offset forever), so the check runs under
// the broker's append lock, which the markers' append takes too.
func (e *entry) closeWrites() {
	if w := e.writes.Load(); w != nil && w.ongoing {
		e.writes.Store(&writes{producerID: w.producerID, epoch: w.epoch, state: w.state, offsets: w.offsets})
	}
}

// Writer checks a transactional producer's batches against its
// transaction (KIP-890's verification, without a round trip: the
// coordinator is in the same process).
type Writer struct{ e *entry }

// Writer returns the checker of the id's batches; a nil Writer (unknown
// id) refuses them all.
func (c *Coordinator) Writer(id string) *Writer {
	if e := c.lookup(id, false); e != nil {
		return &Writer{e}
	}
	return nil
}

// Check returns 0 if the producer (id and epoch) may write the partition
// now: its transaction is Ongoing and holds the partition. Otherwise the
// Kafka error for the batch: INVALID_PRODUCER_ID_MAPPING for another
// producer id, INVALID_PRODUCER_EPOCH for another epoch (a fenced
// producer), INVALID_TXN_STATE for a partition outside an Ongoing
// transaction.
func (w *Writer) Check(producerID int64, epoch int16, topic string, partition int32) int16 {
	var cur *writes
	if w != nil {
		cur = w.e.writes.Load()
	}
	switch {
	case cur == nil || cur.producerID != producerID:
		return kerr.InvalidProducerIDMapping.Code
	case cur.epoch != epoch:
		return kerr.InvalidProducerEpoch.Code
	case !cur.partitions[TopicPartition{topic, partition}]:
		return kerr.InvalidTxnState.Code
	}
	return 0
}

// PendingOffsets returns the partitions of the group with offsets
// committed in a transaction not yet complete: an OffsetFetch that
// requires stable offsets (KIP-447) is answered UNSTABLE_OFFSET_COMMIT
// for them, so a consumer taking the partitions over waits for the
// transaction instead of reprocessing what it commits.
func (c *Coordinator) PendingOffsets(group string) map[TopicPartition]bool {
	var out map[TopicPartition]bool
	for _, e := range c.entries() {
		w := e.writes.Load()
		if w == nil {
			continue
		}
		for _, o := range w.offsets {
			if o.Group == group {
				if out == nil {
					out = make(map[TopicPartition]bool)
				}
				out[TopicPartition{o.Topic, o.Partition}] = true
			}
		}
	}
	return out
}
