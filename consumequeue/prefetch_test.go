package consumequeue

import (
	"sync"
	"testing"
)

// prefetchUntilStopped calls Prefetch on each of qs, on a goroutine each,
// until the returned function is called, which waits for them.
func prefetchUntilStopped(qs ...*Queue) (stop func()) {
	var wg sync.WaitGroup
	done := make(chan struct{})
	for _, q := range qs {
		wg.Go(func() {
			var sink int64
			for {
				select {
				case <-done:
					_ = sink
					return
				default:
					sink += q.Prefetch()
				}
			}
		})
	}
	return func() { close(done); wg.Wait() }
}

// TestPrefetchBesideAppends: Prefetch runs beside appends, promotion,
// truncation and reads of the same queues without a data race (run with
// -race), and the queues hold what was appended.
func TestPrefetchBesideAppends(t *testing.T) {
	s := mustOpen(t, smallOptions(t.TempDir()))
	qs := []*Queue{mustQueue(t, s, "t", 0), mustQueue(t, s, "t", 1)}
	stop := prefetchUntilStopped(qs...)
	for _, q := range qs {
		appendRange(t, q, 0, 30)
		if err := q.TruncateFrom(entryAt(20).PhysOffset); err != nil {
			t.Fatal(err)
		}
		appendRange(t, q, 20, 40)
	}
	waitPromotions(t, s)
	stop()
	for _, q := range qs {
		checkRange(t, q, 0, 40)
	}
}

// TestPrefetchBesideEviction: Prefetch of queues with files, which reads a
// file's mapping address without its lock, runs beside appends that grow
// files, start new ones and, with one mapping allowed, unmap each other's
// files, and beside truncation and retention: nothing faults, no data
// race (run with -race), and the queues hold what was appended.
func TestPrefetchBesideEviction(t *testing.T) {
	const epf, parts = 300, 4
	s := openStore(t, t.TempDir(), epf, 1)
	var qs []*Queue
	for p := range int32(parts) {
		qs = append(qs, mustQueue(t, s, "t", p))
	}
	stop := prefetchUntilStopped(qs...)
	const n = 3 * epf
	for from := int64(0); from < n; from += 50 {
		for _, q := range qs {
			appendRange(t, q, from, from+50)
		}
	}
	for _, q := range qs {
		if err := q.TruncateFrom(entryAt(n - 100).PhysOffset); err != nil {
			t.Fatal(err)
		}
		appendRange(t, q, n-100, n)
	}
	if err := s.DeleteBefore(entryAt(epf + 10).PhysOffset); err != nil {
		t.Fatal(err)
	}
	stop()
	if got := s.MappedFiles(); got > 1 {
		t.Fatalf("%d files mapped, want at most 1: the appends did not evict", got)
	}
	for _, q := range qs {
		checkRange(t, q, epf+10, n)
	}
}
