package controlplane

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/unilog/unilog/internal/clock/clocktest"
	"github.com/unilog/unilog/internal/poll"
)

func liveIDs(m *Membership) []int32 {
	var ids []int32
	for _, mem := range m.Live() {
		ids = append(ids, mem.NodeID)
	}
	return ids
}

func sameIDs(a, b []int32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestMembershipJoinLeaveExpire(t *testing.T) {
	srv := startServer(t)
	ctx := context.Background()
	clock := clocktest.New()
	deadline := 5 * time.Second
	open := func() *Membership {
		b, err := OpenBuckets(ctx, dial(t, srv.ClientURL()), 1, deadline)
		if err != nil {
			t.Fatal(err)
		}
		m, err := WatchMembers(ctx, b.Members, deadline, clock, quietLogger())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(m.Stop)
		return m
	}
	watcher, n2, n3 := open(), open(), open()

	for _, hb := range []struct {
		m   *Membership
		mem Member
	}{
		{n2, Member{NodeID: 2, Advertise: "127.0.0.1:9002", ReplicaGroup: "g1", Role: "leader", Epoch: 3, LogEndOffset: 42, InSync: []int32{3}}},
		{n3, Member{NodeID: 3, Advertise: "127.0.0.1:9003", ReplicaGroup: "g1", Role: "follower", Epoch: 3}},
	} {
		if err := hb.m.Heartbeat(ctx, hb.mem); err != nil {
			t.Fatal(err)
		}
	}
	poll.True(t, "nodes 2 and 3 to join", func() bool { return sameIDs(liveIDs(watcher), []int32{2, 3}) })
	if got := watcher.Live()[0]; got.Advertise != "127.0.0.1:9002" || got.Role != "leader" || got.Epoch != 3 || got.LogEndOffset != 42 || !sameIDs(got.InSync, []int32{3}) {
		t.Fatalf("node 2 seen as %+v", got)
	}

	if err := n3.Leave(ctx, 3); err != nil {
		t.Fatal(err)
	}
	poll.True(t, "node 3 to leave", func() bool { return sameIDs(liveIDs(watcher), []int32{2}) })

	// Node 2 stops heartbeating: gone once the deadline passes unheard,
	// though its key is still in the bucket.
	clock.Advance(deadline - time.Millisecond)
	if got := liveIDs(watcher); !sameIDs(got, []int32{2}) {
		t.Fatalf("just inside the deadline: live %v, want [2]", got)
	}
	clock.Advance(time.Millisecond)
	if got := liveIDs(watcher); len(got) != 0 {
		t.Fatalf("past the deadline: live %v, want none", got)
	}
	// Its last record stays known: its followers decide on its in-sync set.
	if got, ok := watcher.Last(2); !ok || got.Role != "leader" || !sameIDs(got.InSync, []int32{3}) {
		t.Fatalf("last record of node 2 past the deadline: %+v (found %v)", got, ok)
	}
	if _, ok := watcher.Last(3); ok {
		t.Fatal("node 3 left, yet its last record is known")
	}
	if err := n2.Heartbeat(ctx, Member{NodeID: 2, ReplicaGroup: "g1"}); err != nil {
		t.Fatal(err)
	}
	poll.True(t, "node 2 to come back", func() bool { return sameIDs(liveIDs(watcher), []int32{2}) })
}

// lostPutKV loses its first Put, as a write sent to a stream that has no
// leader yet is lost: the caller hears nothing until its context ends.
type lostPutKV struct {
	jetstream.KeyValue
	lost atomic.Bool
}

func (kv *lostPutKV) Put(ctx context.Context, key string, value []byte) (uint64, error) {
	if !kv.lost.Swap(true) {
		<-ctx.Done()
		return 0, ctx.Err()
	}
	return kv.KeyValue.Put(ctx, key, value)
}

// TestJoinRetriesALostWrite: a first heartbeat lost to a stream still
// electing its leader costs one try, not the node's whole start deadline
// (CI saw a three-node cluster's node fail to start so).
func TestJoinRetriesALostWrite(t *testing.T) {
	srv := startServer(t)
	ctx := context.Background()
	b, err := OpenBuckets(ctx, dial(t, srv.ClientURL()), 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	kv := &lostPutKV{KeyValue: b.Members}
	m, err := WatchMembers(ctx, kv, DefaultMemberDeadline, clocktest.New(), quietLogger())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Stop)
	jctx, cancel := context.WithTimeout(ctx, 5*retryTryTimeout)
	defer cancel()
	if err := m.Join(jctx, Member{NodeID: 7, ReplicaGroup: "g1"}); err != nil {
		t.Fatalf("join: %v", err)
	}
	if !kv.lost.Load() {
		t.Fatal("no write was lost: the test tests nothing")
	}
	poll.True(t, "node 7 to be seen", func() bool { return sameIDs(liveIDs(m), []int32{7}) })
}
