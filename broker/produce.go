package broker

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/unilog/unilog/auth"
	"github.com/unilog/unilog/producerstate"
	"github.com/unilog/unilog/store"
	"github.com/unilog/unilog/txn"
)

// defaultProduceTimeout bounds the durability wait when the client sends no
// timeout.
const defaultProduceTimeout = 30 * time.Second

// Produce v2 carries magic 0/1 message sets, which are up-converted to v2
// batches (legacy.go); v13 addresses topics by id only, which is not served.
func init() {
	register(kmsg.Produce, 2, 12, (*Broker).handleProduce, authorizeProduce)
}

// authorizeProduce: a topic the principal may not write is answered
// TOPIC_AUTHORIZATION_FAILED, or, under acks=0, by closing the connection.
func authorizeProduce(z authz, req kmsg.Request) (kmsg.Response, error) {
	r := req.(*kmsg.ProduceRequest)
	allow, denied, code := z.allow(auth.Produce), false, kerr.TopicAuthorizationFailed
	if r.TransactionID != nil && !z.transactional(*r.TransactionID) {
		// Every topic is refused, with the transactional id's error.
		allow, code = func(string) bool { return false }, kerr.TransactionalIDAuthorizationFailed
	}
	resp, err := authorizeEach(z, &r.Topics, func(t kmsg.ProduceRequestTopic) bool {
		ok := allow(t.Topic)
		denied = denied || !ok
		return ok
	}, func(pr *kmsg.ProduceResponse, t kmsg.ProduceRequestTopic) {
		rt := kmsg.NewProduceResponseTopic()
		rt.Topic = t.Topic
		for _, tp := range t.Partitions {
			rp := kmsg.NewProduceResponseTopicPartition()
			rp.Partition = tp.Partition
			rp.ErrorCode = code.Code
			rp.BaseOffset, rp.LogAppendTime, rp.LogStartOffset = -1, -1, -1
			rt.Partitions = append(rt.Partitions, rp)
		}
		pr.Topics = append(pr.Topics, rt)
	})
	if denied && err == nil && r.Acks == 0 {
		return nil, errAcksZeroDenied
	}
	return resp, err
}

// handleProduce validates each partition's batch, appends the valid ones
// with one Storage.Append, then waits for what the acks level promises:
// acks=0 and 1 return after the append, acks=-1 after the flush covering it
// when the log flushes synchronously (under sync replication it is not
// appended at all while too few replicas are in sync). Every answered
// append is also indexed before the answer, so a consumer sees a record as
// soon as its producer does. A client spreading records over thousands of partitions sends
// thousands of small batches per request, so everything here that is not
// inherently per batch (locks, the log's lock and wake-ups, allocations)
// is paid once per request.
func (b *Broker) handleProduce(ctx context.Context, c *conn, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.ProduceRequest)
	resp := req.ResponseKind().(*kmsg.ProduceResponse)

	var reqErr *kerr.Error
	if req.Acks != 0 && req.Acks != 1 && req.Acks != -1 {
		reqErr = kerr.InvalidRequiredAcks
	}
	// Every wait of the request ends with its timeout or its connection.
	timeout := defaultProduceTimeout
	if req.TimeoutMillis > 0 {
		timeout = time.Duration(req.TimeoutMillis) * time.Millisecond
	}
	deadline := time.Now().Add(timeout)
	ctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()

	var uncreated map[string]bool
	if reqErr == nil && b.cfg.AutoCreateTopics {
		creator := b.autoCreator("Produce")
		for _, t := range req.Topics {
			if !creator.create(t.Topic) {
				if uncreated == nil {
					uncreated = make(map[string]bool)
				}
				uncreated[t.Topic] = true
			}
		}
		creator.done(c)
	}

	var reserved int64
	if reqErr == nil && needsDecompression(req) {
		if reserved = b.decompressionReserve(req); !b.inflight.acquire(reserved, c.held, ctx.Done()) {
			reqErr, reserved = kerr.RequestTimedOut, 0
		}
	}

	sc := produceScratchPool.Get().(*produceScratch)
	defer sc.release()
	sc.txn, sc.txnElsewhere = b.txnWriter(req.TransactionID)
	// The topic lock covers the appends only, never a wait: CreateTopics
	// queued for it exclusively would otherwise hold up every produce.
	b.topicMu.RLock()
	isr := -1 // in-sync replicas, counted once a topic's min.insync.replicas asks
	resp.Topics = make([]kmsg.ProduceResponseTopic, len(req.Topics))
	for i := range req.Topics {
		t := &req.Topics[i]
		rt := &resp.Topics[i]
		*rt = kmsg.NewProduceResponseTopic()
		rt.Topic = t.Topic
		// Allocated whole so that the pending batches can point into it.
		rt.Partitions = make([]kmsg.ProduceResponseTopicPartition, len(t.Partitions))
		meta, known := b.meta.Topic(t.Topic)
		leads, fenced, limits := b.topicLeads(t.Topic), b.topicFenced(t.Topic), b.produceLimits(meta)
		topicPending := len(sc.pending)
		for j := range t.Partitions {
			p := &t.Partitions[j]
			rp := &rt.Partitions[j]
			*rp = kmsg.NewProduceResponseTopicPartition()
			rp.Partition = p.Partition
			rp.BaseOffset = -1
			rp.LogAppendTime = -1
			rp.LogStartOffset = -1
			switch {
			case reqErr != nil:
				rp.ErrorCode = reqErr.Code
			case !known || p.Partition < 0 || p.Partition >= meta.Partitions:
				rp.ErrorCode = kerr.UnknownTopicOrPartition.Code
				if uncreated[t.Topic] {
					rp.ErrorMessage = &autoCreateLimitMsg
				}
			case isInternalTopic(t.Topic):
				rp.ErrorCode = kerr.InvalidTopicException.Code
			case !leads(p.Partition) || fenced(p.Partition):
				// A partition moving to another replica group takes no
				// produce while it switches (move.go).
				rp.ErrorCode = kerr.NotLeaderForPartition.Code
			case req.Acks == -1 && !b.enoughInSync(meta, &isr):
				// Refused before the append, as Kafka's: nothing stored.
				rp.ErrorCode = kerr.NotEnoughReplicas.Code
			default:
				b.prepareBatch(sc, meta, limits, p, rp)
			}
		}
		b.resolveStates(meta.Name, meta.Partitions, sc.pending[topicPending:])
	}
	if req.Acks == -1 {
		if code := b.checkInSync(); code != 0 {
			sc.refuse(code)
		}
	}
	c.stages.mark(stageValidate)
	end, nbytes := b.appendProduced(sc)
	b.topicMu.RUnlock()
	c.stages.mark(stageAppend)
	if sc.txnRefused != nil {
		b.logTxnRefusal(req.TransactionID, sc.txnRefused)
	}
	if reserved > 0 {
		b.inflight.release(reserved)
	}
	b.metrics.producedBytes.Add(float64(nbytes))

	failed := false
	for i := range resp.Topics {
		for j := range resp.Topics[i].Partitions {
			if resp.Topics[i].Partitions[j].ErrorCode != 0 {
				failed = true
			}
		}
	}
	if req.Acks == 0 {
		if failed {
			// Kafka's answer to a failed acks=0 produce: the client learns
			// of it only by the connection closing.
			return nil, errors.New("acks=0 produce failed for at least one partition")
		}
		return nil, nil
	}
	if end >= 0 {
		if c.deferProduce(resp, req.Acks, end, deadline) {
			// Answered once the connection's next produce, if already
			// read, is appended too (produce_pipeline.go).
			return nil, nil
		}
		if code := b.waitProducedTimed(ctx, req.Acks, end, &c.stages); code != 0 {
			failAppended(resp, code)
		}
	}
	return resp, nil
}

// waitProduced waits until the appends through end are indexed and, for
// acks=-1, durable with sync flushing and replicated with sync
// replication; it returns a Kafka error code.
func (b *Broker) waitProduced(ctx context.Context, acks int16, end int64) int16 {
	return b.waitProducedTimed(ctx, acks, end, nil)
}

// waitProducedTimed is waitProduced marking each wait's stage on clk.
func (b *Broker) waitProducedTimed(ctx context.Context, acks int16, end int64, clk *stageClock) int16 {
	switch what, err := b.waitStored(ctx, acks, end, clk); {
	case err == nil:
		return 0
	case what == waitReplication:
		return b.replicationCode(err, kerr.NotEnoughReplicasAfterAppend)
	default:
		return b.waitError(what, err)
	}
}

// waitReplication names the replication wait of waitStored.
const waitReplication = "replication"

// waitStored waits for the appends through end as a produce's acks ask
// (acks=-1: flushed under FlushSync and, under sync replication, on the
// in-sync replicas; any: indexed), marking each wait's stage on clk. It
// returns the first wait's error and which wait it was ("flush",
// "dispatch", waitReplication), for the caller to answer in its terms:
// Kafka error codes for a produce, errors for the transaction log.
func (b *Broker) waitStored(ctx context.Context, acks int16, end int64, clk *stageClock) (what string, err error) {
	if acks == -1 && b.st.SyncFlush() {
		if err := b.st.WaitDurable(ctx, end); err != nil {
			return "flush", err
		}
		clk.mark(stageDurable)
	}
	if err := b.st.WaitDispatched(ctx, end); err != nil {
		return "dispatch", err
	}
	clk.mark(stageDispatch)
	if acks == -1 && b.cfg.Replication != nil && b.cfg.SyncReplication {
		err := b.cfg.Replication.WaitReplicated(ctx, end)
		clk.mark(stageReplicate)
		if err != nil {
			return waitReplication, err
		}
	}
	return "", nil
}

func (b *Broker) waitError(what string, err error) int16 {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		// Canceled: the client left; nobody reads this answer.
		return kerr.RequestTimedOut.Code
	}
	b.log.WithFields(logrus.Fields{"api": "Produce", "wait": what, "error": err}).Error("produce wait failed")
	return kerr.KafkaStorageError.Code
}

// pendingBatch is one partition's validated batch of a produce request,
// waiting for the request's append; rp is its answer.
type pendingBatch struct {
	rp *kmsg.ProduceResponseTopicPartition
	p  *partitionState
	bi batchInfo
	sb StorageBatch
	// chk is the producer state's verdict, kept for recording the batch
	// once appended (appendGroup).
	chk producerstate.Checked
	// start is the log start DeleteRecords set, if later than the
	// storage's, for the answer's log start offset.
	start int64
}

// produceScratch holds one request's batches between validation and
// append; pooled, so that a request allocates nothing per partition here.
type produceScratch struct {
	pending []pendingBatch
	batches []StorageBatch  // the group's batches to append
	refs    []*pendingBatch // the pending batch of each of batches
	out     []Appended
	txn     *txn.Writer // the request's transactional id's (txn_produce.go)
	// txnElsewhere: the id's coordinator is another node (txn_produce.go).
	txnElsewhere bool
	txnRefused   *pendingBatch // the first batch checkTxnBatch refused
}

var produceScratchPool = sync.Pool{New: func() any { return new(produceScratch) }}

func (sc *produceScratch) release() {
	// Drop the request's bytes and answers before the next request.
	clear(sc.pending)
	clear(sc.batches)
	clear(sc.refs)
	sc.pending, sc.batches, sc.refs, sc.out, sc.txn, sc.txnElsewhere, sc.txnRefused = sc.pending[:0], sc.batches[:0], sc.refs[:0], sc.out[:0], nil, false, nil
	produceScratchPool.Put(sc)
}

// refuse answers every pending batch with code and appends none of them.
func (sc *produceScratch) refuse(code int16) {
	for _, pb := range sc.pending {
		pb.rp.ErrorCode = code
	}
	clear(sc.pending)
	sc.pending = sc.pending[:0]
}

// prepareBatch up-converts a legacy message set and validates the batch,
// answering rp on failure and queueing it for appendProduced otherwise,
// its partition's state resolved with the topic's other batches
// (resolveStates). This is the part of a partition's produce that needs
// no lock.
func (b *Broker) prepareBatch(sc *produceScratch, meta TopicMeta, limits produceLimits, p *kmsg.ProduceRequestTopicPartition, rp *kmsg.ProduceResponseTopicPartition) {
	topic := meta.Name
	maxBytes := limits.maxMessageBytes
	records := p.Records
	if isLegacyMessageSet(records) {
		converted, berr := upConvertMessageSet(records, maxBytes)
		if berr != nil {
			rp.ErrorCode, rp.ErrorMessage = berr.err.Code, &berr.msg
			return
		}
		records = converted
	}
	bi, berr := validateBatch(records, maxBytes)
	if berr != nil {
		rp.ErrorCode, rp.ErrorMessage = berr.err.Code, &berr.msg
		return
	}
	if limits.logAppendTime {
		bi.maxTimestamp = b.now().UnixMilli()
		stampLogAppendTime(records, bi.maxTimestamp)
		rp.LogAppendTime = bi.maxTimestamp
	}
	sc.pending = append(sc.pending, pendingBatch{
		rp:    rp,
		bi:    bi,
		start: meta.LogStarts[p.Partition],
		sb:    StorageBatch{Topic: topic, Partition: p.Partition, Count: bi.numRecords, MaxTimestamp: bi.maxTimestamp, Records: records, CRCChecked: true},
	})
}

// flushHolder is a Storage whose log can leave the flush of several
// appends to the last (store.Store under --flush sync).
type flushHolder interface {
	HoldFlushes()
	ReleaseFlushes()
}

// appendProduced applies the idempotence checks of the request's pending
// batches, appends the accepted ones with one Storage.Append and records
// them in the producer state, all under appendMu and every partition's
// lock, so that sequence checks and offset assignment cannot interleave
// with another request's. It never waits: a duplicate is answered with its
// original's offsets and the caller waits on them as on a fresh append, so
// a retry is acknowledged only on the same terms as the original. It
// returns the physical end to wait for (-1: nothing) and the bytes stored.
func (b *Broker) appendProduced(sc *produceScratch) (end int64, nbytes int) {
	end = -1
	if len(sc.pending) == 0 {
		return end, 0
	}
	b.appendMu.Lock()
	defer b.appendMu.Unlock()
	if h, ok := b.st.(flushHolder); ok && len(sc.pending) > maxAppendGroup {
		// One flush for the request's groups, not one started by each.
		h.HoldFlushes()
		defer h.ReleaseFlushes()
	}
	for start := 0; start < len(sc.pending); {
		// A partition named twice in one request (no client does it) ends
		// the group before its second batch, which is then checked
		// against the first.
		n := start
		for ; n < len(sc.pending) && n-start < maxAppendGroup && !sc.pending[n].p.inRequest; n++ {
			sc.pending[n].p.inRequest = true
			sc.pending[n].p.mu.Lock()
			sc.pending[n].p.PrefetchProducers()
		}
		e, nb := b.appendGroup(sc, sc.pending[start:n])
		for i := start; i < n; i++ {
			sc.pending[i].p.inRequest = false
			sc.pending[i].p.mu.Unlock()
		}
		end, nbytes = max(end, e), nbytes+nb
		start = n
	}
	return end, nbytes
}

// appendGroup is appendProduced for batches of distinct partitions whose
// locks are held.
func (b *Broker) appendGroup(sc *produceScratch, group []pendingBatch) (end int64, nbytes int) {
	end = -1
	sc.batches, sc.refs = sc.batches[:0], sc.refs[:0]
	for i := range group {
		if pb := &group[i]; pb.bi.producerID >= 0 {
			pb.p.Warm(pb.bi.producerID)
		}
	}
	for i := range group {
		pb := &group[i]
		if !sc.checkTxnBatch(pb) {
			continue
		}
		if pb.bi.producerID >= 0 {
			chk, err := pb.p.Check(pb.bi.producerBatch())
			switch {
			case err != nil:
				pb.rp.ErrorCode = sequenceError(err).Code
				continue
			case chk.Dup:
				pb.rp.BaseOffset = chk.Orig.Base
				lo, _ := b.st.Bounds(pb.sb.Topic, pb.sb.Partition)
				pb.rp.LogStartOffset = max(lo, pb.start)
				end = max(end, chk.Orig.End)
				nbytes += len(pb.sb.Records)
				continue
			}
			pb.chk = chk
		}
		sc.batches = append(sc.batches, pb.sb)
		sc.refs = append(sc.refs, pb)
	}
	if len(sc.batches) == 0 {
		return end, nbytes
	}
	out := sc.out[:0]
	for j := 0; j < len(sc.batches); {
		n0 := len(out)
		var err error
		out, err = b.st.Append(out, sc.batches[j:])
		full := b.noteAppend(err)
		if j += len(out) - n0; err == nil {
			break
		}
		// The batch at j failed alone; on a full disk so would the rest.
		last := j + 1
		if full {
			last = len(sc.batches)
		}
		for ; j < last; j++ {
			b.answerAppendError(sc.refs[j], err)
			out = append(out, Appended{Base: -1})
		}
	}
	sc.out = out
	// changed is added to producerChanges once a group: a locked add a
	// batch was 39% of appendGroup's own samples at 10,000 partitions.
	var records, changed int
	for j, a := range out {
		if a.Base < 0 {
			continue
		}
		pb := sc.refs[j]
		pb.rp.BaseOffset, pb.rp.LogStartOffset = a.Base, max(a.LogStart, pb.start)
		if pb.bi.producerID >= 0 {
			pb.p.RecordChecked(pb.chk, pb.bi.producerBatch(), a.Base, a.End)
			if pb.bi.transactional() {
				pb.p.BeginTxn(pb.bi.producerID, a.Base)
			}
			changed++
		}
		records += int(pb.bi.numRecords)
		end = max(end, a.End)
		nbytes += len(pb.sb.Records)
	}
	if changed > 0 {
		b.producerChanges.Add(int64(changed))
	}
	b.metrics.producedRecords.Add(float64(records))
	return end, nbytes
}

// answerAppendError answers a batch the storage refused.
func (b *Broker) answerAppendError(pb *pendingBatch, err error) {
	code, msg := kerr.KafkaStorageError, err.Error()
	switch {
	case errors.Is(err, store.ErrDiskFull):
		msg = errReadOnly // noteAppend logged it
	case errors.Is(err, ErrStorageTooLarge):
		code = kerr.MessageTooLarge
	case errors.Is(err, errStorageReadOnly):
		// Retriable, and not logged per request: the log says so once
		// and a failed flush shows in unilog_log_write_failed.
	default:
		b.log.WithFields(logrus.Fields{"api": "Produce", "topic": pb.sb.Topic, "partition": pb.sb.Partition, "error": err}).Error("append failed")
	}
	pb.rp.ErrorCode, pb.rp.ErrorMessage = code.Code, &msg
}
