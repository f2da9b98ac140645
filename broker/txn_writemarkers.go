package broker

import (
	"context"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/unilog/unilog/auth"
)

// WriteTxnMarkers is how the transaction coordinator of another replica
// group ends a transaction in the partitions this node leads
// (txn_remote.go sends it). Its markers are appended through the path of
// the local coordinator's (appendMarkers): a marker for a producer with no
// open transaction of its epoch in the partition is in effect already and
// answered without storing it again, as Kafka does, so a coordinator
// sending them again after a crash, a lost answer or a timed-out wait
// leaves one control batch per transaction; one of an epoch older than
// the producer's there is INVALID_PRODUCER_EPOCH. A partition is acknowledged once its marker is stored as an
// acks=-1 produce would be.
//
// Kafka asks CLUSTER_ACTION on the cluster, which only brokers hold:
// here the nodes' inter-broker login, or a principal the ACL grants
// cluster (interbroker.go). Cluster admin does not stand for it: a user
// who may create topics may not end other producers' transactions.
func init() {
	register(kmsg.WriteTxnMarkers, 0, 1, (*Broker).handleWriteTxnMarkers, authorizeWriteTxnMarkers)
}

func (b *Broker) handleWriteTxnMarkers(ctx context.Context, _ *conn, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.WriteTxnMarkersRequest)
	resp := writeTxnMarkersAnswer(req, 0)
	var markers []txnMarker
	var codes []*int16 // markers[i]'s answer
	for i, m := range req.Markers {
		for j, t := range m.Topics {
			for k, p := range t.Partitions {
				code := &resp.Markers[i].Topics[j].Partitions[k].ErrorCode
				if !b.txnPartitionExists(t.Topic, p) {
					*code = kerr.UnknownTopicOrPartition.Code
					continue
				}
				markers = append(markers, txnMarker{topic: t.Topic, partition: p, producerID: m.ProducerID, epoch: m.ProducerEpoch, commit: m.Committed})
				codes = append(codes, code)
			}
		}
	}
	for i, code := range b.storeMarkers(ctx, markers) {
		*codes[i] = code
	}
	return resp, nil
}

// storeMarkers appends markers in one append and waits for them as for an
// acks=-1 produce; it answers each: NOT_LEADER_OR_FOLLOWER where this
// node does not lead the partition. As that produce, it stores nothing
// while too few replicas are in sync (checkInSync): a marker stored
// there could not be acknowledged, and a leader that then failed over
// would leave it on no in-sync replica.
func (b *Broker) storeMarkers(ctx context.Context, markers []txnMarker) []int16 {
	codes := make([]int16, len(markers))
	if len(markers) == 0 {
		return codes
	}
	if code := b.checkInSync(); code != 0 {
		for i := range codes {
			codes[i] = code
		}
		return codes
	}
	end, fates, err := b.appendMarkers(nil, markers)
	code := int16(0)
	switch {
	case err != nil:
		b.log.WithField("error", err).Error("WriteTxnMarkers: append failed")
		code = kerr.KafkaStorageError.Code
	case end >= 0:
		code = b.waitProduced(ctx, -1, end)
	case slices.Contains(fates, markerApplied):
		// The marker in effect may be one whose wait timed out: it is
		// acknowledged once what is stored now is as it would be.
		code = b.waitProduced(ctx, -1, b.LogEndOffset())
	}
	for i, fate := range fates {
		switch {
		case fate == markerLeftOut || b.following.Load():
			codes[i] = kerr.NotLeaderForPartition.Code
		case fate == markerStale:
			codes[i] = kerr.InvalidProducerEpoch.Code
		default:
			codes[i] = code
		}
	}
	return codes
}

// writeTxnMarkersAnswer answers every partition of req with code.
func writeTxnMarkersAnswer(req *kmsg.WriteTxnMarkersRequest, code int16) *kmsg.WriteTxnMarkersResponse {
	resp := req.ResponseKind().(*kmsg.WriteTxnMarkersResponse)
	resp.Markers = make([]kmsg.WriteTxnMarkersResponseMarker, len(req.Markers))
	for i, m := range req.Markers {
		rm := &resp.Markers[i]
		*rm = kmsg.NewWriteTxnMarkersResponseMarker()
		rm.ProducerID = m.ProducerID
		rm.Topics = make([]kmsg.WriteTxnMarkersResponseMarkerTopic, len(m.Topics))
		for j, t := range m.Topics {
			rt := &rm.Topics[j]
			*rt = kmsg.NewWriteTxnMarkersResponseMarkerTopic()
			rt.Topic = t.Topic
			rt.Partitions = make([]kmsg.WriteTxnMarkersResponseMarkerTopicPartition, len(t.Partitions))
			for k, p := range t.Partitions {
				rt.Partitions[k] = kmsg.NewWriteTxnMarkersResponseMarkerTopicPartition()
				rt.Partitions[k].Partition, rt.Partitions[k].ErrorCode = p, code
			}
		}
	}
	return resp
}

// authorizeWriteTxnMarkers: Kafka's CLUSTER_ACTION, or every partition is
// answered CLUSTER_AUTHORIZATION_FAILED.
func authorizeWriteTxnMarkers(z authz, req kmsg.Request) (kmsg.Response, error) {
	if z.b.clusterAction(z.p) {
		return z.run()
	}
	z.b.secMetrics.denials.WithLabelValues(auth.Cluster.String()).Inc()
	return writeTxnMarkersAnswer(req.(*kmsg.WriteTxnMarkersRequest), kerr.ClusterAuthorizationFailed.Code), nil
}
