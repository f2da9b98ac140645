package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Special ListOffsets timestamps.
const (
	listLatest   = -1
	listEarliest = -2
)

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
			lo, hi, _ := b.visibleBounds(t.Topic, p.Partition)
			rp.LeaderEpoch = 0
			switch ts := p.Timestamp; {
			case ts == listLatest:
				rp.Offset = hi
			case ts == listEarliest:
				rp.Offset = lo
			case ts < 0:
				rp.ErrorCode = kerr.UnsupportedVersion.Code
			default:
				if off, batchTS, ok := b.st.OffsetForTime(t.Topic, p.Partition, ts); ok {
					rp.Offset = off
					rp.Timestamp = batchTS
				}
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}
