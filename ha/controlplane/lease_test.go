package controlplane

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/unilog/unilog/internal/clock"

	"github.com/unilog/unilog/internal/clock/clocktest"
)

const (
	testDuration = 6 * time.Second
	testRenew    = 4 * time.Second
	testRetry    = time.Second
)

// eventLog records role changes of several electors in one order.
type eventLog struct {
	mu     sync.Mutex
	events []string
}

func (l *eventLog) add(s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, s)
}

func (l *eventLog) index(s string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i, e := range l.events {
		if e == s {
			return i
		}
	}
	return -1
}

// leaseBucket opens the leases bucket over its own connection, as a node
// would; closing that connection cuts the node off from NATS.
func leaseBucket(t *testing.T, url string) (jetstream.KeyValue, func()) {
	t.Helper()
	nc := dial(t, url)
	b, err := OpenBuckets(context.Background(), nc, 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	return b.Leases, nc.Close
}

func newTestElector(t *testing.T, kv jetstream.KeyValue, id int32, clk clock.Clock, log *eventLog) *Elector {
	t.Helper()
	e, err := NewElector(kv, LeaseConfig{
		Group: "g1", NodeID: id, Duration: testDuration, RenewDeadline: testRenew, RetryPeriod: testRetry,
		Clock: clk, Logger: quietLogger(),
		OnChange: func(s LeaseState) {
			if log != nil {
				log.add(fmt.Sprintf("node %d %s epoch %d", id, s.Role, s.Epoch))
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// twoNodes are nodes 1 and 2 contending for group g1 on one server, each
// over its own connection; cutA closes node 1's.
func twoNodes(t *testing.T, clk clock.Clock, log *eventLog) (a, b *Elector, cutA func()) {
	t.Helper()
	srv := startServer(t)
	kvA, cutA := leaseBucket(t, srv.ClientURL())
	kvB, _ := leaseBucket(t, srv.ClientURL())
	return newTestElector(t, kvA, 1, clk, log), newTestElector(t, kvB, 2, clk, log), cutA
}

func TestLeaseAcquireRenewTakeover(t *testing.T) {
	clock := clocktest.New()
	a, b, cutA := twoNodes(t, clock, nil)
	ctx := context.Background()

	a.Tick(ctx)
	if s := a.State(); s.Role != RoleLeader || s.Epoch != 1 || s.Leader != 1 {
		t.Fatalf("first contender: %+v, want leader with epoch 1", s)
	}
	b.Tick(ctx)
	if s := b.State(); s.Role != RoleFollower || s.Epoch != 1 || s.Leader != 1 {
		t.Fatalf("second contender: %+v, want follower of node 1 at epoch 1", s)
	}

	// Renewed every retry period, the lease stands far beyond its duration.
	for i := 0; i < 3*int(testDuration/testRetry); i++ {
		clock.Advance(testRetry)
		a.Tick(ctx)
		b.Tick(ctx)
		if !a.Leading(1) || b.State().Role != RoleFollower {
			t.Fatalf("after %d renewals: a %+v, b %+v", i+1, a.State(), b.State())
		}
	}

	// Cut off, a cannot renew; b takes over once the lease lapses.
	cutA()
	for i := 0; i < int(testDuration/testRetry); i++ {
		clock.Advance(testRetry)
		a.Tick(ctx)
		b.Tick(ctx)
	}
	if a.State().Role != RoleFollower || a.Leading(1) {
		t.Fatalf("cut-off leader still leading: %+v", a.State())
	}
	if s := b.State(); s.Role != RoleLeader || s.Epoch != 2 || !b.Leading(2) {
		t.Fatalf("after the lease lapsed: %+v, want leader with epoch 2", s)
	}
}

func TestLeaseCompareAndSet(t *testing.T) {
	srv := startServer(t)
	ctx := context.Background()

	t.Run("one of two concurrent contenders wins", func(t *testing.T) {
		clock := clocktest.New()
		kvA, _ := leaseBucket(t, srv.ClientURL())
		kvB, _ := leaseBucket(t, srv.ClientURL())
		group := "race"
		mk := func(kv jetstream.KeyValue, id int32) *Elector {
			e, err := NewElector(kv, LeaseConfig{Group: group, NodeID: id, Clock: clock, Logger: quietLogger()})
			if err != nil {
				t.Fatal(err)
			}
			return e
		}
		a, b := mk(kvA, 1), mk(kvB, 2)
		var wg sync.WaitGroup
		for _, e := range []*Elector{a, b} {
			wg.Add(1)
			go func() { defer wg.Done(); e.Tick(ctx) }()
		}
		wg.Wait()
		if a.Leading(1) == b.Leading(1) {
			t.Fatalf("a leading %v, b leading %v: want exactly one", a.Leading(1), b.Leading(1))
		}
	})

	t.Run("a renewal on a stale revision steps down at once", func(t *testing.T) {
		clock := clocktest.New()
		kv, _ := leaseBucket(t, srv.ClientURL())
		log := &eventLog{}
		a := newTestElector(t, kv, 1, clock, log)
		a.Tick(ctx)
		if !a.Leading(1) {
			t.Fatalf("not leading: %+v", a.State())
		}
		// Another writer moves the key on: our revision is stale.
		e, err := kv.Get(ctx, leaseKey("g1"))
		if err != nil {
			t.Fatal(err)
		}
		val, _ := encodeValue(leaseValue{Group: "g1", Holder: 9, Epoch: 2, DurationMs: testDuration.Milliseconds()})
		if _, err := kv.Update(ctx, leaseKey("g1"), val, e.Revision()); err != nil {
			t.Fatal(err)
		}
		clock.Advance(testRetry)
		a.Tick(ctx)
		if a.State().Role != RoleFollower || log.index("node 1 follower epoch 1") < 0 {
			t.Fatalf("after a lost compare-and-set: %+v, events %v", a.State(), log.events)
		}
		a.Tick(ctx)
		if s := a.State(); s.Leader != 9 || s.Epoch != 2 {
			t.Fatalf("follower view %+v, want node 9 at epoch 2", s)
		}
	})
}

// TestFencedLeaderStopsBeforeTakeover cuts the leader off from NATS and
// steps time in small increments, checking at every step that the two
// nodes never both act as leader and that the old leader's step-down is
// reported before the new leader's take-over.
func TestFencedLeaderStopsBeforeTakeover(t *testing.T) {
	clock := clocktest.New()
	log := &eventLog{}
	a, b, cutA := twoNodes(t, clock, log)
	ctx := context.Background()

	a.Tick(ctx)
	b.Tick(ctx)
	cutA()
	var fencedAt, tookAt time.Duration
	step := 100 * time.Millisecond
	for elapsed := step; elapsed <= 2*testDuration; elapsed += step {
		clock.Advance(step)
		a.Tick(ctx)
		b.Tick(ctx)
		if fencedAt == 0 && !a.Leading(1) {
			fencedAt = elapsed
		}
		if tookAt == 0 && b.State().Role == RoleLeader {
			tookAt = elapsed
		}
		if a.Leading(1) && b.State().Role == RoleLeader {
			t.Fatalf("at +%s both lead: a %+v, b %+v", elapsed, a.State(), b.State())
		}
	}
	if fencedAt == 0 || tookAt == 0 {
		t.Fatalf("fenced at %s, taken at %s: want both", fencedAt, tookAt)
	}
	if tookAt-fencedAt < testDuration-testRenew {
		t.Errorf("old leader fenced at +%s, new leader at +%s: want at least the %s margin between", fencedAt, tookAt, testDuration-testRenew)
	}
	fenced, took := log.index("node 1 follower epoch 1"), log.index("node 2 leader epoch 2")
	if fenced < 0 || took < 0 || fenced > took {
		t.Fatalf("events %v: want node 1's step-down before node 2's take-over", log.events)
	}
}

func TestLeaseReleaseHandsOverAtOnce(t *testing.T) {
	a, b, _ := twoNodes(t, clocktest.New(), nil)
	ctx := context.Background()
	a.Tick(ctx)
	b.Tick(ctx)
	if err := a.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if a.State().Role != RoleFollower {
		t.Fatalf("released but %+v", a.State())
	}
	b.Tick(ctx)
	if !b.Leading(2) {
		t.Fatalf("after release, without time passing: %+v, want leader with epoch 2", b.State())
	}
}

func TestLeaseRestartedNodeResumesWithHigherEpoch(t *testing.T) {
	srv := startServer(t)
	clock := clocktest.New()
	kv, _ := leaseBucket(t, srv.ClientURL())
	ctx := context.Background()
	first := newTestElector(t, kv, 1, clock, nil)
	first.Tick(ctx)
	// The process dies without releasing; its next run must not wait out
	// its own lease, and must not reuse its epoch.
	second := newTestElector(t, kv, 1, clock, nil)
	second.Tick(ctx)
	if !second.Leading(2) {
		t.Fatalf("restarted node: %+v, want leader with epoch 2", second.State())
	}
}

func TestLeaseConfigRejectsUnsafeTiming(t *testing.T) {
	for _, tc := range []struct {
		name                   string
		duration, renew, retry time.Duration
		group                  string
	}{
		{"renew deadline equals duration", 6 * time.Second, 6 * time.Second, time.Second, "g"},
		{"renew deadline inside the margin", 10 * time.Second, 9500 * time.Millisecond, time.Second, "g"},
		{"retry period not below renew deadline", 6 * time.Second, 4 * time.Second, 4 * time.Second, "g"},
		{"group with a dot", 0, 0, 0, "a.b"},
		{"empty group", 0, 0, 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewElector(nil, LeaseConfig{Group: tc.group, Duration: tc.duration, RenewDeadline: tc.renew, RetryPeriod: tc.retry})
			if err == nil {
				t.Fatal("accepted")
			}
			if tc.group == "g" && !errors.Is(err, ErrLeaseTiming) {
				t.Fatalf("%v, want ErrLeaseTiming", err)
			}
		})
	}
}

func TestLeaseIneligibleNodeDoesNotContend(t *testing.T) {
	srv := startServer(t)
	kv, _ := leaseBucket(t, srv.ClientURL())
	eligible := false
	e, err := NewElector(kv, LeaseConfig{Group: "g1", NodeID: 1, Clock: clocktest.New(), Logger: quietLogger(), Eligible: func() bool { return eligible }})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	e.Tick(ctx)
	if e.State().Role != RoleFollower {
		t.Fatalf("ineligible node took the lease: %+v", e.State())
	}
	eligible = true
	e.Tick(ctx)
	if !e.Leading(1) {
		t.Fatalf("eligible again: %+v", e.State())
	}
}

// lostAnswerKV applies the next Update on the server but reports it
// failed, as a renewal cancelled in flight (a node closing) does.
type lostAnswerKV struct {
	jetstream.KeyValue
	lose bool
}

func (kv *lostAnswerKV) Update(ctx context.Context, key string, value []byte, rev uint64) (uint64, error) {
	n, err := kv.KeyValue.Update(ctx, key, value, rev)
	if kv.lose && err == nil {
		kv.lose = false
		return 0, context.Canceled
	}
	return n, err
}

// TestLeaseReleaseAfterLostRenewal: a renewal the server applied but
// whose answer never came leaves the elector with an old revision; the
// next renewal must not mistake its own write for another node's (a
// needless failover), and a release must still hand over at once rather
// than leave the lease to lapse.
func TestLeaseReleaseAfterLostRenewal(t *testing.T) {
	srv := startServer(t)
	clock := clocktest.New()
	kvA, _ := leaseBucket(t, srv.ClientURL())
	kvB, _ := leaseBucket(t, srv.ClientURL())
	lossy := &lostAnswerKV{KeyValue: kvA}
	a := newTestElector(t, lossy, 1, clock, nil)
	b := newTestElector(t, kvB, 2, clock, nil)
	ctx := context.Background()
	a.Tick(ctx)
	b.Tick(ctx)
	lossy.lose = true
	clock.Advance(testRetry)
	a.Tick(ctx)
	if lossy.lose {
		t.Fatal("no renewal was sent")
	}
	// The next renewal finds the lease still ours and keeps it.
	clock.Advance(testRetry)
	a.Tick(ctx)
	if !a.Leading(1) {
		t.Fatalf("renewal after a lost answer: %+v, want still leading at epoch 1", a.State())
	}
	lossy.lose = true
	clock.Advance(testRetry)
	a.Tick(ctx)
	if err := a.Release(ctx); err != nil {
		t.Fatalf("release after a lost renewal answer: %v", err)
	}
	b.Tick(ctx)
	if !b.Leading(2) {
		t.Fatalf("after release, without time passing: %+v, want leader with epoch 2", b.State())
	}
}
