package controlplane

import (
	"context"
	"testing"
	"time"

	"github.com/unilog/unilog/internal/clock/clocktest"
	"github.com/unilog/unilog/internal/poll"
)

// watchLease runs e's watch of its lease key for the rest of the test.
func watchLease(t *testing.T, e *Elector) {
	t.Helper()
	w, err := e.kv.Watch(context.Background(), e.key)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Stop() })
	go e.watch(w)
}

// ownRev is the revision of e's own lease.
func ownRev(e *Elector) uint64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.rev
}

// waitWatched waits until e's watch delivered revision rev.
func waitWatched(t *testing.T, e *Elector, rev uint64) {
	t.Helper()
	poll.True(t, "the watch to deliver the lease revision", func() bool {
		e.mu.Lock()
		defer e.mu.Unlock()
		return e.watchRev >= rev
	})
}

// nudged reports, and clears, a pending request to tick.
func nudged(e *Elector) bool {
	select {
	case <-e.nudge:
		return true
	default:
		return false
	}
}

// TestLeaseLapseTakenWhenDue: a follower dates each lease revision from
// the moment its watch delivered it, not from its own next read, and
// ticks the moment the revision it saw lapses, not at its next retry
// period. It never takes a lease before its newest revision stood a whole
// lease duration.
func TestLeaseLapseTakenWhenDue(t *testing.T) {
	clk := clocktest.New()
	a, b, _ := twoNodes(t, clk, nil)
	watchLease(t, a)
	watchLease(t, b)
	ctx := context.Background()

	a.Tick(ctx)
	waitWatched(t, b, ownRev(a))
	b.Tick(ctx)
	if s := b.State(); s.Role != RoleFollower || s.Leader != 1 {
		t.Fatalf("b: %+v, want a follower of node 1", s)
	}

	// The last renewal, half a lease in; then node 1 goes silent.
	clk.Advance(testDuration / 2)
	a.Tick(ctx)
	waitWatched(t, b, ownRev(a))
	nudged(b)

	// The first revision lapses: b ticks, finds the renewal it watched
	// standing half a lease, and keeps following.
	clk.Advance(testDuration / 2)
	if !nudged(b) {
		t.Fatal("the lease seen lapsed, and the follower was not made to tick")
	}
	b.Tick(ctx)
	if s := b.State(); s.Role != RoleFollower {
		t.Fatalf("b took a lease renewed half a lease ago: %+v", s)
	}

	// The renewal lapses a lease after the watch delivered it.
	clk.Advance(testDuration/2 - time.Millisecond)
	if nudged(b) {
		t.Fatal("ticked before the renewal lapsed")
	}
	clk.Advance(time.Millisecond)
	if !nudged(b) {
		t.Fatal("the renewal lapsed, and the follower was not made to tick")
	}
	b.Tick(ctx)
	if !b.Leading(2) {
		t.Fatalf("b after the lease lapsed: %+v, want leader of epoch 2", b.State())
	}

	// A release is news to a follower's watch: it ticks at once.
	waitWatched(t, a, ownRev(b))
	a.Tick(ctx)
	nudged(a)
	if err := b.Release(ctx); err != nil {
		t.Fatal(err)
	}
	poll.True(t, "the release to make node 1 tick", func() bool { return nudged(a) })
	a.Tick(ctx)
	if !a.Leading(3) {
		t.Fatalf("a after the release: %+v, want leader of epoch 3", a.State())
	}
}

// TestLeaseResignedNodeNeverContends: a node that resigned (it hands its
// lease over before it stops) does not take the lease back, although it
// held the newest one.
func TestLeaseResignedNodeNeverContends(t *testing.T) {
	a, b, _ := twoNodes(t, clocktest.New(), nil)
	ctx := context.Background()
	a.Tick(ctx)
	if err := a.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	a.Tick(ctx)
	if s := a.State(); s.Role != RoleFollower {
		t.Fatalf("resigned node took its released lease back: %+v", s)
	}
	b.Tick(ctx)
	if !b.Leading(2) {
		t.Fatalf("b after the resignation: %+v, want leader of epoch 2", b.State())
	}
}
