package broker

import (
	"context"
	"errors"
	"math"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// handleFetch serves stored batches as stored: the consume queue locates
// the batch holding each requested offset, its bytes are copied from the
// mapped log into the response, and reading continues with the next batch.
// When fewer than min_bytes are available the request waits, up to
// max_wait_ms, on one dispatcher waiter registered on every partition it
// asked for; the connection closing or a broker Close ends the wait early.
// Every return releases the waiter, so an idle consumer polling thousands
// of partitions holds nothing between its fetches.
//
// Fetch sessions (KIP-227) are not kept: SessionID 0 in the answer tells the
// client to send full requests.
func (b *Broker) handleFetch(ctx context.Context, _ *conn, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.FetchRequest)
	if req.Version >= 7 && (req.SessionID != 0 || req.SessionEpoch > 0) {
		resp := req.ResponseKind().(*kmsg.FetchResponse)
		resp.ErrorCode = kerr.FetchSessionIDNotFound.Code
		return resp, nil
	}
	var w Waiter
	if req.MaxWaitMillis > 0 {
		w = b.st.NewWaiter()
		defer w.Release()
	}
	var timer *time.Timer
	for {
		// Taken before the read: a move of the high watermark after it
		// still wakes the wait.
		replicated := b.replicationChanged()
		resp, total, failed, unreplicated := b.fetchOnce(req, w)
		if failed || total >= int(req.MinBytes) || w == nil {
			b.metrics.fetchedBytes.Add(float64(total))
			return resp, nil
		}
		if !unreplicated {
			replicated = nil
		}
		if timer == nil {
			timer = time.NewTimer(time.Duration(req.MaxWaitMillis) * time.Millisecond)
			defer timer.Stop()
		}
		select {
		case <-w.C():
			// A partition grew: drop the other registrations, read again.
			w.Release()
			continue
		case <-replicated:
			w.Release()
			continue
		case <-timer.C:
		case <-b.closing:
		case <-ctx.Done():
		}
		w.Release()
		resp, total, _, _ = b.fetchOnce(req, nil)
		b.metrics.fetchedBytes.Add(float64(total))
		return resp, nil
	}
}

// fetchOnce builds a response from what is stored now. It returns the
// number of record bytes, whether any partition failed (which answers at
// once, as Kafka), and whether a partition holds records waiting for the
// replication high watermark. With a waiter, each other partition is
// watched from the high watermark it was read at, so data arriving after
// the read still wakes the long poll.
func (b *Broker) fetchOnce(req *kmsg.FetchRequest, w Waiter) (resp *kmsg.FetchResponse, total int, failed, unreplicated bool) {
	resp = req.ResponseKind().(*kmsg.FetchResponse)
	maxBytes := int(req.MaxBytes)
	if req.Version < 3 || maxBytes <= 0 {
		maxBytes = math.MaxInt32
	}
	for _, t := range req.Topics {
		rt := kmsg.NewFetchResponseTopic()
		rt.Topic = t.Topic
		rt.TopicID = t.TopicID
		meta, known := b.meta.Topic(t.Topic)
		for _, p := range t.Partitions {
			rp := kmsg.NewFetchResponseTopicPartition()
			rp.Partition = p.Partition
			rp.HighWatermark = -1
			rp.LastStableOffset = -1
			rp.LogStartOffset = -1
			// Empty, not null, records: librdkafka rejects a null.
			rp.RecordBatches = []byte{}
			if !known || p.Partition < 0 || p.Partition >= meta.Partitions {
				rp.ErrorCode = kerr.UnknownTopicOrPartition.Code
				failed = true
				rt.Partitions = append(rt.Partitions, rp)
				continue
			}
			if !b.leads(t.Topic, p.Partition) {
				rp.ErrorCode = kerr.NotLeaderForPartition.Code
				failed = true
				rt.Partitions = append(rt.Partitions, rp)
				continue
			}
			lo, hi, stored := b.visibleBounds(t.Topic, p.Partition)
			rp.HighWatermark = hi
			rp.LastStableOffset = hi
			rp.LogStartOffset = lo
			// Between the visible and the stored end is not out of range:
			// those records become visible once replicated.
			if p.FetchOffset < lo || p.FetchOffset > stored {
				rp.ErrorCode = kerr.OffsetOutOfRange.Code
				failed = true
				rt.Partitions = append(rt.Partitions, rp)
				continue
			}
			budget := min(int(p.PartitionMaxBytes), maxBytes-total)
			if p.PartitionMaxBytes <= 0 {
				budget = maxBytes - total
			}
			recs, err := b.readBatches(t.Topic, p.Partition, p.FetchOffset, hi, budget, total == 0)
			if err != nil {
				rp.ErrorCode = err.Code
				failed = true
			}
			if recs != nil {
				rp.RecordBatches = recs
			}
			total += len(recs)
			switch {
			case hi < stored:
				// Stored beyond hi already: the high watermark's move wakes it.
				unreplicated = true
			case w != nil:
				w.Watch(t.Topic, p.Partition, hi)
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, total, failed, unreplicated
}

// readBatches copies whole stored batches from offset up to hi while they
// fit in budget. When first is set (nothing else in the response yet) the
// first batch is returned even if it alone exceeds the budget, so a
// consumer never stalls on a batch larger than its limits (KIP-74).
func (b *Broker) readBatches(topic string, partition int32, offset, hi int64, budget int, first bool) ([]byte, *kerr.Error) {
	var recs []byte
	for offset < hi {
		out, _, next, err := b.st.ReadBatch(topic, partition, offset, recs)
		if err != nil {
			if len(recs) > 0 {
				break
			}
			if errors.Is(err, ErrStorageRange) {
				return nil, kerr.OffsetOutOfRange
			}
			b.log.WithFields(logrus.Fields{"api": "Fetch", "topic": topic, "partition": partition, "offset": offset, "error": err}).Error("read failed")
			return nil, kerr.KafkaStorageError
		}
		if len(out) > budget && !(first && len(recs) == 0) {
			break
		}
		recs = out
		offset = next
		if len(recs) >= budget {
			break
		}
	}
	return recs, nil
}
