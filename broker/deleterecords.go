package broker

import (
	"context"
	"errors"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/unilog/unilog/auth"
)

// DeleteRecords moves a partition's log start forward (v0-2; v2 is
// flexible). The start is kept in the cluster metadata
// (TopicMeta.LogStarts), written before the answer: durable in the
// metadata file, and under a control plane replicated with the topic to
// every node, so a follower that takes over serves from the same start.
// The records stay in the commit log until its retention deletes their
// file; see "Log start" in the package doc. Offset -1 is the high
// watermark, as Kafka's; an offset beyond it is OFFSET_OUT_OF_RANGE, and
// one at or below the start leaves it where it is.
func init() {
	register(kmsg.DeleteRecords, 0, 2, (*Broker).handleDeleteRecords, authorizeDeleteRecords)
}

// authorizeDeleteRecords: a topic the principal may not administer is
// answered TOPIC_AUTHORIZATION_FAILED (Kafka asks for Delete on it).
func authorizeDeleteRecords(z authz, req kmsg.Request) (kmsg.Response, error) {
	r := req.(*kmsg.DeleteRecordsRequest)
	return authorizeEach(z, &r.Topics, topicNamed(func(t kmsg.DeleteRecordsRequestTopic) string { return t.Topic }, z.allow(auth.Admin)),
		func(dr *kmsg.DeleteRecordsResponse, t kmsg.DeleteRecordsRequestTopic) {
			rt := kmsg.NewDeleteRecordsResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewDeleteRecordsResponseTopicPartition()
				rp.Partition, rp.LowWatermark = p.Partition, -1
				rp.ErrorCode = kerr.TopicAuthorizationFailed.Code
				rt.Partitions = append(rt.Partitions, rp)
			}
			dr.Topics = append(dr.Topics, rt)
		})
}

func (b *Broker) handleDeleteRecords(_ context.Context, _ *conn, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.DeleteRecordsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteRecordsResponse)
	// Shared: no delete of the topic interleaves (it holds topicMu
	// exclusively), and the update checks the incarnation for one made on
	// another node.
	b.topicMu.RLock()
	defer b.topicMu.RUnlock()
	for _, t := range req.Topics {
		rt := kmsg.NewDeleteRecordsResponseTopic()
		rt.Topic = t.Topic
		meta, known := b.meta.Topic(t.Topic)
		moves := make(map[int32]int64) // partition -> new start
		for _, p := range t.Partitions {
			rp := kmsg.NewDeleteRecordsResponseTopicPartition()
			rp.Partition, rp.LowWatermark = p.Partition, -1
			switch {
			case !known || p.Partition < 0 || p.Partition >= meta.Partitions:
				rp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			case isInternalTopic(t.Topic):
				// Group commits are replayed from the offsets topic.
				rp.ErrorCode = kerr.InvalidTopicException.Code
			case !b.leads(t.Topic, p.Partition):
				rp.ErrorCode = kerr.NotLeaderForPartition.Code
			default:
				lo, hi, _ := b.visibleBounds(meta, p.Partition)
				to := p.Offset
				if to == -1 {
					to = hi
				}
				switch {
				case to < 0 || to > hi:
					rp.ErrorCode = kerr.OffsetOutOfRange.Code
				case to <= lo:
					rp.LowWatermark = lo
				default:
					moves[p.Partition] = to
					rp.LowWatermark = to
				}
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		if len(moves) > 0 {
			if err := b.moveLogStarts(meta, moves, "DeleteRecords"); err != nil {
				code := kerr.KafkaStorageError.Code
				if errors.Is(err, ErrUnknownTopic) {
					code = kerr.UnknownTopicOrPartition.Code
				}
				for i := range rt.Partitions {
					if _, ok := moves[rt.Partitions[i].Partition]; ok {
						rt.Partitions[i].ErrorCode, rt.Partitions[i].LowWatermark = code, -1
					}
				}
			}
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}

// moveLogStarts stores the partitions' new log starts in the topic's
// metadata; a start never moves back. why names the mover in the log.
func (b *Broker) moveLogStarts(meta TopicMeta, moves map[int32]int64, why string) error {
	err := b.meta.UpdateTopic(meta.Name, func(t *TopicMeta) error {
		if t.ID != meta.ID {
			return ErrUnknownTopic // deleted and created again meanwhile
		}
		if t.LogStarts == nil {
			t.LogStarts = make(map[int32]int64, len(moves))
		}
		for p, to := range moves {
			t.LogStarts[p] = max(t.LogStarts[p], to)
		}
		return nil
	})
	if err != nil {
		b.log.WithFields(logrus.Fields{"by": why, "topic": meta.Name, "error": err}).Error("log start not moved")
		return err
	}
	b.log.WithFields(logrus.Fields{"by": why, "topic": meta.Name, "partitions": len(moves)}).Info("log start moved")
	return nil
}
