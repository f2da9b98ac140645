package consumequeue

import (
	"sync"
	"testing"
	"unsafe"
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

// TestPrefetchHints: the hints Prefetch reads without a lock follow the
// queue through everything that changes its files: tail is always the
// last file, and next, where known, the address the entry of MaxOffset
// will be stored at: its slot in the last file's mapping or, for a cold
// file, in the file's tail (tail.go), which must then be known. A stale
// hint would only waste a prefetch, but a tail that is not the last file
// would send appends to the wrong file (appendFile takes it as the file
// to append to).
func TestPrefetchHints(t *testing.T) {
	for _, cold := range []bool{false, true} {
		t.Run(map[bool]string{false: "mapping", true: "tails"}[cold], func(t *testing.T) {
			testPrefetchHints(t, cold)
		})
	}
}

func testPrefetchHints(t *testing.T, cold bool) {
	const epf = 300
	s := openStore(t, t.TempDir(), epf, 0)
	if cold {
		everyFileCold(s)
	}
	q := mustQueue(t, s, "t", 0)
	tailed := 0
	check := func(step string) {
		t.Helper()
		fs := q.snapshot()
		var last *file
		if len(fs) > 0 {
			last = fs[len(fs)-1]
		}
		if got := q.tail.Load(); got != last {
			t.Fatalf("%s: tail is not the last of %d files", step, len(fs))
		}
		hi := q.MaxOffset()
		inTail := uintptr(0)
		if last != nil {
			last.mu.Lock()
			if b := last.tail.bytes(HeaderSize + int(hi-last.base-1)*EntrySize); b != nil {
				inTail = uintptr(unsafe.Pointer(&b[0])) + EntrySize
			}
			last.mu.Unlock()
		}
		next := q.next.Load()
		if next == 0 {
			return
		}
		if last == nil || hi < last.base || hi >= last.base+epf {
			t.Fatalf("%s: next set while MaxOffset %d is outside the last file", step, hi)
		}
		want := inTail
		if want == 0 {
			want = last.slotAddr(int(hi - last.base))
		}
		if next != want {
			t.Fatalf("%s: next %#x, want the slot of MaxOffset %d at %#x (in a tail: %t)", step, next, hi, want, inTail != 0)
		}
		if inTail != 0 {
			tailed++
		}
	}
	check("new queue")
	appendRange(t, q, 0, 10)
	check("first file")
	if err := q.AppendRange(10, 2*epf, entryAt(10)); err != nil {
		t.Fatal(err)
	}
	check("range across two file boundaries")
	if err := q.TruncateFrom(entryAt(10).PhysOffset); err != nil {
		t.Fatal(err)
	}
	check("range truncated away")
	appendRange(t, q, 10, epf+20)
	check("appended past the boundary again")
	if err := s.DeleteBefore(entryAt(epf + 1).PhysOffset); err != nil {
		t.Fatal(err)
	}
	check("first file deleted")
	if err := q.Reset(5 * epf); err != nil {
		t.Fatal(err)
	}
	check("reset")
	if err := q.Append(5*epf, entryAt(5*epf)); err != nil {
		t.Fatal(err)
	}
	check("append after reset")
	checkRange(t, q, 5*epf, 5*epf+1)
	if cold && tailed == 0 {
		t.Fatal("no step left next pointing into a tail")
	}
}
