package broker

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestCreateTopicsAssignment: a manual replica assignment is checked as
// Kafka checks it; one naming a broker that does not exist (here 10, on
// a single broker 0) used to create the topic.
func TestCreateTopicsAssignment(t *testing.T) {
	b := startBroker(t, testConfig(t, t.TempDir()))
	cl := newClient(t, b.Addr())
	assign := func(replicas ...[]int32) []kmsg.CreateTopicsRequestTopicReplicaAssignment {
		var out []kmsg.CreateTopicsRequestTopicReplicaAssignment
		for p, rs := range replicas {
			a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
			a.Partition, a.Replicas = int32(p), rs
			out = append(out, a)
		}
		return out
	}
	shifted := assign([]int32{0}, []int32{0})
	shifted[1].Partition = 2
	for _, tc := range []struct {
		name       string
		partitions int32
		rf         int16
		assignment []kmsg.CreateTopicsRequestTopicReplicaAssignment
		want       *kerr.Error
	}{
		{"unknown broker", -1, -1, assign([]int32{0}, []int32{10}), kerr.InvalidReplicaAssignment},
		{"no broker", -1, -1, assign([]int32{}), kerr.InvalidReplicaAssignment},
		{"broker twice", -1, -1, assign([]int32{0, 0}), kerr.InvalidReplicaAssignment},
		{"partitions not from 0", -1, -1, shifted, kerr.InvalidReplicaAssignment},
		{"partition count too", 2, -1, assign([]int32{0}, []int32{0}), kerr.InvalidRequest},
		{"replication factor too", -1, 1, assign([]int32{0}), kerr.InvalidRequest},
		{"this broker", -1, -1, assign([]int32{0}, []int32{0}, []int32{0}), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := kmsg.NewPtrCreateTopicsRequest()
			req.TimeoutMillis = 10_000
			rt := kmsg.NewCreateTopicsRequestTopic()
			rt.Topic = "assigned"
			rt.NumPartitions, rt.ReplicationFactor, rt.ReplicaAssignment = tc.partitions, tc.rf, tc.assignment
			req.Topics = append(req.Topics, rt)
			resp, err := req.RequestWith(testCtx(t), cl)
			if err != nil {
				t.Fatal(err)
			}
			got := resp.Topics[0]
			if err := kerr.ErrorForCode(got.ErrorCode); err != errOrNil(tc.want) {
				t.Fatalf("answered %v, want %v", err, tc.want)
			}
			m, exists := b.meta.Topic("assigned")
			if tc.want != nil {
				if exists {
					t.Fatalf("refused, yet created: %+v", m)
				}
				return
			}
			if !exists || m.Partitions != 3 || got.NumPartitions != 3 {
				t.Fatalf("created %+v (%v), answered %d partitions; want 3", m, exists, got.NumPartitions)
			}
		})
	}
}

// TestCreatePartitionsAssignment: the assignment of added partitions is
// checked the same way, and must cover exactly the partitions added.
func TestCreatePartitionsAssignment(t *testing.T) {
	b := startBroker(t, testConfig(t, t.TempDir()))
	cl := newClient(t, b.Addr())
	createTopic(t, cl, "grow", 1)
	for _, tc := range []struct {
		name     string
		count    int32
		replicas [][]int32
		want     *kerr.Error
	}{
		{"unknown broker", 3, [][]int32{{0}, {10}}, kerr.InvalidReplicaAssignment},
		{"fewer assignments than partitions", 3, [][]int32{{0}}, kerr.InvalidReplicaAssignment},
		{"broker twice", 2, [][]int32{{0, 0}}, kerr.InvalidReplicaAssignment},
		{"this broker", 3, [][]int32{{0}, {0}}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before, _ := b.meta.Topic("grow")
			req := kmsg.NewPtrCreatePartitionsRequest()
			req.TimeoutMillis = 10_000
			rt := kmsg.NewCreatePartitionsRequestTopic()
			rt.Topic, rt.Count = "grow", tc.count
			for _, rs := range tc.replicas {
				a := kmsg.NewCreatePartitionsRequestTopicAssignment()
				a.Replicas = rs
				rt.Assignment = append(rt.Assignment, a)
			}
			req.Topics = append(req.Topics, rt)
			resp, err := req.RequestWith(testCtx(t), cl)
			if err != nil {
				t.Fatal(err)
			}
			if err := kerr.ErrorForCode(resp.Topics[0].ErrorCode); err != errOrNil(tc.want) {
				t.Fatalf("answered %v, want %v", err, tc.want)
			}
			after, _ := b.meta.Topic("grow")
			want := before.Partitions
			if tc.want == nil {
				want = tc.count
			}
			if after.Partitions != want {
				t.Fatalf("%d partitions after, want %d", after.Partitions, want)
			}
		})
	}
}

// errOrNil is e as an error, nil (not a typed nil) when e is.
func errOrNil(e *kerr.Error) error {
	if e == nil {
		return nil
	}
	return e
}

// TestCheckAssignmentInACluster: in a cluster the brokers an assignment
// may name are the live ones the control plane lists.
func TestCheckAssignmentInACluster(t *testing.T) {
	b := &Broker{cfg: Config{NodeID: 1, Cluster: fakeCluster{}}}
	for _, tc := range []struct {
		replicas [][]int32
		want     *kerr.Error
	}{
		{[][]int32{{1}, {2}}, nil},
		{[][]int32{{2}, {3}}, kerr.InvalidReplicaAssignment},
		{[][]int32{{0}}, kerr.InvalidReplicaAssignment},
		{[][]int32{{1, 2}}, kerr.InvalidReplicaAssignment},
	} {
		if got, msg := b.checkAssignment(tc.replicas); got != tc.want {
			t.Errorf("%v: %v (%s), want %v", tc.replicas, got, msg, tc.want)
		}
	}
}
