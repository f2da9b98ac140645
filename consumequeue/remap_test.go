package consumequeue

import (
	"runtime"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// TestRemapTailAfterFlush: the first append after a flush maps the
// queue's tail pages again in one call (remapTailLocked) instead of
// faulting on them, whether the flush synced file by file (the page-table
// entries dropped first) or by syncfs (the pages write-protected by the
// write-back). Faults are counted by the kernel's page-fault event for
// this thread, which, unlike the rusage counters, leaves out the pages
// MADV_POPULATE_WRITE makes.
func TestRemapTailAfterFlush(t *testing.T) {
	for _, tc := range []struct {
		name   string
		queues int
	}{
		{"file by file", 1},
		{"syncfs", syncfsThreshold + 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The count also takes the runtime's own faults on this
			// thread (a collection's or the race detector's fresh memory),
			// which come now and then: up to 28 in a run of 24 under
			// -race, 7 without, on the stores before and after tails
			// (tail.go) alike. Stores that fault on the tail pages fault in
			// every attempt, so the best of three is what the stores do.
			var got []int64
			for range 3 {
				n := remapAfterFlush(t, tc.queues)
				if got = append(got, n); n <= int64(tc.queues)/4 {
					return
				}
			}
			t.Fatalf("%v page faults appending to %d queues after a flush, three times", got, tc.queues)
		})
	}
}

// remapAfterFlush appends to queues queues, flushes, appends again into
// the flushed pages and the next ones, and returns the page faults of the
// second appends; every entry reads back.
func remapAfterFlush(t *testing.T, queues int) int64 {
	s := openStore(t, t.TempDir(), 0, 0)
	storeThroughMapping(s)
	qs := make([]*Queue, queues)
	const n = unmapDirtyMin + 40 // the tail mid-page, enough to drop the entries
	for i := range qs {
		qs[i] = mustQueue(t, s, "t", int32(i))
		appendRange(t, qs[i], 0, n)
	}
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	faults := pageFaultCounter(t)
	before := faults()
	for _, q := range qs {
		appendRange(t, q, n, n+130) // into the next page too
	}
	got := faults() - before
	for _, q := range qs {
		checkRange(t, q, 0, n+130)
	}
	return got
}

// pageFaultCounter counts the page-fault exceptions of the calling
// thread, which must stay locked to it.
func pageFaultCounter(t *testing.T) func() int64 {
	attr := unix.PerfEventAttr{
		Type:   unix.PERF_TYPE_SOFTWARE,
		Config: unix.PERF_COUNT_SW_PAGE_FAULTS,
		Bits:   unix.PerfBitExcludeKernel | unix.PerfBitExcludeHv,
	}
	attr.Size = uint32(unsafe.Sizeof(attr))
	fd, err := unix.PerfEventOpen(&attr, 0, -1, -1, unix.PERF_FLAG_FD_CLOEXEC)
	if err != nil {
		t.Fatalf("perf_event_open(page-faults): %v", err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	return func() int64 {
		var b [8]byte
		if _, err := unix.Read(fd, b[:]); err != nil {
			t.Fatalf("read page-fault counter: %v", err)
		}
		return int64(*(*uint64)(unsafe.Pointer(&b[0])))
	}
}
