package broker

import (
	"context"
	"errors"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/unilog/unilog/store"
)

// OffsetForLeaderEpoch (KIP-101, KIP-320): a consumer that saw a new
// leader asks where the epoch it last read under ends, and if its position
// is beyond that end, the new leader never had those records: they were
// truncated in a failover. The epochs are those of the replica group, in
// the commit log's leader-epoch file (commitlog.Epochs), which gives each
// epoch's first physical offset; an epoch ends, in a partition, at the
// first of its offsets whose record lies beyond the next epoch's start (a
// binary search of the consume queue). A log that was never replicated
// has no epoch file: all of it is the current epoch (0 without a control
// plane, as Metadata reports). The answers follow Kafka's: an epoch below
// every known one ends where the oldest known begins, one above them all
// is unknown (-1, -1), the current one ends at the high watermark, the
// most a consumer can have read. v3's replica id is for follower brokers,
// which replicate the log by other means, and is ignored.
func init() {
	register(kmsg.OffsetForLeaderEpoch, 0, 4, (*Broker).handleOffsetForLeaderEpoch, authorizeOffsetForLeaderEpoch)
}

// authorizeOffsetForLeaderEpoch: a topic the principal cannot see is
// answered TOPIC_AUTHORIZATION_FAILED.
func authorizeOffsetForLeaderEpoch(z authz, req kmsg.Request) (kmsg.Response, error) {
	r := req.(*kmsg.OffsetForLeaderEpochRequest)
	return authorizeEach(z, &r.Topics, func(t kmsg.OffsetForLeaderEpochRequestTopic) bool { return z.b.describable(z.p, t.Topic) },
		func(or *kmsg.OffsetForLeaderEpochResponse, t kmsg.OffsetForLeaderEpochRequestTopic) {
			rt := kmsg.NewOffsetForLeaderEpochResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewOffsetForLeaderEpochResponseTopicPartition()
				rp.Partition = p.Partition
				rp.ErrorCode = kerr.TopicAuthorizationFailed.Code
				rp.LeaderEpoch, rp.EndOffset = -1, -1
				rt.Partitions = append(rt.Partitions, rp)
			}
			or.Topics = append(or.Topics, rt)
		})
}

func (b *Broker) handleOffsetForLeaderEpoch(_ context.Context, _ *conn, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.OffsetForLeaderEpochRequest)
	resp := req.ResponseKind().(*kmsg.OffsetForLeaderEpochResponse)
	var epochs []store.EpochStart // read once, on the first partition led here
	read := false
	for _, t := range req.Topics {
		rt := kmsg.NewOffsetForLeaderEpochResponseTopic()
		rt.Topic = t.Topic
		meta, known := b.meta.Topic(t.Topic)
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetForLeaderEpochResponseTopicPartition()
			rp.Partition = p.Partition
			rp.LeaderEpoch, rp.EndOffset = -1, -1
			current, leads := b.leaderEpoch(t.Topic, p.Partition)
			moved := b.movedEpoch(t.Topic, p.Partition)
			switch {
			case !known || p.Partition < 0 || p.Partition >= meta.Partitions:
				rp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			case !leads:
				rp.ErrorCode = kerr.NotLeaderForPartition.Code
			case p.CurrentLeaderEpoch >= 0 && p.CurrentLeaderEpoch < current:
				rp.ErrorCode = kerr.FencedLeaderEpoch.Code
			case p.CurrentLeaderEpoch > current:
				rp.ErrorCode = kerr.UnknownLeaderEpoch.Code
			default:
				if !read {
					// The group's own epochs: the same for every
					// partition it leads, whatever their bases.
					epochs, read = b.leaderEpochs(current-moved.Base), true
				}
				rp.LeaderEpoch, rp.EndOffset = b.movedEpochEnd(meta, p.Partition, epochs, current, p.LeaderEpoch, moved)
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}

// leaderEpoch is the partition's leader epoch as Metadata reports it, and
// whether this node leads it.
func (b *Broker) leaderEpoch(topic string, partition int32) (int32, bool) {
	if b.cfg.Cluster == nil {
		return 0, true
	}
	node, epoch, ok := b.cfg.Cluster.PartitionLeader(topic, partition)
	return epoch, ok && node == b.cfg.NodeID
}

// leaderEpochs lists the epochs of the local log, oldest first: the epoch
// file's, or the whole log as the current epoch when it has none.
func (b *Broker) leaderEpochs(current int32) []store.EpochStart {
	whole := []store.EpochStart{{Epoch: int64(current)}}
	list, err := b.st.LeaderEpochs()
	switch {
	case errors.Is(err, store.ErrUnsupported):
		return whole
	case err != nil:
		b.log.WithFields(logrus.Fields{"api": "OffsetForLeaderEpoch", "error": err}).Warn("leader-epoch file unreadable: answering as one epoch")
		return whole
	case len(list) > 0:
		return list
	}
	return whole
}

// epochEnd answers a request for epoch from the log's epochs: the largest
// epoch not above it and the partition offset where that epoch ends. The
// current epoch is the leader's even before its first record is written
// (the epoch file may not name it yet).
func (b *Broker) epochEnd(t TopicMeta, partition int32, epochs []store.EpochStart, current, epoch int32) (int32, int64) {
	h := b.st.Partition(t.Name, partition)
	lo, hi, stored := b.readerBounds(t, partition, h)
	latest := epochs[len(epochs)-1]
	switch {
	case epoch < 0 || epoch > current:
		return -1, -1
	case epoch == current:
		return current, hi
	case int64(epoch) >= latest.Epoch:
		return ClampEpoch(uint64(latest.Epoch)), hi
	}
	// The first epoch above the one asked for begins where it ends.
	next := 0
	for next < len(epochs) && epochs[next].Epoch <= int64(epoch) {
		next++
	}
	found := epoch // below every known epoch: Kafka answers the epoch asked
	if next > 0 {
		found = ClampEpoch(uint64(epochs[next-1].Epoch))
	}
	end := firstEndingAfter(h, lo, stored, epochs[next].Start)
	return found, min(end, hi)
}
