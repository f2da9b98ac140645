package broker

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestWriteTxnMarkersAuthorized: WriteTxnMarkers, which another group's
// coordinator sends, needs cluster admin (Kafka's CLUSTER_ACTION);
// without it every partition is CLUSTER_AUTHORIZATION_FAILED. Allowed,
// a marker for a producer with no open transaction is stored harmlessly,
// and an unknown partition is UNKNOWN_TOPIC_OR_PARTITION.
func TestWriteTxnMarkersAuthorized(t *testing.T) {
	b := saslACLBroker(t, txnACL, nil)
	alice, bob := userClient(t, b, "alice"), userClient(t, b, "bob")
	createTopic(t, alice, "orders", 1)
	req := kmsg.NewPtrWriteTxnMarkersRequest()
	m := kmsg.NewWriteTxnMarkersRequestMarker()
	m.ProducerID, m.ProducerEpoch, m.Committed = 77, 0, true
	m.Topics = []kmsg.WriteTxnMarkersRequestMarkerTopic{{Topic: "orders", Partitions: []int32{0, 5}}}
	req.Markers = append(req.Markers, m)
	for _, tc := range []struct {
		who  string
		cl   *kgo.Client
		want []int16
	}{
		{"bob", bob, []int16{kerr.ClusterAuthorizationFailed.Code, kerr.ClusterAuthorizationFailed.Code}},
		{"alice", alice, []int16{0, kerr.UnknownTopicOrPartition.Code}},
	} {
		// To the broker itself: the client would split the request by
		// partition leader, and refuse the unknown partition.
		resp, err := req.RequestWith(testCtx(t), tc.cl.Broker(int(b.cfg.NodeID)))
		if err != nil {
			t.Fatalf("%s: %v", tc.who, err)
		}
		ps := resp.Markers[0].Topics[0].Partitions
		for i, want := range tc.want {
			if ps[i].ErrorCode != want {
				t.Errorf("%s: orders/%d answered %v, want %v", tc.who, ps[i].Partition, kerr.ErrorForCode(ps[i].ErrorCode), kerr.ErrorForCode(want))
			}
		}
	}
}
