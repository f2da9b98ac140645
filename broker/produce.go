package broker

import (
	"context"
	"errors"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/unilog/unilog/commitlog"
)

// defaultProduceTimeout bounds the durability wait when the client sends no
// timeout.
const defaultProduceTimeout = 30 * time.Second

// handleProduce validates and appends each partition's batch, then waits
// for what the acks level promises: acks=0 and 1 return after the append,
// acks=-1 after the flush covering it when the log flushes synchronously.
// Every answered append is also indexed before the answer, so a consumer
// sees a record as soon as its producer does.
func (b *Broker) handleProduce(ctx context.Context, c *conn, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.ProduceRequest)
	resp := req.ResponseKind().(*kmsg.ProduceResponse)

	var reqErr *kerr.Error
	switch {
	case req.Acks != 0 && req.Acks != 1 && req.Acks != -1:
		reqErr = kerr.InvalidRequiredAcks
	case req.TransactionID != nil:
		reqErr = kerr.TransactionalIDAuthorizationFailed
	}
	// Every wait of the request ends with its timeout or its connection.
	timeout := defaultProduceTimeout
	if req.TimeoutMillis > 0 {
		timeout = time.Duration(req.TimeoutMillis) * time.Millisecond
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	if reqErr == nil && b.cfg.AutoCreateTopics {
		for _, t := range req.Topics {
			b.autoCreate(t.Topic)
		}
	}

	var (
		end      int64 = -1
		failed   bool
		appended []*kmsg.ProduceResponseTopicPartition
		nbytes   int
	)
	// The topic lock covers the appends only, never a wait: CreateTopics
	// queued for it exclusively would otherwise hold up every produce.
	b.topicMu.RLock()
	for _, t := range req.Topics {
		rt := kmsg.NewProduceResponseTopic()
		rt.Topic = t.Topic
		meta, known := b.meta.Topic(t.Topic)
		for _, p := range t.Partitions {
			rp := kmsg.NewProduceResponseTopicPartition()
			rp.Partition = p.Partition
			rp.BaseOffset = -1
			rp.LogAppendTime = -1
			rp.LogStartOffset = -1
			switch {
			case reqErr != nil:
				rp.ErrorCode = reqErr.Code
			case !known || p.Partition < 0 || p.Partition >= meta.Partitions:
				rp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			case isInternalTopic(t.Topic):
				rp.ErrorCode = kerr.InvalidTopicException.Code
			case !b.leads(t.Topic, p.Partition):
				rp.ErrorCode = kerr.NotLeaderForPartition.Code
			default:
				res := b.producePartition(t.Topic, p.Partition, p.Records)
				if res.err != nil {
					rp.ErrorCode = res.err.Code
					if res.msg != "" {
						rp.ErrorMessage = &res.msg
					}
					break
				}
				rp.BaseOffset = res.base
				rp.LogStartOffset, _ = b.st.Bounds(t.Topic, p.Partition)
				if res.end > end {
					end = res.end
				}
				nbytes += len(p.Records)
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	b.topicMu.RUnlock()
	b.metrics.producedBytes.Add(float64(nbytes))

	for i := range resp.Topics {
		for j := range resp.Topics[i].Partitions {
			rp := &resp.Topics[i].Partitions[j]
			if rp.ErrorCode != 0 {
				failed = true
			} else {
				appended = append(appended, rp)
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
		if code := b.waitProduced(ctx, req.Acks, end); code != 0 {
			for _, rp := range appended {
				rp.ErrorCode = code
				rp.BaseOffset = -1
			}
		}
	}
	return resp, nil
}

// waitProduced waits until the appends through end are indexed and, for
// acks=-1, durable with sync flushing and replicated with sync
// replication; it returns a Kafka error code.
func (b *Broker) waitProduced(ctx context.Context, acks int16, end int64) int16 {
	if acks == -1 && b.cfg.Flush == commitlog.FlushSync {
		if err := b.st.WaitDurable(ctx, end); err != nil {
			return b.waitError("flush", err)
		}
	}
	if err := b.st.WaitDispatched(ctx, end); err != nil {
		return b.waitError("dispatch", err)
	}
	if acks == -1 {
		return b.waitReplicated(ctx, end)
	}
	return 0
}

func (b *Broker) waitError(what string, err error) int16 {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		// Canceled: the client left; nobody reads this answer.
		return kerr.RequestTimedOut.Code
	}
	b.log.WithFields(logrus.Fields{"api": "Produce", "wait": what, "error": err}).Error("produce wait failed")
	return kerr.KafkaStorageError.Code
}

type produceResult struct {
	base, end int64
	err       *kerr.Error
	msg       string
}

// producePartition up-converts a legacy message set, validates the batch,
// applies the idempotence checks and appends it as one commit log record,
// all under the partition's lock so sequence checks and offset assignment
// cannot interleave. It never waits: a duplicate returns its original's
// offsets, and the caller waits on them as on a fresh append, so a retry is
// acknowledged only on the same terms as the original.
func (b *Broker) producePartition(topic string, partition int32, records []byte) produceResult {
	if isLegacyMessageSet(records) {
		converted, berr := upConvertMessageSet(records, b.cfg.MaxMessageBytes)
		if berr != nil {
			return produceResult{err: berr.err, msg: berr.msg}
		}
		records = converted
	}
	bi, berr := validateBatch(records, b.cfg.MaxMessageBytes)
	if berr != nil {
		return produceResult{err: berr.err, msg: berr.msg}
	}
	p := b.partition(topic, partition)
	p.mu.Lock()
	defer p.mu.Unlock()
	if bi.producerID >= 0 {
		switch res := p.check(bi); {
		case res.err != nil:
			return produceResult{err: res.err}
		case res.duplicate:
			return produceResult{base: res.original.baseOffset, end: res.original.end}
		}
	}
	base, end, err := b.st.Append(topic, partition, bi.numRecords, bi.maxTimestamp, records)
	if b.noteAppend(err) {
		return errReadOnlyResult()
	}
	if err != nil {
		if errors.Is(err, ErrStorageTooLarge) {
			return produceResult{err: kerr.MessageTooLarge, msg: err.Error()}
		}
		if errors.Is(err, errStorageReadOnly) {
			// Retriable, and not logged per request: the log says so once
			// and a failed flush shows in unilog_log_write_failed.
			return produceResult{err: kerr.KafkaStorageError, msg: err.Error()}
		}
		b.log.WithFields(logrus.Fields{"api": "Produce", "topic": topic, "partition": partition, "error": err}).Error("append failed")
		return produceResult{err: kerr.KafkaStorageError, msg: err.Error()}
	}
	if bi.producerID >= 0 {
		p.record(bi, base, end)
		b.producerChanges.Add(1)
	}
	b.metrics.producedRecords.Add(float64(bi.numRecords))
	return produceResult{base: base, end: end}
}
