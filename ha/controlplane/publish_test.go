package controlplane

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/unilog/unilog/internal/clock"
	"github.com/unilog/unilog/internal/clock/clocktest"
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

// lateTimers is a fake clock whose timers never run: a process paused,
// or starved, past its lease's renew deadline, whose step-down timer has
// not run yet when it resumes.
type lateTimers struct{ *clocktest.Fake }

type neverTimer struct{}

func (neverTimer) Stop() bool { return true }

func (lateTimers) AfterFunc(time.Duration, func()) clock.Timer { return neverTimer{} }

// TestPublishInSyncRefusedPastTheRenewDeadline: a leader past its renew
// deadline whose step-down has not run yet (resuming from a pause) must
// not publish a smaller in-sync set: another node may hold the lease by
// then, elected on the set before, and the high watermark the shrink
// releases would acknowledge records that node never had.
func TestPublishInSyncRefusedPastTheRenewDeadline(t *testing.T) {
	srv := startServer(t)
	clk := lateTimers{clocktest.New()}
	cfg := testNodeConfig(srv.ClientURL(), 1, "g1", "127.0.0.1:9001")
	cfg.Clock = clk
	n := startTestNodeConfig(t, cfg)
	poll.True(t, "node 1 to lead", func() bool { return n.Elector().State().Role == RoleLeader })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := n.PublishInSync(ctx, []int32{2}); err != nil {
		t.Fatalf("PublishInSync while leading: %v", err)
	}

	clk.Advance(cfg.RenewDeadline + time.Second)
	if s := n.Elector().State(); s.Role != RoleLeader || n.Elector().Leading(s.Epoch) {
		t.Fatalf("past the deadline with the step-down not run: %+v, leading %v; want the role still leader, not Leading", s, n.Elector().Leading(s.Epoch))
	}
	if err := n.PublishInSync(ctx, nil); !errors.Is(err, ErrNotLeading) {
		t.Fatalf("PublishInSync past the renew deadline: %v, want ErrNotLeading", err)
	}
}
