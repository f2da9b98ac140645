package txn

import (
	"cmp"
	"context"
	"errors"
	"math"
	"slices"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// code is the Kafka error code answering a request whose state could not
// be stored: a node no longer leading is NOT_COORDINATOR, too few
// replicas or a timeout COORDINATOR_NOT_AVAILABLE (the client retries),
// anything else the storage's own failure.
func (c *Coordinator) code(what, id string, err error) int16 {
	switch {
	case err == nil:
		return 0
	case errors.Is(err, ErrNotCoordinator):
		return kerr.NotCoordinator.Code
	case errors.Is(err, ErrNotEnoughReplicas), errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return kerr.CoordinatorNotAvailable.Code
	}
	c.log.WithFields(logrus.Fields{"api": what, "transactional_id": id, "error": err}).Error("transaction state not stored")
	return kerr.KafkaStorageError.Code
}

// fenced is the answer to a producer whose epoch is not the current
// one: PRODUCER_FENCED from the version that knows it (KIP-588), before
// it INVALID_PRODUCER_EPOCH.
func fenced(version, since int16) int16 {
	if version >= since {
		return kerr.ProducerFenced.Code
	}
	return kerr.InvalidProducerEpoch.Code
}

// settle finishes a transaction a failed EndTxn (or a crash) left
// Prepare: its decision is stored, so it can only be carried out. A
// request waits for that at most scanPerID (another group's leader may be
// down) and is answered CONCURRENT_TRANSACTIONS, which clients retry, as
// Kafka answers while a transaction's markers are pending.
func (c *Coordinator) settle(ctx context.Context, e *entry) int16 {
	if !e.t.State.decided() {
		return 0
	}
	ctx, cancel := context.WithTimeout(ctx, scanPerID)
	defer cancel()
	var err error
	if !e.marked {
		err = c.redoMarkers(ctx, e)
	}
	if err == nil {
		err = c.complete(ctx, e)
	}
	if err != nil {
		c.log.WithFields(logrus.Fields{"transactional_id": e.t.ID, "error": err}).Warn("decided transaction not completed yet")
		return kerr.ConcurrentTransactions.Code
	}
	return 0
}

// locked runs fn on the id's entry with its lock held and returns fn's
// code; an id never initialized is INVALID_PRODUCER_ID_MAPPING.
func (c *Coordinator) locked(id string, fn func(e *entry) int16) int16 {
	e := c.lookup(id, false)
	if e == nil {
		return kerr.InvalidProducerIDMapping.Code
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	return fn(e)
}

// check validates a request's producer id and epoch against the id's
// state, after settling a transaction left Prepare.
func (c *Coordinator) check(ctx context.Context, e *entry, pid int64, epoch int16, version, fencedSince int16) int16 {
	switch {
	case e.t.State == Dead || pid != e.t.ProducerID:
		return kerr.InvalidProducerIDMapping.Code
	case epoch != e.t.Epoch:
		return fenced(version, fencedSince)
	}
	return c.settle(ctx, e)
}

// InitProducerID gives a transactional producer its id and a new epoch,
// fencing every earlier producer of the id: an Ongoing transaction of
// theirs is aborted first. A producer re-initializing with its own id
// and epoch (KIP-360) keeps the id; one with another id or an older epoch
// is fenced.
func (c *Coordinator) InitProducerID(ctx context.Context, req *kmsg.InitProducerIDRequest) *kmsg.InitProducerIDResponse {
	resp := req.ResponseKind().(*kmsg.InitProducerIDResponse)
	resp.ProducerID, resp.ProducerEpoch = -1, -1
	id := *req.TransactionalID
	timeout := time.Duration(req.TransactionTimeoutMillis) * time.Millisecond
	if timeout <= 0 || timeout > c.opts.MaxTimeout {
		resp.ErrorCode = kerr.InvalidTransactionTimeout.Code
		return resp
	}
	e := c.lockLive(id)
	defer e.mu.Unlock()
	next := e.t.clone()
	if e.t.State != Dead {
		if req.ProducerID >= 0 && (req.ProducerID != e.t.ProducerID || req.ProducerEpoch != e.t.Epoch && req.ProducerEpoch != e.t.PrevEpoch) {
			resp.ErrorCode = fenced(req.Version, 4)
			return resp
		}
		if resp.ErrorCode = c.settle(ctx, e); resp.ErrorCode != 0 {
			return resp
		}
		if e.t.State == Ongoing {
			if err := c.end(ctx, e, false, e.t.Epoch+1); err != nil {
				resp.ErrorCode = c.code("InitProducerId", id, err)
				return resp
			}
		}
		next = e.t.clone()
	}
	if e.t.State == Dead || e.t.Epoch >= math.MaxInt16-1 {
		// A new id, or epochs exhausted: a new id starts at epoch 0.
		pid, err := c.opts.IDs.Allocate()
		if err != nil {
			resp.ErrorCode = c.code("InitProducerId", id, err)
			return resp
		}
		next.ProducerID, next.Epoch = pid, 0
	} else {
		next.Epoch++
	}
	next.PrevEpoch = -1
	next.TimeoutMs = req.TransactionTimeoutMillis
	next.State = Empty
	next.Partitions, next.Groups, next.Offsets = nil, nil, nil
	if err := c.persist(ctx, e, next, nil); err != nil {
		resp.ErrorCode = c.code("InitProducerId", id, err)
		return resp
	}
	resp.ProducerID, resp.ProducerEpoch = next.ProducerID, next.Epoch
	return resp
}

// begin is the state a transaction's first AddPartitions or AddOffsets
// moves to: Ongoing from now on, or the Ongoing one continued.
func (c *Coordinator) begin(t Txn) Txn {
	next := t.clone()
	if t.State != Ongoing {
		next.State = Ongoing
		next.StartMs = c.clock.Now().UnixMilli()
		next.Partitions, next.Groups, next.Offsets = nil, nil, nil
	}
	return next
}

// AddPartitionsToTxn adds partitions to the producer's transaction,
// starting it. If any named partition does not exist none is added: it
// is answered UNKNOWN_TOPIC_OR_PARTITION and the others
// OPERATION_NOT_ATTEMPTED, as Kafka does.
func (c *Coordinator) AddPartitionsToTxn(ctx context.Context, req *kmsg.AddPartitionsToTxnRequest, exists func(topic string, partition int32) bool) *kmsg.AddPartitionsToTxnResponse {
	resp := req.ResponseKind().(*kmsg.AddPartitionsToTxnResponse)
	code := c.locked(req.TransactionalID, func(e *entry) int16 { return c.addPartitions(ctx, e, req, exists) })
	for _, t := range req.Topics {
		rt := kmsg.NewAddPartitionsToTxnResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewAddPartitionsToTxnResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p, code
			if code == -1 {
				rp.ErrorCode = kerr.OperationNotAttempted.Code
				if !exists(t.Topic, p) {
					rp.ErrorCode = kerr.UnknownTopicOrPartition.Code
				}
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

// addPartitions returns the code for every partition, or -1 when some
// partition is unknown.
func (c *Coordinator) addPartitions(ctx context.Context, e *entry, req *kmsg.AddPartitionsToTxnRequest, exists func(string, int32) bool) int16 {
	if code := c.check(ctx, e, req.ProducerID, req.ProducerEpoch, req.Version, 2); code != 0 {
		return code
	}
	next := c.begin(e.t)
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			if !exists(t.Topic, p) {
				return -1
			}
			next.addPartition(TopicPartition{t.Topic, p})
		}
	}
	if e.t.State == Ongoing && slices.Equal(next.Partitions, e.t.Partitions) {
		return 0
	}
	return c.code("AddPartitionsToTxn", e.t.ID, c.persist(ctx, e, next, nil))
}

// AddOffsetsToTxn adds a group to the producer's transaction, so that
// TxnOffsetCommit may commit its offsets in it.
func (c *Coordinator) AddOffsetsToTxn(ctx context.Context, req *kmsg.AddOffsetsToTxnRequest) *kmsg.AddOffsetsToTxnResponse {
	resp := req.ResponseKind().(*kmsg.AddOffsetsToTxnResponse)
	resp.ErrorCode = c.locked(req.TransactionalID, func(e *entry) int16 {
		if code := c.check(ctx, e, req.ProducerID, req.ProducerEpoch, req.Version, 2); code != 0 {
			return code
		}
		next := c.begin(e.t)
		next.addGroup(req.Group)
		if e.t.State == Ongoing && slices.Equal(next.Groups, e.t.Groups) {
			return 0
		}
		return c.code("AddOffsetsToTxn", e.t.ID, c.persist(ctx, e, next, nil))
	})
	return resp
}

// TxnOffsetCommit stores offsets in the transaction; the group sees them
// when it commits, never if it aborts. From v3 the member and generation
// are checked as an OffsetCommit's, so a member that lost its partitions
// in a rebalance cannot commit them.
func (c *Coordinator) TxnOffsetCommit(ctx context.Context, req *kmsg.TxnOffsetCommitRequest) *kmsg.TxnOffsetCommitResponse {
	resp := req.ResponseKind().(*kmsg.TxnOffsetCommitResponse)
	resp.Topics = OffsetCommitAnswers(req.Topics, c.locked(req.TransactionalID, func(e *entry) int16 { return c.txnOffsetCommit(ctx, e, req) }))
	return resp
}

// OffsetCommitAnswers answers every partition of a TxnOffsetCommit's
// topics with code (0: stored in the transaction); the broker answers
// refused commits with it too.
func OffsetCommitAnswers(topics []kmsg.TxnOffsetCommitRequestTopic, code int16) []kmsg.TxnOffsetCommitResponseTopic {
	out := make([]kmsg.TxnOffsetCommitResponseTopic, 0, len(topics))
	for _, t := range topics {
		rt := kmsg.NewTxnOffsetCommitResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewTxnOffsetCommitResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p.Partition, code
			rt.Partitions = append(rt.Partitions, rp)
		}
		out = append(out, rt)
	}
	return out
}

func (c *Coordinator) txnOffsetCommit(ctx context.Context, e *entry, req *kmsg.TxnOffsetCommitRequest) int16 {
	if code := c.check(ctx, e, req.ProducerID, req.ProducerEpoch, req.Version, 3); code != 0 {
		return code
	}
	if _, added := slices.BinarySearch(e.t.Groups, req.Group); e.t.State != Ongoing || !added {
		return kerr.InvalidTxnState.Code
	}
	if req.Version >= 3 && (req.Generation >= 0 || req.MemberID != "") {
		if code := c.opts.Groups.CheckMember(req.Group, req.MemberID, req.InstanceID, req.Generation); code != 0 {
			return code
		}
	}
	next := e.t.clone()
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			o := Offset{Group: req.Group, Topic: t.Topic, Partition: p.Partition, Offset: p.Offset, LeaderEpoch: -1}
			if req.Version >= 2 {
				o.LeaderEpoch = p.LeaderEpoch
			}
			if p.Metadata != nil {
				o.Metadata = *p.Metadata
			}
			next.addOffset(o)
		}
	}
	return c.code("TxnOffsetCommit", e.t.ID, c.persist(ctx, e, next, nil))
}

// EndTxn commits or aborts the producer's transaction. It answers once
// the decision and every partition's marker are stored (one append) and,
// at a commit, the offsets are committed to their groups. A retry of the
// same decision is answered as the first was.
func (c *Coordinator) EndTxn(ctx context.Context, req *kmsg.EndTxnRequest) *kmsg.EndTxnResponse {
	resp := req.ResponseKind().(*kmsg.EndTxnResponse)
	resp.ErrorCode = c.locked(req.TransactionalID, func(e *entry) int16 { return c.endTxn(ctx, e, req) })
	return resp
}

func (c *Coordinator) endTxn(ctx context.Context, e *entry, req *kmsg.EndTxnRequest) int16 {
	if req.ProducerID == e.t.ProducerID && req.ProducerEpoch == e.t.PrevEpoch && e.t.State == CompleteAbort && !req.Commit {
		// The abort of a transaction the coordinator timed out.
		return 0
	}
	if code := c.check(ctx, e, req.ProducerID, req.ProducerEpoch, req.Version, 2); code != 0 {
		return code
	}
	switch s := e.t.State; {
	case s == Ongoing:
		return c.code("EndTxn", e.t.ID, c.end(ctx, e, req.Commit, e.t.Epoch))
	case s == CompleteCommit && req.Commit, s == CompleteAbort && !req.Commit:
		return 0
	}
	return kerr.InvalidTxnState.Code
}

// Describe returns a copy of the id's state as last stored, without
// waiting for a request that is changing it; false if the id is unknown.
func (c *Coordinator) Describe(id string) (Txn, bool) {
	e := c.lookup(id, false)
	if e == nil {
		return Txn{}, false
	}
	t := e.view.Load()
	if t == nil {
		return Txn{}, false
	}
	return t.clone(), t.State != Dead
}

// DescribeTransactions answers each id's state.
func (c *Coordinator) DescribeTransactions(req *kmsg.DescribeTransactionsRequest) *kmsg.DescribeTransactionsResponse {
	resp := req.ResponseKind().(*kmsg.DescribeTransactionsResponse)
	for _, id := range req.TransactionalIDs {
		rs := kmsg.NewDescribeTransactionsResponseTransactionState()
		rs.TransactionalID = id
		t, ok := c.Describe(id)
		if !ok {
			rs.ErrorCode = kerr.TransactionalIDNotFound.Code
			rs.ProducerID, rs.ProducerEpoch, rs.StartTimestamp = -1, -1, -1
			resp.TransactionStates = append(resp.TransactionStates, rs)
			continue
		}
		rs.State, rs.TimeoutMillis, rs.ProducerID, rs.ProducerEpoch = t.State.String(), t.TimeoutMs, t.ProducerID, t.Epoch
		rs.StartTimestamp = -1
		if t.State.open() {
			rs.StartTimestamp = t.StartMs
		}
		for _, tp := range t.Partitions {
			if n := len(rs.Topics); n == 0 || rs.Topics[n-1].Topic != tp.Topic {
				rt := kmsg.NewDescribeTransactionsResponseTransactionStateTopic()
				rt.Topic = tp.Topic
				rs.Topics = append(rs.Topics, rt)
			}
			rt := &rs.Topics[len(rs.Topics)-1]
			rt.Partitions = append(rt.Partitions, tp.Partition)
		}
		resp.TransactionStates = append(resp.TransactionStates, rs)
	}
	return resp
}

// ListTransactions lists the ids that pass the request's filters, sorted
// by id.
func (c *Coordinator) ListTransactions(req *kmsg.ListTransactionsRequest) *kmsg.ListTransactionsResponse {
	resp := req.ResponseKind().(*kmsg.ListTransactionsResponse)
	states := make(map[State]bool)
	for _, name := range req.StateFilters {
		if s, ok := ParseState(name); ok {
			states[s] = true
		} else {
			resp.UnknownStateFilters = append(resp.UnknownStateFilters, name)
		}
	}
	now := c.clock.Now().UnixMilli()
	for _, e := range c.entries() {
		t := e.view.Load()
		switch {
		case t == nil, t.State == Dead:
		case len(req.StateFilters) > 0 && !states[t.State]:
		case len(req.ProducerIDFilters) > 0 && !slices.Contains(req.ProducerIDFilters, t.ProducerID):
		case req.DurationFilterMillis >= 0 && req.Version >= 1 && (t.State != Ongoing || now-t.StartMs < req.DurationFilterMillis):
		default:
			rs := kmsg.NewListTransactionsResponseTransactionState()
			rs.TransactionalID, rs.ProducerID, rs.TransactionState = t.ID, t.ProducerID, t.State.String()
			resp.TransactionStates = append(resp.TransactionStates, rs)
		}
	}
	slices.SortFunc(resp.TransactionStates, func(a, b kmsg.ListTransactionsResponseTransactionState) int {
		return cmp.Compare(a.TransactionalID, b.TransactionalID)
	})
	return resp
}

// Counts is how many transactional ids are in each state, for metrics;
// it reads the published states, never waiting on a request.
func (c *Coordinator) Counts() map[State]int {
	out := make(map[State]int)
	for _, e := range c.entries() {
		if w := e.writes.Load(); w != nil {
			out[w.state]++
		}
	}
	return out
}
