package consumequeue

import (
	"sync"
	"testing"
)

// TestPrefetchBesideAppends: Prefetch runs beside appends, promotion,
// truncation and reads of the same queues without a data race (run with
// -race), and the queues hold what was appended.
func TestPrefetchBesideAppends(t *testing.T) {
	s := mustOpen(t, smallOptions(t.TempDir()))
	qs := []*Queue{mustQueue(t, s, "t", 0), mustQueue(t, s, "t", 1)}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for _, q := range qs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var sink int64
			for {
				select {
				case <-stop:
					_ = sink
					return
				default:
					sink += q.Prefetch()
				}
			}
		}()
	}
	for _, q := range qs {
		appendRange(t, q, 0, 30)
		if err := q.TruncateFrom(entryAt(20).PhysOffset); err != nil {
			t.Fatal(err)
		}
		appendRange(t, q, 20, 40)
	}
	waitPromotions(t, s)
	close(stop)
	wg.Wait()
	for _, q := range qs {
		checkRange(t, q, 0, 40)
	}
}
