package broker

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/unilog/unilog/txn"
)

// The transaction APIs (package txn; the ACL rules are in authz_txn.go).
// AddPartitionsToTxn stops at v3: v4+ is the brokers' own batched form.
// A follower, or a broker whose coordinator is not open, answers
// NOT_COORDINATOR.
func init() {
	register(kmsg.AddPartitionsToTxn, 0, 3, txnCoordinated((*Broker).handleAddPartitionsToTxn), authorizeAddPartitionsToTxn)
	register(kmsg.AddOffsetsToTxn, 0, 3, txnCoordinated((*Broker).handleAddOffsetsToTxn), authorizeAddOffsetsToTxn)
	register(kmsg.EndTxn, 0, 3, txnCoordinated((*Broker).handleEndTxn), authorizeEndTxn)
	register(kmsg.TxnOffsetCommit, 0, 3, txnCoordinated((*Broker).handleTxnOffsetCommit), authorizeTxnOffsetCommit)
	register(kmsg.DescribeTransactions, 0, 0, txnCoordinated((*Broker).handleDescribeTransactions), authorizeDescribeTransactions)
	register(kmsg.ListTransactions, 0, 1, txnCoordinated((*Broker).handleListTransactions), authorizeListTransactions)
}

// openTxns replays the transaction state and starts the coordinator,
// replacing (and closing) any earlier one; producer state must be loaded
// first, since its scan finishes transactions a crash interrupted by
// writing their markers.
func (b *Broker) openTxns() error {
	partitions := int32(txn.DefaultPartitions)
	if t, ok := b.meta.Topic(txnStateTopic); ok {
		partitions = t.Partitions
	}
	opts := txn.Options{
		Log:        txnLog{b},
		Groups:     txnGroups{b},
		IDs:        b.pids,
		Partitions: partitions,
		Logger:     b.log,
	}
	if b.cfg.Cluster != nil {
		opts.Remote = txnRemote{b}
	}
	c, err := txn.Open(opts)
	if err != nil {
		return fmt.Errorf("broker: open transaction coordinator: %w", err)
	}
	if old := b.txns.Swap(c); old != nil {
		old.Close()
	}
	return nil
}

// closeTxns stops the coordinator's timeout scan.
func (b *Broker) closeTxns() {
	if c := b.txns.Load(); c != nil {
		c.Close()
	}
}

// dropTxns closes the coordinator of a node becoming a follower: its
// scan would try to end transactions in a log that is now its leader's,
// and its state goes stale; Promote opens a new one from the log.
func (b *Broker) dropTxns() {
	if c := b.txns.Swap(nil); c != nil {
		c.Close()
	}
}

// txnCoordinated serves a transaction API on the coordinator, or answers
// NOT_COORDINATOR: on a node that leads no group, or for an id whose
// state partition another group leads (each group's leader coordinates
// the ids of its own partitions; a client still holding an old
// coordinator goes back to FindCoordinator on that answer, where the
// errors of an id this coordinator never saw would end its producer).
func txnCoordinated(h func(*Broker, context.Context, *txn.Coordinator, kmsg.Request) kmsg.Response) handler {
	return func(b *Broker, ctx context.Context, _ *conn, req kmsg.Request) (kmsg.Response, error) {
		c := b.txns.Load()
		if b.notLeading() || c == nil {
			return txnFailed(req, kerr.NotCoordinator)
		}
		if id, ok := txnRequestID(req); ok && b.txnCoordinatorID(id) != b.cfg.NodeID {
			return txnFailed(req, kerr.NotCoordinator)
		}
		return h(b, ctx, c, req), nil
	}
}

// txnRequestID is the transactional id a transaction API request names;
// false for those naming none or several (List; Describe answers per id).
func txnRequestID(req kmsg.Request) (string, bool) {
	switch r := req.(type) {
	case *kmsg.AddPartitionsToTxnRequest:
		return r.TransactionalID, true
	case *kmsg.AddOffsetsToTxnRequest:
		return r.TransactionalID, true
	case *kmsg.EndTxnRequest:
		return r.TransactionalID, true
	case *kmsg.TxnOffsetCommitRequest:
		return r.TransactionalID, true
	}
	return "", false
}

// txnFailed answers a transaction request wholly with code: per
// partition where the response has no top-level error code.
func txnFailed(req kmsg.Request, code *kerr.Error) (kmsg.Response, error) {
	switch r := req.(type) {
	case *kmsg.AddPartitionsToTxnRequest:
		resp := r.ResponseKind().(*kmsg.AddPartitionsToTxnResponse)
		for _, t := range r.Topics {
			rt := kmsg.NewAddPartitionsToTxnResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewAddPartitionsToTxnResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p, code.Code
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp, nil
	case *kmsg.TxnOffsetCommitRequest:
		resp := r.ResponseKind().(*kmsg.TxnOffsetCommitResponse)
		resp.Topics = txn.OffsetCommitAnswers(r.Topics, code.Code)
		return resp, nil
	case *kmsg.DescribeTransactionsRequest:
		resp := r.ResponseKind().(*kmsg.DescribeTransactionsResponse)
		for _, id := range r.TransactionalIDs {
			resp.TransactionStates = append(resp.TransactionStates, describeTxnFailed(id, code))
		}
		return resp, nil
	}
	return errorResponse(req, code)
}

func describeTxnFailed(id string, code *kerr.Error) kmsg.DescribeTransactionsResponseTransactionState {
	rs := kmsg.NewDescribeTransactionsResponseTransactionState()
	rs.TransactionalID, rs.ErrorCode = id, code.Code
	rs.ProducerID, rs.ProducerEpoch, rs.StartTimestamp = -1, -1, -1
	return rs
}

// initTransactional is InitProducerId with a transactional id.
func (b *Broker) initTransactional(ctx context.Context, req *kmsg.InitProducerIDRequest) *kmsg.InitProducerIDResponse {
	c := b.txns.Load()
	if b.notLeading() || c == nil || b.txnCoordinatorID(*req.TransactionalID) != b.cfg.NodeID {
		resp := req.ResponseKind().(*kmsg.InitProducerIDResponse)
		resp.ErrorCode, resp.ProducerID, resp.ProducerEpoch = kerr.NotCoordinator.Code, -1, -1
		return resp
	}
	return c.InitProducerID(ctx, req)
}

// handleAddPartitionsToTxn takes any partition of a user topic, whichever
// replica group leads it: the markers of this node's partitions go into
// its own log with the decision, the others' to their leaders
// (txn_remote.go).
func (b *Broker) handleAddPartitionsToTxn(ctx context.Context, c *txn.Coordinator, req kmsg.Request) kmsg.Response {
	return c.AddPartitionsToTxn(ctx, req.(*kmsg.AddPartitionsToTxnRequest), b.txnPartitionExists)
}

// txnPartitionExists reports a partition a transaction may write: one of
// a user topic (the internal topics are the coordinators' own).
func (b *Broker) txnPartitionExists(topic string, partition int32) bool {
	t, ok := b.meta.Topic(topic)
	return ok && !isInternalTopic(topic) && partition >= 0 && partition < t.Partitions
}

func (b *Broker) handleAddOffsetsToTxn(ctx context.Context, c *txn.Coordinator, req kmsg.Request) kmsg.Response {
	return c.AddOffsetsToTxn(ctx, req.(*kmsg.AddOffsetsToTxnRequest))
}

func (b *Broker) handleEndTxn(ctx context.Context, c *txn.Coordinator, req kmsg.Request) kmsg.Response {
	return c.EndTxn(ctx, req.(*kmsg.EndTxnRequest))
}

func (b *Broker) handleTxnOffsetCommit(ctx context.Context, c *txn.Coordinator, req kmsg.Request) kmsg.Response {
	return c.TxnOffsetCommit(ctx, req.(*kmsg.TxnOffsetCommitRequest))
}

// handleDescribeTransactions answers NOT_COORDINATOR for each id another
// group's leader coordinates, as txnCoordinated does for the APIs naming
// one id.
func (b *Broker) handleDescribeTransactions(_ context.Context, c *txn.Coordinator, req kmsg.Request) kmsg.Response {
	resp := c.DescribeTransactions(req.(*kmsg.DescribeTransactionsRequest))
	for i, rs := range resp.TransactionStates {
		if b.txnCoordinatorID(rs.TransactionalID) != b.cfg.NodeID {
			resp.TransactionStates[i] = describeTxnFailed(rs.TransactionalID, kerr.NotCoordinator)
		}
	}
	return resp
}

func (b *Broker) handleListTransactions(_ context.Context, c *txn.Coordinator, req kmsg.Request) kmsg.Response {
	return c.ListTransactions(req.(*kmsg.ListTransactionsRequest))
}

// txnCoordinatorNode is the broker coordinating a transactional id: the
// leader of the transaction-state partition holding its records.
func (b *Broker) txnCoordinatorNode(c *conn, id string) (int16, ClusterBroker) {
	return b.coordinatorOf(c, txnStateTopic, b.txnStatePartition(id))
}

// txnCoordinatorID is the node id of the id's coordinator; -1 while its
// partition has no leader.
func (b *Broker) txnCoordinatorID(id string) int32 {
	if b.cfg.Cluster == nil {
		return b.cfg.NodeID
	}
	if node, _, ok := b.cfg.Cluster.PartitionLeader(txnStateTopic, b.txnStatePartition(id)); ok {
		return node
	}
	return -1
}

// txnStatePartition is the transaction-state partition of an id.
func (b *Broker) txnStatePartition(id string) int32 {
	partitions := int32(txn.DefaultPartitions)
	if t, ok := b.meta.Topic(txnStateTopic); ok {
		partitions = t.Partitions
	}
	return txn.PartitionFor(id, partitions)
}
