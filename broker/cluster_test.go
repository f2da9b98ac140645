package broker

import (
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// fakeCluster leads partition 0 of every topic from node 1 (the broker
// under test) and partition 1 from node 2; nobody leads the rest.
type fakeCluster struct{}

func (fakeCluster) Brokers() []ClusterBroker {
	return []ClusterBroker{{NodeID: 1, Host: "0.0.0.0", Port: 1}, {NodeID: 2, Host: "127.0.0.2", Port: 9092}}
}

func (fakeCluster) PartitionLeader(_ string, p int32) (int32, int32, bool) {
	switch p {
	case 0:
		return 1, 7, true
	case 1:
		return 2, 8, true
	}
	return 0, 0, false
}

func (fakeCluster) Replicas(leader int32) ([]int32, []int32) {
	return []int32{1, 2}, []int32{leader}
}

func (fakeCluster) Status() NodeStatus {
	return NodeStatus{NodeID: 1, ReplicaGroup: "g1", Role: "leader", Epoch: 7}
}

func TestBrokerAnswersWithTheClusterLeaders(t *testing.T) {
	cfg := testConfig(t, t.TempDir())
	cfg.NodeID = 1
	cfg.Cluster = fakeCluster{}
	b := startBroker(t, cfg)
	cl := newClient(t, b.Addr())
	createTopic(t, cl, "t", 3)

	req := kmsg.NewPtrMetadataRequest()
	req.SetVersion(12)
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr("t")
	req.Topics = append(req.Topics, rt)
	// Asked on a raw connection: a client would follow the answer to node 2.
	raw, ok := dialRaw(t, b.Addr()).roundTrip(req)
	if !ok {
		t.Fatal("connection closed")
	}
	resp := raw.(*kmsg.MetadataResponse)
	if len(resp.Brokers) != 2 || resp.Brokers[0].Host != "127.0.0.1" || resp.Brokers[1].Host != "127.0.0.2" {
		t.Fatalf("brokers %+v: want this one at the connection's address, node 2 as advertised", resp.Brokers)
	}
	parts := resp.Topics[0].Partitions
	for i, want := range []struct {
		leader, epoch int32
		code          int16
		replicas, isr []int32
	}{{1, 7, 0, []int32{1, 2}, []int32{1}}, {2, 8, 0, []int32{1, 2}, []int32{2}}, {-1, -1, kerr.LeaderNotAvailable.Code, nil, nil}} {
		p := parts[i]
		if p.Leader != want.leader || p.LeaderEpoch != want.epoch || p.ErrorCode != want.code ||
			!slices.Equal(p.Replicas, want.replicas) || !slices.Equal(p.ISR, want.isr) {
			t.Errorf("partition %d: leader %d epoch %d error %d replicas %v isr %v, want %+v", i, p.Leader, p.LeaderEpoch, p.ErrorCode, p.Replicas, p.ISR, want)
		}
	}

	// A write to a partition led elsewhere is refused, one led here taken.
	for _, tc := range []struct {
		partition int32
		code      int16
	}{{0, 0}, {1, kerr.NotLeaderForPartition.Code}} {
		preq := kmsg.NewPtrProduceRequest()
		preq.SetVersion(9)
		preq.Acks = -1
		preq.TimeoutMillis = 10000
		pt := kmsg.NewProduceRequestTopic()
		pt.Topic = "t"
		pp := kmsg.NewProduceRequestTopicPartition()
		pp.Partition = tc.partition
		pp.Records = rawBatch(-1, -1, -1, "v")
		pt.Partitions = append(pt.Partitions, pp)
		preq.Topics = append(preq.Topics, pt)
		presp, ok := dialRaw(t, b.Addr()).roundTrip(preq)
		if !ok {
			t.Fatalf("partition %d: connection closed", tc.partition)
		}
		if got := presp.(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode; got != tc.code {
			t.Errorf("produce to partition %d: error %d, want %d", tc.partition, got, tc.code)
		}
	}

	hresp, err := http.Get("http://" + b.AdminAddr() + "/status")
	if err != nil {
		t.Fatal(err)
	}
	defer hresp.Body.Close()
	var st NodeStatus
	if err := json.NewDecoder(hresp.Body).Decode(&st); err != nil {
		t.Fatal(err)
	}
	if st.NodeID != 1 || st.ReplicaGroup != "g1" || st.Role != "leader" || st.Epoch != 7 || st.LogEndOffset <= 0 {
		t.Fatalf("status %+v", st)
	}
	mresp, err := http.Get("http://" + b.AdminAddr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer mresp.Body.Close()
	body, _ := io.ReadAll(mresp.Body)
	for _, want := range []string{"\nunilog_leader 1\n", "\nunilog_leader_epoch 7\n"} {
		if !strings.Contains(string(body), want) {
			t.Errorf("metrics lack %q", want)
		}
	}
}
