package broker

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/unilog/unilog/txn"
)

// markUnstable answers UNSTABLE_OFFSET_COMMIT, when the request requires
// stable offsets (KIP-447; franz-go's group consumers always do), for the
// partitions with offsets committed in a transaction still open: their
// committed offset is about to move.
func (b *Broker) markUnstable(req *kmsg.OffsetFetchRequest, resp *kmsg.OffsetFetchResponse) *kmsg.OffsetFetchResponse {
	c := b.txns.Load()
	if !req.RequireStable || c == nil {
		return resp
	}
	unstable := kerr.UnstableOffsetCommit.Code
	if req.Version >= 8 {
		for _, g := range resp.Groups {
			pending := c.PendingOffsets(g.Group)
			for _, t := range g.Topics {
				for i := range t.Partitions {
					if pending[txn.TopicPartition{Topic: t.Topic, Partition: t.Partitions[i].Partition}] {
						t.Partitions[i].ErrorCode = unstable
					}
				}
			}
		}
		return resp
	}
	pending := c.PendingOffsets(req.Group)
	for _, t := range resp.Topics {
		for i := range t.Partitions {
			if pending[txn.TopicPartition{Topic: t.Topic, Partition: t.Partitions[i].Partition}] {
				t.Partitions[i].ErrorCode = unstable
			}
		}
	}
	return resp
}
