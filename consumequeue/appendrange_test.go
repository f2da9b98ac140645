package consumequeue

import (
	"errors"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/unilog/unilog/internal/fileops/fileopstest"
)

// TestAppendRangePublishesWholeRanges appends ranges of 5 offsets sharing
// one entry, as the dispatcher indexes a record batch, across promotion
// from the journal to files and across file boundaries, while readers poll
// MaxOffset: they must never see it inside a range. A queue that
// published offset by offset let a fetch take its high watermark inside a
// batch and serve the batch past it.
func TestAppendRangePublishesWholeRanges(t *testing.T) {
	const width, ranges = 5, 400
	s, err := Open(Options{Dir: t.TempDir(), EntriesPerFile: 8, SmallEntries: 32, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	q := mustQueue(t, s, "batches", 0)
	const start = 10 // an empty queue starts where its first range does

	var done atomic.Bool
	var wg sync.WaitGroup
	var mu sync.Mutex
	var torn []int64
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !done.Load() {
				max := q.MaxOffset()
				if max != 0 && (max-start)%width != 0 {
					mu.Lock()
					torn = append(torn, max)
					mu.Unlock()
				}
			}
		}()
	}
	for i := range int64(ranges) {
		off := start + i*width
		if err := q.AppendRange(off, width, entryAt(off)); err != nil {
			t.Fatalf("append range at %d: %v", off, err)
		}
	}
	done.Store(true)
	wg.Wait()
	if len(torn) > 0 {
		t.Fatalf("MaxOffset seen inside a range %d times, first %v", len(torn), torn[:min(len(torn), 5)])
	}
	if q.MinOffset() != start || q.MaxOffset() != start+ranges*width {
		t.Fatalf("range [%d, %d), want [%d, %d)", q.MinOffset(), q.MaxOffset(), start, start+ranges*width)
	}
	for off := int64(start); off < start+ranges*width; off++ {
		e, err := q.Get(off)
		if base := off - (off-start)%width; err != nil || e != entryAt(base) {
			t.Fatalf("get %d = %+v, %v, want the range's entry %+v", off, e, err, entryAt(base))
		}
	}
}

// TestAppendRangeFailsMidway: when a store fails inside a range (here the
// new file at a file boundary cannot be allocated), the offsets stored
// before it are published, so the queue stays a prefix of what was asked,
// and the rest can be appended once the fault is gone.
func TestAppendRangeFailsMidway(t *testing.T) {
	s, _, faults, _ := faultyStore(t, t.TempDir(), 4, 0)
	q := mustQueue(t, s, "t", 0)
	if err := q.AppendRange(0, 2, entryAt(0)); err != nil {
		t.Fatal(err)
	}
	faults.Fail(fileopstest.Fallocate, syscall.ENOSPC)
	if err := q.AppendRange(2, 5, entryAt(2)); !errors.Is(err, syscall.ENOSPC) && !errors.Is(err, ErrDiskFull) {
		t.Fatalf("append across a failing file boundary: %v, want a disk full error", err)
	}
	if q.MaxOffset() != 4 {
		t.Fatalf("MaxOffset %d after a failure at offset 4, want 4", q.MaxOffset())
	}
	faults.Fail(fileopstest.Fallocate, nil)
	if err := q.AppendRange(4, 3, entryAt(2)); err != nil {
		t.Fatalf("append the rest: %v", err)
	}
	for off, want := range []Entry{entryAt(0), entryAt(0), entryAt(2), entryAt(2), entryAt(2), entryAt(2), entryAt(2)} {
		if e, err := q.Get(int64(off)); err != nil || e != want {
			t.Fatalf("get %d = %+v, %v, want %+v", off, e, err, want)
		}
	}
}

// TestAppendRangeSameBytes: a range goes into a file as one run of
// stores (file.putRange), and must leave exactly the bytes the same
// entries appended one by one leave: across the file's growth steps, its
// zero-ahead chunks (8,192 entries) and the boundary to the next file,
// for ranges of one, a few, a thousand and more than a chunk, and after
// a reopen.
func TestAppendRangeSameBytes(t *testing.T) {
	const epf, total = 20_000, 50_000
	one, ranges := t.TempDir(), t.TempDir()
	s1, s2 := openStore(t, one, epf, 0), openStore(t, ranges, epf, 0)
	q1, q2 := mustQueue(t, s1, "t", 0), mustQueue(t, s2, "t", 0)
	widths := []int64{1, 7, 1000, 9000, 3, epf + 1}
	for off, i := int64(0), 0; off < total; i++ {
		n := min(widths[i%len(widths)], total-off)
		e := entryAt(off)
		for k := range n {
			if err := q1.Append(off+k, e); err != nil {
				t.Fatalf("append %d: %v", off+k, err)
			}
		}
		if err := q2.AppendRange(off, n, e); err != nil {
			t.Fatalf("append range %d+%d: %v", off, n, err)
		}
		off += n
	}
	if q2.MaxOffset() != total || len(q2.snapshot()) != 3 {
		t.Fatalf("ranges: MaxOffset %d in %d files, want %d in 3", q2.MaxOffset(), len(q2.snapshot()), total)
	}
	for _, s := range []*Store{s1, s2} {
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
	sameTree(t, readTree(t, ranges), readTree(t, one))
	q := mustQueue(t, openStore(t, ranges, epf, 0), "t", 0)
	if q.MinOffset() != 0 || q.MaxOffset() != total {
		t.Fatalf("reopened: [%d, %d), want [0, %d)", q.MinOffset(), q.MaxOffset(), total)
	}
}

func TestAppendRangeRules(t *testing.T) {
	s := openStore(t, t.TempDir(), 8, 0)
	q := mustQueue(t, s, "t", 0)
	for _, tc := range []struct {
		name       string
		off, count int64
		want       error
	}{
		{"empty count", 0, 0, ErrInvalidEntry},
		{"negative count", 0, -3, ErrInvalidEntry},
		{"empty queue starts anywhere", 5, 3, nil},
		{"gap", 9, 2, ErrOffsetGap},
		{"overlap", 7, 2, ErrOffsetGap},
		{"next", 8, 4, nil},
	} {
		err := q.AppendRange(tc.off, tc.count, entryAt(tc.off))
		if !errors.Is(err, tc.want) || (tc.want == nil && err != nil) {
			t.Errorf("%s: append %d+%d: %v, want %v", tc.name, tc.off, tc.count, err, tc.want)
		}
	}
	if q.MinOffset() != 5 || q.MaxOffset() != 12 {
		t.Fatalf("range [%d, %d), want [5, 12)", q.MinOffset(), q.MaxOffset())
	}
}
