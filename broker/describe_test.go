package broker

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestDescribeCluster(t *testing.T) {
	cfg := testConfig(t, t.TempDir())
	cfg.NodeID = 3
	b := startBroker(t, cfg)
	for _, tc := range []struct {
		version  int16
		endpoint int8
		err      int16
	}{
		{0, 0, 0},
		{1, endpointBrokers, 0},
		{1, 2, kerr.MismatchedEndpointType.Code},
	} {
		req := kmsg.NewPtrDescribeClusterRequest()
		req.SetVersion(tc.version)
		req.EndpointType = tc.endpoint
		raw, ok := dialRaw(t, b.Addr()).roundTrip(req)
		if !ok {
			t.Fatalf("v%d: connection closed", tc.version)
		}
		resp := raw.(*kmsg.DescribeClusterResponse)
		if resp.ErrorCode != tc.err {
			t.Errorf("v%d endpoint %d: %v, want %v", tc.version, tc.endpoint, kerr.ErrorForCode(resp.ErrorCode), kerr.ErrorForCode(tc.err))
			continue
		}
		if tc.err != 0 {
			continue
		}
		if resp.ClusterID != clusterID || resp.ControllerID != 3 || len(resp.Brokers) != 1 || resp.Brokers[0].NodeID != 3 || resp.Brokers[0].Host != "127.0.0.1" || resp.Brokers[0].Port == 0 {
			t.Errorf("v%d: %+v", tc.version, resp)
		}
	}
}

// TestDescribeLogDirs: one dir, the data dir, with every partition and the
// bytes its records take: a batch counts once however many offsets it
// spans, and an empty partition is 0.
func TestDescribeLogDirs(t *testing.T) {
	dir := t.TempDir()
	b := startBroker(t, testConfig(t, dir))
	cl := newClient(t, b.Addr())
	createTopic(t, cl, "t", 3)
	batch := rawBatch(-1, -1, -1, "aaaaaaaaaa", "bbbbbbbbbb")
	for _, p := range []int32{0, 1, 1} {
		if r := rawProduce(t, cl, "t", p, batch); r.ErrorCode != 0 {
			t.Fatalf("produce: %v", kerr.ErrorForCode(r.ErrorCode))
		}
	}
	dirs, err := kadm.NewClient(cl).DescribeAllLogDirs(testCtx(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	var sizes [3]int64
	n := 0
	dirs.Each(func(d kadm.DescribedLogDir) {
		if d.Err != nil || d.Dir != dir {
			t.Errorf("dir %q: %v, want %q", d.Dir, d.Err, dir)
		}
		d.Topics.Each(func(p kadm.DescribedLogDirPartition) {
			if p.Topic == "t" {
				sizes[p.Partition] = p.Size
				n++
			}
		})
	})
	if n != 3 {
		t.Fatalf("%d partitions of t described, want 3", n)
	}
	if sizes[0] <= int64(len(batch)) || sizes[0] >= 2*int64(len(batch)) || sizes[1] != 2*sizes[0] || sizes[2] != 0 {
		t.Fatalf("sizes %v for a batch of %d bytes in p0, two in p1, none in p2", sizes, len(batch))
	}
}

// TestOffsetForLeaderEpoch: the epochs of the log's epoch file end where
// the next begins, mapped onto the partition's offsets; the current epoch
// ends at the high watermark; a stale or future current epoch is fenced or
// unknown, as Kafka answers.
func TestOffsetForLeaderEpoch(t *testing.T) {
	cfg := testConfig(t, t.TempDir())
	cfg.NodeID = 1
	cfg.Cluster = fakeCluster{} // leads partition 0 at epoch 7, not partition 1
	b := startBroker(t, cfg)
	cl := newClient(t, b.Addr())
	createTopic(t, cl, "t", 2)
	produce := func(values ...string) {
		for _, v := range values {
			if r := rawProduce(t, cl, "t", 0, rawBatch(-1, -1, -1, v)); r.ErrorCode != 0 {
				t.Fatalf("produce: %v", kerr.ErrorForCode(r.ErrorCode))
			}
		}
	}
	produce("a", "b")
	epochs, err := storeOf(b).Epochs()
	if err != nil {
		t.Fatal(err)
	}
	if err := epochs.Assign(5, 0); err != nil {
		t.Fatal(err)
	}
	if err := epochs.Assign(7, b.st.WriteOffset()); err != nil {
		t.Fatal(err)
	}
	produce("c", "d", "e")

	for _, tc := range []struct {
		partition     int32
		current, want int32
		err           int16
		epoch         int32
		end           int64
	}{
		{0, 7, 7, 0, 7, 5},
		{0, -1, 7, 0, 7, 5},
		{0, 7, 6, 0, 5, 2},
		{0, 7, 5, 0, 5, 2},
		{0, 7, 3, 0, 3, 0}, // below every epoch: where the oldest begins
		{0, 7, 8, 0, -1, -1},
		{0, 6, 7, kerr.FencedLeaderEpoch.Code, -1, -1},
		{0, 8, 7, kerr.UnknownLeaderEpoch.Code, -1, -1},
		{1, 8, 8, kerr.NotLeaderForPartition.Code, -1, -1},
	} {
		req := kmsg.NewPtrOffsetForLeaderEpochRequest()
		req.SetVersion(4)
		rt := kmsg.NewOffsetForLeaderEpochRequestTopic()
		rt.Topic = "t"
		rp := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
		rp.Partition, rp.CurrentLeaderEpoch, rp.LeaderEpoch = tc.partition, tc.current, tc.want
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		raw, ok := dialRaw(t, b.Addr()).roundTrip(req)
		if !ok {
			t.Fatal("connection closed")
		}
		got := raw.(*kmsg.OffsetForLeaderEpochResponse).Topics[0].Partitions[0]
		if got.ErrorCode != tc.err || got.LeaderEpoch != tc.epoch || got.EndOffset != tc.end {
			t.Errorf("p%d current %d epoch %d: %v epoch %d end %d, want %v %d %d", tc.partition, tc.current, tc.want,
				kerr.ErrorForCode(got.ErrorCode), got.LeaderEpoch, got.EndOffset, kerr.ErrorForCode(tc.err), tc.epoch, tc.end)
		}
	}
}

// TestOffsetForLeaderEpochUnreplicated: a log without an epoch file is all
// epoch 0, as Metadata reports, ending at the high watermark.
func TestOffsetForLeaderEpochUnreplicated(t *testing.T) {
	b := startBroker(t, testConfig(t, t.TempDir()))
	cl := newClient(t, b.Addr())
	createTopic(t, cl, "t", 1)
	produceSync(t, cl, "t", 0, "a", "b")
	req := kmsg.NewPtrOffsetForLeaderEpochRequest()
	rt := kmsg.NewOffsetForLeaderEpochRequestTopic()
	rt.Topic = "t"
	rp := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
	rp.CurrentLeaderEpoch, rp.LeaderEpoch = 0, 0
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(testCtx(t), cl)
	if err != nil {
		t.Fatal(err)
	}
	if got := resp.Topics[0].Partitions[0]; got.ErrorCode != 0 || got.LeaderEpoch != 0 || got.EndOffset != 2 {
		t.Fatalf("%v epoch %d end %d, want epoch 0 end 2", kerr.ErrorForCode(got.ErrorCode), got.LeaderEpoch, got.EndOffset)
	}
}

// TestDescribeProducers lists the partition's idempotent producer with its
// epoch and last sequence, through kadm as a tool asks.
func TestDescribeProducers(t *testing.T) {
	cfg := testConfig(t, t.TempDir())
	b, cl, pid, epoch := startIdempotent(t, cfg, testStore())
	defer b.Close()
	if r := rawProduce(t, cl, "idem", 0, rawBatch(pid, epoch, 0, "a", "b", "c")); r.ErrorCode != 0 {
		t.Fatalf("produce: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	described, err := kadm.NewClient(cl).DescribeProducers(testCtx(t), kadm.TopicsSet{"idem": {0: {}}})
	if err != nil {
		t.Fatal(err)
	}
	var got []kadm.DescribedProducer
	described.EachProducer(func(p kadm.DescribedProducer) { got = append(got, p) })
	if len(got) != 1 || got[0].ProducerID != pid || got[0].ProducerEpoch != epoch || got[0].LastSequence != 2 {
		t.Fatalf("producers %+v, want id %d epoch %d last sequence 2", got, pid, epoch)
	}
}

// TestACLDescribeAPIs: the cluster-wide DescribeLogDirs needs admin on
// every topic; OffsetForLeaderEpoch and DescribeProducers need a topic the
// principal can see; DescribeCluster is open, as Kafka's.
func TestACLDescribeAPIs(t *testing.T) {
	b := aclBroker(t)
	for _, tc := range []struct {
		user string
		ok   bool
	}{{"alice", true}, {"bob", false}} {
		raw, err := direct(t, b, userClient(t, b, tc.user), kmsg.NewPtrDescribeLogDirsRequest())
		resp := raw.(*kmsg.DescribeLogDirsResponse)
		if err != nil {
			t.Fatal(err)
		}
		if got := resp.ErrorCode == 0 && len(resp.Dirs) == 1; got != tc.ok {
			t.Errorf("%s DescribeLogDirs: %v with %d dirs", tc.user, kerr.ErrorForCode(resp.ErrorCode), len(resp.Dirs))
		}
		if !tc.ok && resp.ErrorCode != kerr.ClusterAuthorizationFailed.Code {
			t.Errorf("%s DescribeLogDirs: %v, want CLUSTER_AUTHORIZATION_FAILED", tc.user, kerr.ErrorForCode(resp.ErrorCode))
		}
	}
	denied := kerr.TopicAuthorizationFailed.Code
	for _, tc := range []struct {
		user, topic string
		want        int16
	}{
		{"bob", "orders", 0},
		{"bob", "secret", denied},
		{"carol", "public-news", 0},
		{"carol", "orders", denied},
	} {
		cl := userClient(t, b, tc.user)
		oe := kmsg.NewPtrOffsetForLeaderEpochRequest()
		rt := kmsg.NewOffsetForLeaderEpochRequestTopic()
		rt.Topic = tc.topic
		rt.Partitions = append(rt.Partitions, kmsg.NewOffsetForLeaderEpochRequestTopicPartition())
		oe.Topics = append(oe.Topics, rt)
		raw, err := direct(t, b, cl, oe)
		if err != nil {
			t.Fatal(err)
		}
		if got := raw.(*kmsg.OffsetForLeaderEpochResponse).Topics[0].Partitions[0].ErrorCode; got != tc.want {
			t.Errorf("%s OffsetForLeaderEpoch %s: %v, want %v", tc.user, tc.topic, kerr.ErrorForCode(got), kerr.ErrorForCode(tc.want))
		}
		dp := kmsg.NewPtrDescribeProducersRequest()
		dt := kmsg.NewDescribeProducersRequestTopic()
		dt.Topic, dt.Partitions = tc.topic, []int32{0}
		dp.Topics = append(dp.Topics, dt)
		raw, err = direct(t, b, cl, dp)
		if err != nil {
			t.Fatal(err)
		}
		if got := raw.(*kmsg.DescribeProducersResponse).Topics[0].Partitions[0].ErrorCode; got != tc.want {
			t.Errorf("%s DescribeProducers %s: %v, want %v", tc.user, tc.topic, kerr.ErrorForCode(got), kerr.ErrorForCode(tc.want))
		}
		raw, err = direct(t, b, cl, kmsg.NewPtrDescribeClusterRequest())
		if dc, _ := raw.(*kmsg.DescribeClusterResponse); err != nil || dc.ErrorCode != 0 || len(dc.Brokers) != 1 {
			t.Errorf("%s DescribeCluster: %v %+v", tc.user, err, raw)
		}
	}
}

// direct sends req to the broker itself, as the client negotiated it: not
// split by topic leaders nor merged, which would hide the broker's errors.
func direct(t testing.TB, b *Broker, cl *kgo.Client, req kmsg.Request) (kmsg.Response, error) {
	t.Helper()
	return cl.Broker(int(b.cfg.NodeID)).Request(testCtx(t), req)
}
