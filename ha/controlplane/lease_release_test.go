package controlplane

import (
	"context"
	"testing"

	"github.com/unilog/unilog/internal/clock/clocktest"
)

// TestLeaseReleaseOutlastsARenewalAndALaggingRead: a renewal still in
// flight when the holder releases lands first, and the read-back that
// follows is answered by a replica that has not seen it yet. The release
// must still be stored: followers that never see it wait for the lease
// to lapse, and a hand-over takes a lease instead of milliseconds.
func TestLeaseReleaseOutlastsARenewalAndALaggingRead(t *testing.T) {
	srv := startServer(t)
	kv, _ := leaseBucket(t, srv.ClientURL())
	lagging := &replayKV{KeyValue: kv}
	e := newTestElector(t, lagging, 1, clocktest.New(), nil)
	ctx := context.Background()
	e.Tick(ctx)
	if s := e.State(); s.Role != RoleLeader {
		t.Fatalf("after a tick on an empty bucket: %+v", s)
	}
	held, err := lagging.Get(ctx, leaseKey("g1"))
	if err != nil {
		t.Fatal(err)
	}
	// The renewal, landing before the release.
	if _, err := kv.Update(ctx, leaseKey("g1"), held.Value(), held.Revision()); err != nil {
		t.Fatal(err)
	}
	lagging.replayFirst()

	if err := e.Release(ctx); err != nil {
		t.Fatal(err)
	}
	cur, err := kv.Get(ctx, leaseKey("g1"))
	if err != nil {
		t.Fatal(err)
	}
	var v leaseValue
	if err := decodeValue(cur.Value(), &v); err != nil {
		t.Fatal(err)
	}
	if !v.Released || v.Holder != 1 || v.Epoch != 1 {
		t.Fatalf("lease after the release: %+v, want node 1's epoch 1 released", v)
	}
}
