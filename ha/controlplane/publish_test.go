package controlplane

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/unilog/unilog/internal/poll"
)

// TestPublishInSyncStoresTheSetBeforeReturning: with heartbeats an hour
// apart, only PublishInSync can have written the record read back.
func TestPublishInSyncStoresTheSetBeforeReturning(t *testing.T) {
	srv := startServer(t)
	start := func(id int32) *Node {
		n, err := Start(Config{
			Conn: ConnConfig{URLs: srv.ClientURL()}, Replicas: 1,
			NodeID: id, ReplicaGroup: "g1", Advertise: "127.0.0.1:9001",
			LeaseDuration: 3 * time.Second, RenewDeadline: 2 * time.Second, RetryPeriod: 50 * time.Millisecond,
			HeartbeatInterval: time.Hour, Logger: quietLogger(),
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(n.Close)
		return n
	}
	leader := start(1)
	leader.SetInSync(func() []int32 { return []int32{2, 3} })
	poll.True(t, "node 1 to lead and announce it", func() bool {
		m, ok := leader.Member(1)
		return ok && m.Role == RoleLeader.String()
	})
	follower := start(2)

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, want := range [][]int32{{2}, nil, {3, 2}} {
		if err := leader.PublishInSync(ctx, want); err != nil {
			t.Fatalf("PublishInSync(%v): %v", want, err)
		}
		e, err := leader.buckets.Members.Get(ctx, memberKey(1))
		if err != nil {
			t.Fatal(err)
		}
		var got Member
		if err := decodeValue(e.Value(), &got); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got.InSync, want) || got.Role != RoleLeader.String() || got.Epoch != leader.Elector().State().Epoch {
			t.Fatalf("stored %+v after publishing %v", got, want)
		}
	}
	if err := follower.PublishInSync(ctx, []int32{1}); !errors.Is(err, ErrNotLeading) {
		t.Fatalf("PublishInSync on a follower: %v, want ErrNotLeading", err)
	}
}
