package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/unilog/unilog/auth"
)

// Special ListOffsets timestamps.
const (
	listLatest   = -1
	listEarliest = -2
)

func init() {
	register(kmsg.ListOffsets, 1, 6, (*Broker).handleListOffsets, authorizeListOffsets)
}

// authorizeListOffsets: a topic the principal may not consume is answered
// TOPIC_AUTHORIZATION_FAILED.
func authorizeListOffsets(z authz, req kmsg.Request) (kmsg.Response, error) {
	r := req.(*kmsg.ListOffsetsRequest)
	return authorizeEach(z, &r.Topics, topicNamed(func(t kmsg.ListOffsetsRequestTopic) string { return t.Topic }, z.allow(auth.Consume)),
		func(lr *kmsg.ListOffsetsResponse, t kmsg.ListOffsetsRequestTopic) {
			rt := kmsg.NewListOffsetsResponseTopic()
			rt.Topic = t.Topic
			for _, tp := range t.Partitions {
				rp := kmsg.NewListOffsetsResponseTopicPartition()
				rp.Partition = tp.Partition
				rp.ErrorCode = kerr.TopicAuthorizationFailed.Code
				rp.Offset, rp.Timestamp = -1, -1
				rt.Partitions = append(rt.Partitions, rp)
			}
			lr.Topics = append(lr.Topics, rt)
		})
}

// handleListOffsets answers earliest, latest, and the first offset of the
// first batch whose max timestamp (CreateTime) is at or after a time (the
// consume queue's binary search, as the package doc describes).
func (b *Broker) handleListOffsets(_ context.Context, _ *conn, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.ListOffsetsRequest)
	resp := req.ResponseKind().(*kmsg.ListOffsetsResponse)
	for _, t := range req.Topics {
		rt := kmsg.NewListOffsetsResponseTopic()
		rt.Topic = t.Topic
		meta, known := b.meta.Topic(t.Topic)
		for _, p := range t.Partitions {
			rp := kmsg.NewListOffsetsResponseTopicPartition()
			rp.Partition = p.Partition
			rp.Timestamp = -1
			rp.Offset = -1
			rp.LeaderEpoch = -1
			if !known || p.Partition < 0 || p.Partition >= meta.Partitions {
				rp.ErrorCode = kerr.UnknownTopicOrPartition.Code
				rt.Partitions = append(rt.Partitions, rp)
				continue
			}
			if !b.leads(t.Topic, p.Partition) {
				rp.ErrorCode = kerr.NotLeaderForPartition.Code
				rt.Partitions = append(rt.Partitions, rp)
				continue
			}
			lo, hi, _ := b.visibleBounds(meta, p.Partition)
			if req.IsolationLevel == readCommitted {
				// What a read_committed consumer may fetch ends at the
				// last stable offset, for the latest and a time alike.
				hi = b.lastStable(t.Topic, p.Partition, hi)
			}
			rp.LeaderEpoch = 0
			switch ts := p.Timestamp; {
			case ts == listLatest:
				rp.Offset = hi
			case ts == listEarliest:
				rp.Offset = lo
			case ts < 0:
				rp.ErrorCode = kerr.UnsupportedVersion.Code
			default:
				// Only what a consumer may fetch counts: the queue still
				// indexes records below a log start DeleteRecords or
				// retention moved, and above the high watermark. Below the
				// start the answer is the start (timestamps never fall along
				// the queue, so it too is at or after ts), with the
				// timestamp found, which is at most its own.
				if off, batchTS, ok := b.st.OffsetForTime(t.Topic, p.Partition, ts); ok && off < hi {
					rp.Offset = max(off, lo)
					rp.Timestamp = batchTS
				}
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}
