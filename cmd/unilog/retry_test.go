package main

import (
	"context"
	"encoding/binary"
	"hash/crc32"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/unilog/unilog/internal/poll"
)

// idempotentRetry is one idempotent batch of a producer that the test,
// not a client library, resends: the retry of a batch whose answer the
// producer lost, aimed at whichever node leads by then.
type idempotentRetry struct {
	batch     []byte
	topic     string
	partition int32
}

// newIdempotentRetry asks for a producer id and encodes a one-record
// batch of value as its first (sequence 0).
func newIdempotentRetry(t *testing.T, ctx context.Context, cl *kgo.Client, topic string, partition int32, value string) *idempotentRetry {
	t.Helper()
	init, err := kmsg.NewPtrInitProducerIDRequest().RequestWith(ctx, cl)
	if err != nil || init.ErrorCode != 0 {
		t.Fatalf("InitProducerID: %v %v", err, kerr.ErrorForCode(init.ErrorCode))
	}
	rec := kmsg.NewRecord()
	rec.Value = []byte(value)
	rec.Length = int32(len(rec.AppendTo(nil)) - 1)
	rb := kmsg.NewRecordBatch()
	rb.Magic = 2
	rb.ProducerID, rb.ProducerEpoch, rb.FirstSequence = init.ProducerID, init.ProducerEpoch, 0
	rb.NumRecords = 1
	rb.Records = rec.AppendTo(nil)
	b := rb.AppendTo(nil)
	binary.BigEndian.PutUint32(b[8:], uint32(len(b)-12))
	binary.BigEndian.PutUint32(b[17:], crc32.Checksum(b[21:], crc32.MakeTable(crc32.Castagnoli)))
	return &idempotentRetry{batch: b, topic: topic, partition: partition}
}

// send produces the batch with acks=-1 until a node answers it without a
// retriable error (the client finds the leader through Metadata) and
// returns the base offset it was given.
func (r *idempotentRetry) send(t *testing.T, ctx context.Context, cl *kgo.Client) int64 {
	t.Helper()
	var base int64
	poll.True(t, "the idempotent batch acknowledged", func() bool {
		req := kmsg.NewPtrProduceRequest()
		req.Acks, req.TimeoutMillis = -1, 10_000
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = r.topic
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Partition, rp.Records = r.partition, r.batch
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			return false
		}
		p := resp.Topics[0].Partitions[0]
		if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
			if !kerr.IsRetriable(err) {
				t.Fatalf("idempotent batch: %v", err)
			}
			return false
		}
		base = p.BaseOffset
		return true
	})
	return base
}
