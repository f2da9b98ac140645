package broker

import (
	"cmp"
	"context"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// DescribeProducers (KIP-664) lists the idempotent producers a partition
// leader remembers (idempotence.go): id, epoch and the last sequence
// appended. The last timestamp is not kept (-1); with no transactions
// there is no coordinator epoch nor open transaction (-1 both).
func init() {
	register(kmsg.DescribeProducers, 0, 0, (*Broker).handleDescribeProducers, authorizeDescribeProducers)
}

// authorizeDescribeProducers: a topic the principal cannot see is
// answered TOPIC_AUTHORIZATION_FAILED.
func authorizeDescribeProducers(z authz, req kmsg.Request) (kmsg.Response, error) {
	r := req.(*kmsg.DescribeProducersRequest)
	return authorizeEach(z, &r.Topics, func(t kmsg.DescribeProducersRequestTopic) bool { return z.b.describable(z.p, t.Topic) },
		func(dr *kmsg.DescribeProducersResponse, t kmsg.DescribeProducersRequestTopic) {
			rt := kmsg.NewDescribeProducersResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewDescribeProducersResponseTopicPartition()
				rp.Partition = p
				rp.ErrorCode = kerr.TopicAuthorizationFailed.Code
				rt.Partitions = append(rt.Partitions, rp)
			}
			dr.Topics = append(dr.Topics, rt)
		})
}

func (b *Broker) handleDescribeProducers(_ context.Context, _ *conn, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.DescribeProducersRequest)
	resp := req.ResponseKind().(*kmsg.DescribeProducersResponse)
	for _, t := range req.Topics {
		rt := kmsg.NewDescribeProducersResponseTopic()
		rt.Topic = t.Topic
		meta, known := b.meta.Topic(t.Topic)
		for _, p := range t.Partitions {
			rp := kmsg.NewDescribeProducersResponseTopicPartition()
			rp.Partition = p
			switch {
			case !known || p < 0 || p >= meta.Partitions:
				rp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			case !b.leads(t.Topic, p):
				rp.ErrorCode = kerr.NotLeaderForPartition.Code
			default:
				rp.ActiveProducers = b.activeProducers(t.Topic, p)
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}

// activeProducers lists the partition's idempotent producers by id, with
// the first offset of the transaction each has open here.
func (b *Broker) activeProducers(topic string, partition int32) []kmsg.DescribeProducersResponseTopicPartitionActiveProducer {
	ps := b.knownPartition(topic, partition)
	if ps == nil {
		return nil
	}
	ps.mu.Lock()
	defer ps.mu.Unlock()
	out := make([]kmsg.DescribeProducersResponseTopicPartitionActiveProducer, 0, len(ps.Producers))
	for _, seq := range ps.Producers {
		if len(seq.Batches) == 0 {
			continue
		}
		id := seq.ID
		ap := kmsg.NewDescribeProducersResponseTopicPartitionActiveProducer()
		ap.ProducerID = id
		ap.ProducerEpoch = int32(seq.Epoch)
		ap.LastSequence = seq.Batches[len(seq.Batches)-1].LastSeq
		ap.LastTimestamp, ap.CoordinatorEpoch, ap.CurrentTxnStartOffset = -1, -1, -1
		if first, open := ps.Open[id]; open {
			ap.CurrentTxnStartOffset = first
		}
		out = append(out, ap)
	}
	slices.SortFunc(out, func(a, b kmsg.DescribeProducersResponseTopicPartitionActiveProducer) int {
		return cmp.Compare(a.ProducerID, b.ProducerID)
	})
	return out
}
