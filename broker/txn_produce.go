package broker

import "github.com/unilog/unilog/txn"

// txnWriter checks a produce request's transactional batches against the
// producer's transaction (txn.Writer); nil, which refuses them, without a
// transactional id or a coordinator.
func (b *Broker) txnWriter(id *string) *txn.Writer {
	c := b.txns.Load()
	if id == nil || c == nil {
		return nil
	}
	return c.Writer(*id)
}

// checkTxnBatch answers a transactional batch the producer may not write
// now (appendGroup, under appendMu: the markers' append takes it too, so
// no batch is stored after its partition's marker) and reports whether it
// may.
func (sc *produceScratch) checkTxnBatch(pb *pendingBatch) bool {
	if !pb.bi.transactional() {
		return true
	}
	pb.rp.ErrorCode = sc.txn.Check(pb.bi.producerID, pb.bi.producerEpoch, pb.sb.Topic, pb.sb.Partition)
	return pb.rp.ErrorCode == 0
}
