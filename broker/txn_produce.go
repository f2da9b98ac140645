package broker

import (
	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/unilog/unilog/txn"
)

// txnWriter checks a produce request's transactional batches against the
// producer's transaction (txn.Writer); nil, which refuses them, without a
// transactional id or a coordinator.
//
// elsewhere reports an id whose coordinator is not this node (another
// replica group's leader, or none right now): its batches are accepted
// unchecked, as Kafka did before KIP-890, since the transaction's state is
// in another process. The producer state still opens the transaction at
// the first batch, so the last stable offset holds until the
// coordinator's marker (WriteTxnMarkers) ends it, and the idempotence
// check still refuses an older epoch than the partition has seen. What
// KIP-890 closes stays open for such partitions: a batch delayed in the
// network past its transaction's marker (or one a faulty client writes
// without adding the partition to its transaction) opens a transaction no
// marker ends, holding the partition's last stable offset until the
// producer's next transaction there ends, or for good if none does.
func (b *Broker) txnWriter(id *string) (w *txn.Writer, elsewhere bool) {
	if id == nil {
		return nil, false
	}
	if b.txnCoordinatorID(*id) != b.cfg.NodeID {
		return nil, true
	}
	c := b.txns.Load()
	if c == nil {
		return nil, false
	}
	return c.Writer(*id), false
}

// checkTxnBatch answers a transactional batch the producer may not write
// now (appendGroup, under appendMu: the markers' append takes it too, so
// no batch is stored after its partition's marker) and reports whether it
// may.
func (sc *produceScratch) checkTxnBatch(pb *pendingBatch) bool {
	if !pb.bi.transactional() || sc.txnElsewhere {
		return true
	}
	pb.rp.ErrorCode = sc.txn.Check(pb.bi.producerID, pb.bi.producerEpoch, pb.sb.Topic, pb.sb.Partition)
	if pb.rp.ErrorCode != 0 && sc.txnRefused == nil {
		sc.txnRefused = pb
	}
	return pb.rp.ErrorCode == 0
}

// logTxnRefusal tells, at debug level, why a produce request's
// transactional batch was refused, with the coordinator's view of the
// transaction: a client that believes it added the partition and a
// coordinator that does not are two sides of one bug, and only the
// broker sees its own.
// A transactional batch may come without a transactional id (a faulty or
// hostile client): it is refused and logged without a transaction.
func (b *Broker) logTxnRefusal(id *string, pb *pendingBatch) {
	fields := logrus.Fields{"api": "Produce", "topic": pb.sb.Topic, "partition": pb.sb.Partition,
		"producer_id": pb.bi.producerID, "producer_epoch": pb.bi.producerEpoch, "error": kerr.ErrorForCode(pb.rp.ErrorCode)}
	if id != nil {
		fields["transactional_id"] = *id
		if c := b.txns.Load(); c != nil {
			if t, ok := c.Describe(*id); ok {
				fields["txn_state"], fields["txn_producer_id"], fields["txn_epoch"], fields["txn_partitions"] = t.State, t.ProducerID, t.Epoch, len(t.Partitions)
			}
		}
	}
	b.log.WithFields(fields).Debug("transactional batch refused")
}
