package broker

import (
	"context"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/unilog/unilog/auth"
)

// TestWriteTxnMarkersAuthorized: WriteTxnMarkers, which another group's
// coordinator sends, needs Kafka's CLUSTER_ACTION: the nodes' own login
// (auth.InterBrokerUser with the password they share) or an ACL grant of
// cluster; admin on everything is not enough, and neither is the
// inter-broker user's name with another password. Without it every
// partition is CLUSTER_AUTHORIZATION_FAILED. Allowed, a marker for a
// producer with no open transaction is answered success, and an unknown
// partition is UNKNOWN_TOPIC_OR_PARTITION.
func TestWriteTxnMarkersAuthorized(t *testing.T) {
	b := saslACLBroker(t, txnACL+"bob cluster *\n", func(c *Config) { c.Security.InterBroker.Password = "shared-by-the-nodes" })
	alice := userClient(t, b, "alice")
	createTopic(t, alice, "orders", 1)
	req := kmsg.NewPtrWriteTxnMarkersRequest()
	m := kmsg.NewWriteTxnMarkersRequestMarker()
	m.ProducerID, m.ProducerEpoch, m.Committed = 77, 0, true
	m.Topics = []kmsg.WriteTxnMarkersRequestMarkerTopic{{Topic: "orders", Partitions: []int32{0, 5}}}
	req.Markers = append(req.Markers, m)
	denied := []int16{kerr.ClusterAuthorizationFailed.Code, kerr.ClusterAuthorizationFailed.Code}
	allowed := []int16{0, kerr.UnknownTopicOrPartition.Code}
	for _, tc := range []struct {
		who  string
		cl   *kgo.Client
		want []int16
	}{
		{"alice (admin *)", alice, denied},
		{"carol (no grant)", userClient(t, b, "carol"), denied},
		{"bob (cluster *)", userClient(t, b, "bob"), allowed},
		{"the inter-broker user", newClient(t, b.Addr(), kgo.SASL(scramMech(auth.ScramSHA256, auth.InterBrokerUser, "shared-by-the-nodes"))), allowed},
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
	wrong := newClient(t, b.Addr(), kgo.SASL(scramMech(auth.ScramSHA512, auth.InterBrokerUser, "guessed")))
	if _, err := req.RequestWith(testCtx(t), wrong.Broker(int(b.cfg.NodeID))); err == nil {
		t.Error("the inter-broker user logged in with a wrong password")
	}
}

// shortISR is a sync replication with too few replicas in sync.
type shortISR struct{}

func (shortISR) HighWatermark() int64                        { return 0 }
func (shortISR) Changed() <-chan struct{}                    { return nil }
func (shortISR) CheckInSync() error                          { return ErrNotEnoughReplicas }
func (shortISR) Followers() []ReplicaStatus                  { return nil }
func (shortISR) WaitReplicated(context.Context, int64) error { return ErrNotEnoughReplicas }

// TestWriteTxnMarkersRefusedBeforeAppend: with too few replicas in sync
// a marker is refused before it is stored, NOT_ENOUGH_REPLICAS, as an
// acks=-1 produce is: stored first, each of the coordinator's retries
// (every second while the set stays short) added another control batch.
func TestWriteTxnMarkersRefusedBeforeAppend(t *testing.T) {
	cfg := testConfig(t, t.TempDir())
	cfg.Replication, cfg.SyncReplication = shortISR{}, true
	b := startBroker(t, cfg)
	c := dialRaw(t, b.Addr())
	create := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "orders", 1, 1
	create.Topics, create.TimeoutMillis = append(create.Topics, rt), 10000
	if code := call(t, c, create).(*kmsg.CreateTopicsResponse).Topics[0].ErrorCode; code != 0 {
		t.Fatal(kerr.ErrorForCode(code))
	}
	end := b.LogEndOffset()
	req := kmsg.NewPtrWriteTxnMarkersRequest()
	m := kmsg.NewWriteTxnMarkersRequestMarker()
	m.ProducerID, m.ProducerEpoch, m.Committed = 77, 0, true
	m.Topics = []kmsg.WriteTxnMarkersRequestMarkerTopic{{Topic: "orders", Partitions: []int32{0}}}
	req.Markers = append(req.Markers, m)
	if code := call(t, c, req).(*kmsg.WriteTxnMarkersResponse).Markers[0].Topics[0].Partitions[0].ErrorCode; code != kerr.NotEnoughReplicas.Code {
		t.Errorf("WriteTxnMarkers with too few in sync: %v, want NOT_ENOUGH_REPLICAS", kerr.ErrorForCode(code))
	}
	if got := b.LogEndOffset(); got != end {
		t.Errorf("the log grew from %d to %d", end, got)
	}
}
