package broker

import (
	"context"
	"slices"
	"sort"
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/unilog/unilog/internal/poll"
)

// groupsCluster is fakeCluster with node 1 in replica group g1 and node 2
// in g2.
type groupsCluster struct{ fakeCluster }

func (groupsCluster) Brokers() []ClusterBroker {
	return []ClusterBroker{{NodeID: 1, Host: "0.0.0.0", Port: 1, ReplicaGroup: "g1"}, {NodeID: 2, Host: "127.0.0.2", Port: 9092, ReplicaGroup: "g2"}}
}

// fakeMoves keeps moves in memory; every partition's source is g1.
type fakeMoves struct {
	mu     sync.Mutex
	moves  map[topicPartition]PartitionMove
	epochs map[topicPartition]MovedEpoch
}

func (*fakeMoves) Writer() (string, bool) { return "g1", true }

func (f *fakeMoves) Moves() []PartitionMove {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []PartitionMove
	for _, mv := range f.moves {
		out = append(out, mv)
	}
	sort.Slice(out, func(i, j int) bool {
		return out[i].Topic < out[j].Topic || out[i].Topic == out[j].Topic && out[i].Partition < out[j].Partition
	})
	return out
}

func (f *fakeMoves) Move(topic string, p int32) (PartitionMove, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	mv, ok := f.moves[topicPartition{topic, p}]
	return mv, ok
}

func (f *fakeMoves) StartMove(topic string, p int32, to string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.moves[topicPartition{topic, p}]; ok {
		return ErrMoveInProgress
	}
	f.moves[topicPartition{topic, p}] = PartitionMove{Topic: topic, Partition: p, From: "g1", To: to, End: -1}
	return nil
}

func (f *fakeMoves) CancelMove(topic string, p int32) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	mv, ok := f.moves[topicPartition{topic, p}]
	switch {
	case !ok:
		return ErrNoMove
	case mv.Fenced:
		return ErrMoveInProgress
	}
	delete(f.moves, topicPartition{topic, p})
	return nil
}

func (f *fakeMoves) UpdateMove(topic string, p int32, update func(*PartitionMove) error) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	mv, ok := f.moves[topicPartition{topic, p}]
	if !ok {
		return ErrNoMove
	}
	if err := update(&mv); err != nil {
		return err
	}
	f.moves[topicPartition{topic, p}] = mv
	return nil
}

func (f *fakeMoves) FinishMove(string, int32, int32, uint64) error { return nil }

func (*fakeMoves) SourceEpoch(context.Context, string, int32) (int32, error) { return 0, nil }

func (f *fakeMoves) MovedEpoch(topic string, p int32) MovedEpoch {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.epochs[topicPartition{topic, p}]
}

// TestPartitionReassignmentAPIs: AlterPartitionReassignments names the
// target group by its nodes and ListPartitionReassignments shows the move
// in progress, adding the target's nodes and removing the source's; a
// cancel works until the source is fenced.
func TestPartitionReassignmentAPIs(t *testing.T) {
	cfg := testConfig(t, t.TempDir())
	cfg.NodeID = 1
	cfg.Cluster = groupsCluster{}
	moves := &fakeMoves{moves: map[topicPartition]PartitionMove{}}
	cfg.Moves = moves
	b := startBroker(t, cfg)
	cl := newClient(t, b.Addr())
	createTopic(t, cl, "t", 3)
	adm := kadm.NewClient(cl)
	ctx := context.Background()

	alter := func(p int32, replicas []int32) error {
		req := kadm.AlterPartitionAssignmentsReq{}
		req.Assign("t", p, replicas)
		resp, err := adm.AlterPartitionAssignments(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		return resp["t"][p].Err
	}
	for _, tc := range []struct {
		name      string
		partition int32
		replicas  []int32
		want      error
	}{
		{"to g2 by its node", 0, []int32{2}, nil},
		{"again: already moving there", 0, []int32{2}, nil},
		{"two groups", 1, []int32{1, 2}, kerr.InvalidReplicaAssignment},
		{"unknown broker", 1, []int32{9}, kerr.InvalidReplicaAssignment},
		{"empty", 1, []int32{}, kerr.InvalidReplicaAssignment},
		{"unknown partition", 7, []int32{2}, kerr.UnknownTopicOrPartition},
		{"another to g2", 2, []int32{2}, nil},
		{"cancel", 2, nil, nil},
		{"cancel again", 2, nil, kerr.NoReassignmentInProgress},
	} {
		if err := alter(tc.partition, tc.replicas); err != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
	if mv, ok := moves.Move("t", 0); !ok || mv.To != "g2" {
		t.Fatalf("move of t/0: %+v %v", mv, ok)
	}
	listed, err := adm.ListPartitionReassignments(ctx, kadm.TopicsSet{"t": {0: {}, 1: {}, 2: {}}})
	if err != nil {
		t.Fatal(err)
	}
	// A null topic list asks for every move.
	all, err := kmsg.NewPtrListPartitionReassignmentsRequest().RequestWith(ctx, cl)
	if err != nil || len(all.Topics) != 1 || len(all.Topics[0].Partitions) != 1 || all.Topics[0].Partitions[0].Partition != 0 {
		t.Fatalf("listing every reassignment: %+v %v", all, err)
	}
	got, ok := listed["t"][0]
	if !ok || len(listed["t"]) != 1 || !slices.Equal(got.Replicas, []int32{1, 2}) || !slices.Equal(got.AddingReplicas, []int32{2}) || !slices.Equal(got.RemovingReplicas, []int32{1}) {
		t.Fatalf("listed reassignments %+v, want t/0 replicas [1 2] adding [2] removing [1]", listed)
	}

	if code := produceAcksAll(t, cl, "t", "before"); code != 0 {
		t.Fatalf("produce before the fence: %v", kerr.ErrorForCode(code))
	}
	moves.UpdateMove("t", 0, func(mv *PartitionMove) error { mv.Fenced = true; return nil })
	if err := alter(0, nil); err != kerr.InvalidReplicaAssignment {
		t.Errorf("cancel once fenced: %v, want INVALID_REPLICA_ASSIGNMENT", err)
	}
	// Fenced, the source refuses produce to the partition and publishes
	// where it stopped.
	if code := produceAcksAll(t, cl, "t", "after"); code != kerr.NotLeaderForPartition.Code {
		t.Errorf("produce once fenced: %v, want NOT_LEADER_OR_FOLLOWER", kerr.ErrorForCode(code))
	}
	poll.True(t, "the source to publish its end", func() bool {
		mv, _ := moves.Move("t", 0)
		return mv.End == 1
	})
}

// TestOffsetForLeaderEpochAfterMove: a partition that moved in reports
// epochs above its base (fakeCluster's 7 is lease epoch 3 over base 4);
// the epochs before its move ended where it switched.
func TestOffsetForLeaderEpochAfterMove(t *testing.T) {
	cfg := testConfig(t, t.TempDir())
	cfg.NodeID = 1
	cfg.Cluster = groupsCluster{}
	cfg.Moves = &fakeMoves{epochs: map[topicPartition]MovedEpoch{{"t", 0}: {Base: 4, First: 6, Since: 2}}}
	b := startBroker(t, cfg)
	cl := newClient(t, b.Addr())
	createTopic(t, cl, "t", 1)
	for _, v := range []string{"a", "b", "c"} {
		if code := produceAcksAll(t, cl, "t", v); code != 0 {
			t.Fatal(kerr.ErrorForCode(code))
		}
	}
	for _, tc := range []struct {
		epoch, wantEpoch int32
		wantEnd          int64
	}{
		{5, 5, 2},   // the source's: ended at the switch
		{0, 0, 2},   // an old one of the source's too
		{7, 7, 3},   // the current one: to the high watermark
		{8, -1, -1}, // above the current one: unknown
	} {
		req := kmsg.NewPtrOffsetForLeaderEpochRequest()
		rt := kmsg.NewOffsetForLeaderEpochRequestTopic()
		rt.Topic = "t"
		rp := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
		rp.CurrentLeaderEpoch, rp.LeaderEpoch = 7, tc.epoch
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(context.Background(), cl)
		if err != nil {
			t.Fatal(err)
		}
		got := resp.Topics[0].Partitions[0]
		if got.ErrorCode != 0 || got.LeaderEpoch != tc.wantEpoch || got.EndOffset != tc.wantEnd {
			t.Errorf("epoch %d: %v epoch %d end %d, want epoch %d end %d", tc.epoch, kerr.ErrorForCode(got.ErrorCode), got.LeaderEpoch, got.EndOffset, tc.wantEpoch, tc.wantEnd)
		}
	}
}
