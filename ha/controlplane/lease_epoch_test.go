package controlplane

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/sirupsen/logrus"
	"github.com/sirupsen/logrus/hooks/test"

	"github.com/unilog/unilog/internal/clock"
	"github.com/unilog/unilog/internal/clock/clocktest"
)

// replayKV answers a Get with an entry it returned earlier once told
// to, as a lagging replica of the bucket would; or fails Gets.
type replayKV struct {
	jetstream.KeyValue
	mu     sync.Mutex
	seen   []jetstream.KeyValueEntry
	replay jetstream.KeyValueEntry
	fail   error
}

func (kv *replayKV) Get(ctx context.Context, key string) (jetstream.KeyValueEntry, error) {
	kv.mu.Lock()
	defer kv.mu.Unlock()
	if kv.fail != nil {
		return nil, kv.fail
	}
	if e := kv.replay; e != nil {
		kv.replay = nil
		return e, nil
	}
	e, err := kv.KeyValue.Get(ctx, key)
	if err == nil {
		kv.seen = append(kv.seen, e)
	}
	return e, err
}

func (kv *replayKV) replayFirst() {
	kv.mu.Lock()
	defer kv.mu.Unlock()
	kv.replay = kv.seen[0]
}

func epochElector(t *testing.T, kv jetstream.KeyValue, id int32, clk clock.Clock, store EpochStore, log logrus.FieldLogger) (*Elector, error) {
	t.Helper()
	return NewElector(kv, LeaseConfig{
		Group: "g1", NodeID: id, Duration: testDuration, RenewDeadline: testRenew, RetryPeriod: testRetry,
		Epochs: store, Clock: clk, Logger: log,
	})
}

// TestLeaseStaleReadIgnored: a read answered from a replica that lags
// must not take a follower back to the older leader and epoch.
func TestLeaseStaleReadIgnored(t *testing.T) {
	srv := startServer(t)
	clk := clocktest.New()
	ctx := context.Background()
	kvA, _ := leaseBucket(t, srv.ClientURL())
	kvB, _ := leaseBucket(t, srv.ClientURL())
	kvC, _ := leaseBucket(t, srv.ClientURL())
	lagging := &replayKV{KeyValue: kvC}
	a := newTestElector(t, kvA, 1, clk, nil)
	b := newTestElector(t, kvB, 2, clk, nil)
	c := newTestElector(t, lagging, 3, clk, nil)
	a.Tick(ctx)
	c.Tick(ctx)
	if err := a.Release(ctx); err != nil {
		t.Fatal(err)
	}
	b.Tick(ctx)
	c.Tick(ctx)
	if s := c.State(); s.Leader != 2 || s.Epoch != 2 {
		t.Fatalf("follower view %+v, want node 2 at epoch 2", s)
	}
	lagging.replayFirst()
	c.Tick(ctx)
	if s := c.State(); s.Leader != 2 || s.Epoch != 2 {
		t.Fatalf("after a stale read: %+v, want still node 2 at epoch 2", s)
	}
	if st := c.ReadStats(); st.Stale != 1 {
		t.Fatalf("read stats %+v, want one stale read", st)
	}
}

func TestLeaseFailedReadsCountedAndLogged(t *testing.T) {
	srv := startServer(t)
	clk := clocktest.New()
	kv, _ := leaseBucket(t, srv.ClientURL())
	failing := &replayKV{KeyValue: kv, fail: context.DeadlineExceeded}
	log, hook := test.NewNullLogger()
	e, err := epochElector(t, failing, 1, clk, nil, log)
	if err != nil {
		t.Fatal(err)
	}
	for range 5 {
		e.Tick(context.Background())
		clk.Advance(testRetry)
	}
	if st := e.ReadStats(); st.Failed != 5 {
		t.Fatalf("read stats %+v, want 5 failed", st)
	}
	var lines int
	for _, en := range hook.AllEntries() {
		if en.Level == logrus.InfoLevel && en.Message == "lease not read: cannot tell whether it lapsed" {
			lines++
		}
	}
	if lines != 1 {
		t.Fatalf("%d info lines for 5 failed reads within %s, want 1", lines, readErrLogEvery)
	}
}

// TestLeaseEpochsNeverGoBack: a node keeps the highest epoch it has seen
// in its epoch file. A forged lease raises it; after a restart with the
// key deleted the node does not lead again at epoch 1, and a lease below
// the stored epoch is not followed.
func TestLeaseEpochsNeverGoBack(t *testing.T) {
	srv := startServer(t)
	clk := clocktest.New()
	ctx := context.Background()
	kv, _ := leaseBucket(t, srv.ClientURL())
	store := NewEpochFile(filepath.Join(t.TempDir(), EpochFileName))
	log, hook := test.NewNullLogger()

	forge := func(holder int32, epoch uint64) {
		t.Helper()
		val, _ := encodeValue(leaseValue{Group: "g1", Holder: holder, Epoch: epoch, DurationMs: testDuration.Milliseconds()})
		if _, err := kv.Put(ctx, leaseKey("g1"), val); err != nil {
			t.Fatal(err)
		}
	}
	first, err := epochElector(t, kv, 1, clk, store, log)
	if err != nil {
		t.Fatal(err)
	}
	first.Tick(ctx)
	if !first.Leading(1) {
		t.Fatalf("first run: %+v", first.State())
	}
	forge(5, 50)
	clk.Advance(testRetry)
	first.Tick(ctx) // the renewal finds another writer: steps down
	first.Tick(ctx) // and sees epoch 50
	if s := first.State(); s.Epoch != 50 {
		t.Fatalf("after the forged lease: %+v", s)
	}

	// The node restarts; the forged key is gone.
	if err := kv.Delete(ctx, leaseKey("g1")); err != nil {
		t.Fatal(err)
	}
	second, err := epochElector(t, kv, 1, clk, store, log)
	if err != nil {
		t.Fatal(err)
	}
	second.Tick(ctx)
	if s := second.State(); s.Role != RoleLeader || s.Epoch != 51 {
		t.Fatalf("after a restart with the key deleted: %+v, want leading at epoch 51", s)
	}
	if got, err := store.Load(); err != nil || got != (EpochMarks{Seen: 51, Reserved: 51}) {
		t.Fatalf("epoch file holds %+v, %v; want 51 seen and reserved", got, err)
	}

	// A lease below it is not followed, and stands only until it lapses.
	third, err := epochElector(t, kv, 1, clk, store, log)
	if err != nil {
		t.Fatal(err)
	}
	forge(7, 3)
	third.Tick(ctx)
	if s := third.State(); s.Role != RoleFollower || s.Leader == 7 || s.Epoch == 3 {
		t.Fatalf("after a lease below the stored epoch: %+v, want it not followed", s)
	}
	if st := third.ReadStats(); st.OlderEpoch != 1 {
		t.Fatalf("read stats %+v, want one older epoch", st)
	}
	warned := false
	for _, en := range hook.AllEntries() {
		warned = warned || en.Level == logrus.WarnLevel && en.Data["holder"] == int32(7) && en.Data["seen_epoch"] == uint64(51)
	}
	if !warned {
		t.Fatal("no warning with the holder and the highest epoch")
	}
	for range int(testDuration / testRetry) {
		clk.Advance(testRetry)
		third.Tick(ctx)
	}
	if s := third.State(); s.Role != RoleLeader || s.Epoch != 52 {
		t.Fatalf("after the lower lease lapsed: %+v, want leading at epoch 52", s)
	}
}

func TestEpochFileRefusesDamage(t *testing.T) {
	path := filepath.Join(t.TempDir(), EpochFileName)
	f := NewEpochFile(path)
	if got, err := f.Load(); err != nil || got != (EpochMarks{}) {
		t.Fatalf("missing file: %+v, %v", got, err)
	}
	want := EpochMarks{Seen: 12, Reserved: 14}
	if err := f.Store(want); err != nil {
		t.Fatal(err)
	}
	if got, err := f.Load(); err != nil || got != want {
		t.Fatalf("stored %+v, loaded %+v, %v", want, got, err)
	}
	b, _ := os.ReadFile(path)
	b[len(b)-2] ^= 1
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Load(); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("damaged file: %v, want ErrCorrupt", err)
	}
	if _, err := epochElector(t, nil, 1, clocktest.New(), f, quietLogger()); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("elector over a damaged file: %v, want ErrCorrupt", err)
	}
}

// partedKV is a node's view of the bucket while it is cut off from
// the stream leader but not from a replica: reads repeat the last entry
// seen, and writes are never answered (nor applied).
type partedKV struct {
	jetstream.KeyValue
	mu     sync.Mutex
	parted bool
	last   jetstream.KeyValueEntry
}

func (kv *partedKV) Get(ctx context.Context, key string) (jetstream.KeyValueEntry, error) {
	kv.mu.Lock()
	defer kv.mu.Unlock()
	if kv.parted {
		return kv.last, nil
	}
	e, err := kv.KeyValue.Get(ctx, key)
	if err == nil {
		kv.last = e
	}
	return e, err
}

func (kv *partedKV) Update(ctx context.Context, key string, value []byte, rev uint64) (uint64, error) {
	kv.mu.Lock()
	parted := kv.parted
	kv.mu.Unlock()
	if parted {
		return 0, context.DeadlineExceeded
	}
	return kv.KeyValue.Update(ctx, key, value, rev)
}

func (kv *partedKV) part(p bool) {
	kv.mu.Lock()
	defer kv.mu.Unlock()
	kv.parted = p
}

// TestLeaseTakeWithoutAnswerKeepsFollowing: a node whose view of the
// lease froze takes it when it seems to lapse; the take goes unanswered,
// so its epoch stays reserved (the write may have been applied). Back in
// touch, the node still follows the lease that stood all along, below the
// reserved epoch, also after a restart, and its next lease is above it.
func TestLeaseTakeWithoutAnswerKeepsFollowing(t *testing.T) {
	srv := startServer(t)
	clk := clocktest.New()
	ctx := context.Background()
	kvA, cutA := leaseBucket(t, srv.ClientURL())
	kvB, _ := leaseBucket(t, srv.ClientURL())
	store := NewEpochFile(filepath.Join(t.TempDir(), EpochFileName))
	a := newTestElector(t, kvA, 1, clk, nil)
	a.Tick(ctx)
	parted := &partedKV{KeyValue: kvB}
	b, err := epochElector(t, parted, 2, clk, store, quietLogger())
	if err != nil {
		t.Fatal(err)
	}
	b.Tick(ctx)
	parted.part(true)
	for range int(testDuration/testRetry) + 1 {
		clk.Advance(testRetry)
		a.Tick(ctx)
		b.Tick(ctx)
	}
	marks, _ := store.Load()
	if marks.Seen != 1 || marks.Reserved < 2 {
		t.Fatalf("marks after an unanswered take: %+v, want seen 1, reserved 2 or more", marks)
	}
	if !a.Leading(1) {
		t.Fatalf("node 1 %+v, want still leading at epoch 1", a.State())
	}
	parted.part(false)
	restart := func() *Elector {
		e, err := epochElector(t, kvB, 2, clk, store, quietLogger())
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	for _, b := range []*Elector{b, restart()} {
		b.Tick(ctx)
		if s := b.State(); s.Leader != 1 || s.Epoch != 1 || b.ReadStats().OlderEpoch != 0 {
			t.Fatalf("b %+v, stats %+v: want following node 1 at epoch 1", s, b.ReadStats())
		}
	}
	cutA()
	b = restart()
	for range int(testDuration/testRetry) + 1 {
		b.Tick(ctx)
		clk.Advance(testRetry)
	}
	if s := b.State(); s.Role != RoleLeader || s.Epoch != marks.Reserved+1 {
		t.Fatalf("after node 1's lease lapsed: %+v, want leading just above the reserved epoch %d", s, marks.Reserved)
	}
}
