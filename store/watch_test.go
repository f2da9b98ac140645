package store

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/unilog/unilog/commitlog"
)

// settle returns once everything appended is dispatched and the wake-ups of
// that pass are delivered: the run loop takes a request only between passes.
func settle(t testing.TB, d *Store) {
	t.Helper()
	waitDispatched(t, d)
	holdDispatcher(t, d)()
}

func signalled(w Waiter) bool {
	select {
	case <-w.C():
		return true
	default:
		return false
	}
}

func TestWaiter(t *testing.T) {
	d := mustOpen(t, testOptions(t.TempDir()))
	defer d.Close()
	appendTo := func(partition int32, count int32) {
		t.Helper()
		if _, err := d.log.Append(&commitlog.Message{Topic: "w", Partition: partition, Count: count, Body: []byte("x")}); err != nil {
			t.Fatal(err)
		}
		settle(t, d)
	}
	// Partition 0 holds offset 0 from here on.
	appendTo(0, 1)

	// A watch is at delta from the partition's end at registration.
	type watch struct {
		partition int32
		delta     int64
	}
	end := func(partition int32) int64 {
		if q, ok := d.queues.Lookup("w", partition); ok {
			return q.MaxOffset()
		}
		return 0
	}
	for _, tc := range []struct {
		name    string
		watches []watch
		now     bool  // signalled at registration
		grow    int32 // partition appended to, -1 for none
		woken   bool
		left    int64 // registrations left after the append
	}{
		{name: "already beyond", watches: []watch{{0, -1}}, now: true, grow: -1},
		{name: "at the end", watches: []watch{{0, 0}}, grow: 0, woken: true},
		{name: "other partition grows", watches: []watch{{1, 0}}, grow: 2, left: 1},
		{name: "grows but not past the offset", watches: []watch{{0, 1}}, grow: 0, left: 1},
		{name: "one of many", watches: []watch{{5, 0}, {6, 0}, {7, 0}}, grow: 6, woken: true, left: 2},
		{name: "one beyond among many", watches: []watch{{8, 0}, {0, -1}}, now: true, grow: -1, left: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := d.NewWaiter()
			base := d.Watchers()
			for _, x := range tc.watches {
				w.Watch("w", x.partition, end(x.partition)+x.delta)
			}
			if got := signalled(w); got != tc.now {
				t.Fatalf("signalled at registration: %v, want %v", got, tc.now)
			}
			if tc.grow >= 0 {
				appendTo(tc.grow, 1)
			}
			if got := signalled(w); got != tc.woken {
				t.Fatalf("signalled after the append: %v, want %v", got, tc.woken)
			}
			if got := d.Watchers() - base; got != tc.left {
				t.Fatalf("%d registrations left, want %d", got, tc.left)
			}
			w.Release()
			if got := d.Watchers(); got != base {
				t.Fatalf("%d registrations after Release, want %d", got, base)
			}
			if signalled(w) {
				t.Fatal("a signal survived Release")
			}
		})
	}

	w := d.NewWaiter()
	w.Watch("w", 9, 0)
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if !signalled(w) {
		t.Fatal("Close left a waiter waiting")
	}
	if d.Watchers() != 0 {
		t.Fatalf("%d registrations after Close", d.Watchers())
	}
	w.Watch("w", 9, 0)
	if !signalled(w) {
		t.Fatal("a Watch after Close did not signal at once")
	}
}

// TestWaiterIdleRounds is the idle long-poll leak: many rounds over 2,000
// partitions that never grow must leave no registration behind and keep the
// heap where it was.
func TestWaiterIdleRounds(t *testing.T) {
	d := mustOpen(t, testOptions(t.TempDir()))
	defer d.Close()
	const partitions, rounds = 2000, 150
	heap := func() uint64 {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	round := func() {
		w := d.NewWaiter()
		for p := range int32(partitions) {
			w.Watch("idle", p, 0)
		}
		if n := d.Watchers(); n != partitions {
			t.Fatalf("%d registrations while polling, want %d", n, partitions)
		}
		w.Release()
		if n := d.Watchers(); n != 0 {
			t.Fatalf("%d registrations after the poll returned", n)
		}
	}
	round()
	before := heap()
	for range rounds {
		round()
	}
	// Each leaked registration costs about 100 bytes; 150 rounds of 2,000
	// would leak about 30 MiB, far above this bound.
	if after := heap(); after > before+4<<20 {
		t.Fatalf("heap grew from %s to %s over %d idle rounds", mib(before), mib(after), rounds)
	}
}

func mib(n uint64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }
