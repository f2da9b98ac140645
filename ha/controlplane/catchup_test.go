package controlplane

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// heldKV is a bucket whose watches deliver their initial values and then
// hold every later entry until release is closed: a node whose watch lags.
type heldKV struct {
	jetstream.KeyValue
	release chan struct{}
}

type heldWatcher struct {
	jetstream.KeyWatcher
	out chan jetstream.KeyValueEntry
}

func (w heldWatcher) Updates() <-chan jetstream.KeyValueEntry { return w.out }

func (kv heldKV) hold(w jetstream.KeyWatcher) jetstream.KeyWatcher {
	out := make(chan jetstream.KeyValueEntry)
	go func() {
		defer close(out)
		held := false
		for e := range w.Updates() {
			if held {
				<-kv.release
			}
			out <- e
			held = held || e == nil // the end of the initial values
		}
	}()
	return heldWatcher{KeyWatcher: w, out: out}
}

func (kv heldKV) WatchAll(ctx context.Context, opts ...jetstream.WatchOpt) (jetstream.KeyWatcher, error) {
	w, err := kv.KeyValue.WatchAll(ctx, opts...)
	if err != nil {
		return nil, err
	}
	return kv.hold(w), nil
}

// openHeldMove creates a topic whose partition 0 moves to g2 and opens
// the metadata over a held watch that saw that (heldKV); the caller
// closes it. n1 is another node's, whose watch is not held.
func openHeldMove(t *testing.T) (n1 *Metadata, kv heldKV, held *Metadata) {
	t.Helper()
	srv := startServer(t)
	ctx := context.Background()
	n1 = openTestMetadata(t, srv.ClientURL(), "g1")
	if err := n1.CreateTopic(Topic{Name: "orders", ID: [16]byte{1}, Partitions: 1}); err != nil {
		t.Fatal(err)
	}
	if err := n1.StartMove("orders", 0, "g2", 1); err != nil {
		t.Fatal(err)
	}
	b, err := OpenBuckets(ctx, dial(t, srv.ClientURL()), 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	kv = heldKV{KeyValue: b.Metadata, release: make(chan struct{})}
	held, err = OpenMetadata(ctx, kv, nil, quietLogger())
	if err != nil {
		t.Fatal(err)
	}
	return n1, kv, held
}

// TestMetadataCatchUpSeesFence: a node whose watch lags behind a move's
// Fenced step (a source leader just elected) does not see it in its copy;
// CatchUp waits until it does, and a bucket whose last write is the
// producer id counter, a key no topic watch delivers, is caught up too.
func TestMetadataCatchUpSeesFence(t *testing.T) {
	ctx := context.Background()
	n1, kv, lagging := openHeldMove(t)
	t.Cleanup(func() { lagging.Close() })

	if err := n1.UpdateMove("orders", 0, func(mv *Move) error { mv.Fenced = true; return nil }); err != nil {
		t.Fatal(err)
	}
	if _, err := n1.ReserveProducerIDs(10); err != nil {
		t.Fatal(err)
	}
	if mv, ok := lagging.Move("orders", 0); !ok || mv.Fenced {
		t.Fatalf("lagging node's move %+v %v: want it unfenced while its watch is held", mv, ok)
	}
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	err := lagging.CatchUp(short)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("catch up while the watch is held: %v, want it waiting until its context ends", err)
	}

	close(kv.release)
	wait, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := lagging.CatchUp(wait); err != nil {
		t.Fatal(err)
	}
	if mv, ok := lagging.Move("orders", 0); !ok || !mv.Fenced {
		t.Fatalf("after catching up the move is %+v %v, want it fenced", mv, ok)
	}
}

// TestLeadersCatchUpSeesElection: a node whose leases watch lags behind
// an election reports the old epoch from its copy; caught up, the new one.
func TestLeadersCatchUpSeesElection(t *testing.T) {
	srv := startServer(t)
	ctx := context.Background()
	b, err := OpenBuckets(ctx, dial(t, srv.ClientURL()), 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	lease := func(epoch uint64) {
		t.Helper()
		val, err := encodeValue(leaseValue{Group: "g1", Holder: int32(epoch), Epoch: epoch, DurationMs: 1500})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := b.Leases.Put(ctx, leaseKey("g1"), val); err != nil {
			t.Fatal(err)
		}
	}
	lease(4)
	kv := heldKV{KeyValue: b.Leases, release: make(chan struct{})}
	lagging, err := WatchLeaders(ctx, kv, quietLogger())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(lagging.Stop)
	lease(5)
	if got := lagging.Epoch("g1"); got != 4 {
		t.Fatalf("epoch %d while the watch is held, want 4", got)
	}
	close(kv.release)
	wait, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := lagging.CatchUp(wait); err != nil {
		t.Fatal(err)
	}
	if got := lagging.Epoch("g1"); got != 5 {
		t.Fatalf("epoch %d once caught up, want 5", got)
	}
}

// TestMetadataCatchUpPastStalledWatch: a watch that delivers nothing more
// (its consumer's server died) does not hold CatchUp: the bucket is read
// afresh.
func TestMetadataCatchUpPastStalledWatch(t *testing.T) {
	ctx := context.Background()
	n1, kv, stalled := openHeldMove(t)
	t.Cleanup(func() { close(kv.release); stalled.Close() })
	if err := n1.UpdateMove("orders", 0, func(mv *Move) error { mv.Fenced = true; return nil }); err != nil {
		t.Fatal(err)
	}
	wait, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := stalled.CatchUp(wait); err != nil {
		t.Fatal(err)
	}
	if mv, ok := stalled.Move("orders", 0); !ok || !mv.Fenced {
		t.Fatalf("after catching up the move is %+v %v, want it fenced", mv, ok)
	}
}

// entry is one bucket entry, as a watch delivers it.
type entry struct {
	jetstream.KeyValueEntry
	key string
	val []byte
	rev uint64
	op  jetstream.KeyValueOp
}

func (e entry) Key() string                     { return e.key }
func (e entry) Value() []byte                   { return e.val }
func (e entry) Revision() uint64                { return e.rev }
func (e entry) Operation() jetstream.KeyValueOp { return e.op }

// TestLeadersKeepNewestLease: CatchUp's fresh read applies a group's
// newest lease while the lagging watch still holds older ones; delivered
// afterwards, they leave the copy at the newest epoch (a move's target
// reading the older epoch would switch past a newer source leader), and
// a stale put does not bring back a deleted lease.
func TestLeadersKeepNewestLease(t *testing.T) {
	l := &Leaders{log: quietLogger(), rev: newWatchRevision(), groups: make(map[string]leaseValue), revs: make(map[string]uint64)}
	put := func(rev, epoch uint64) entry {
		t.Helper()
		val, err := encodeValue(leaseValue{Group: "g1", Holder: int32(epoch), Epoch: epoch, DurationMs: 1500})
		if err != nil {
			t.Fatal(err)
		}
		return entry{key: leaseKey("g1"), val: val, rev: rev, op: jetstream.KeyValuePut}
	}
	l.apply(put(7, 6)) // the fresh read
	l.apply(put(5, 4)) // the watch's older entries, delivered late
	l.apply(put(6, 5))
	if got := l.Epoch("g1"); got != 6 {
		t.Fatalf("epoch %d after older entries arrived late, want 6", got)
	}
	l.apply(entry{key: leaseKey("g1"), rev: 9, op: jetstream.KeyValueDelete})
	l.apply(put(8, 7))
	if gl, ok := l.Leader("g1"); ok {
		t.Fatalf("lease %+v back after its delete, want none", gl)
	}
}
