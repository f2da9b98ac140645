package broker

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestTxnSpansOneReplicaGroup: the coordinator writes markers into its own
// log, so a transaction takes only partitions this node leads; one led by
// another replica group is refused (with the others of the request, as
// Kafka refuses a request naming an unknown partition).
func TestTxnSpansOneReplicaGroup(t *testing.T) {
	cfg := testConfig(t, t.TempDir())
	cfg.NodeID = 1
	cfg.Cluster = fakeCluster{} // node 1 leads partition 0, node 2 partition 1
	b := startBroker(t, cfg)
	createTopic(t, newClient(t, b.Addr()), "t", 2)
	c := dialRaw(t, b.Addr())
	id := "spans"
	init := kmsg.NewPtrInitProducerIDRequest()
	init.Version, init.TransactionalID, init.TransactionTimeoutMillis = 4, &id, 60000
	resp, ok := c.roundTrip(init)
	if !ok || resp.(*kmsg.InitProducerIDResponse).ErrorCode != 0 {
		t.Fatalf("InitProducerId: %+v", resp)
	}
	ir := resp.(*kmsg.InitProducerIDResponse)
	add := func(partitions ...int32) map[int32]int16 {
		t.Helper()
		req := kmsg.NewPtrAddPartitionsToTxnRequest()
		req.Version, req.TransactionalID, req.ProducerID, req.ProducerEpoch = 3, id, ir.ProducerID, ir.ProducerEpoch
		req.Topics = []kmsg.AddPartitionsToTxnRequestTopic{{Topic: "t", Partitions: partitions}}
		resp, ok := c.roundTrip(req)
		if !ok {
			t.Fatal("connection closed")
		}
		out := make(map[int32]int16)
		for _, p := range resp.(*kmsg.AddPartitionsToTxnResponse).Topics[0].Partitions {
			out[p.Partition] = p.ErrorCode
		}
		return out
	}
	if got := add(0, 1); got[0] != kerr.OperationNotAttempted.Code || got[1] != kerr.UnknownTopicOrPartition.Code {
		t.Errorf("partitions 0 (led here) and 1 (led by node 2): %v", got)
	}
	if got := add(0); got[0] != 0 {
		t.Errorf("partition 0 alone: %v", kerr.ErrorForCode(got[0]))
	}
}
