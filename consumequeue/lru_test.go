package consumequeue

import (
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
)

func TestLRUEviction(t *testing.T) {
	const (
		maxMapped = 8
		parts     = 40
		perPart   = 20 // 5 files of 4 entries each: 200 files in all
	)
	dir := t.TempDir()
	s := openStore(t, dir, 4, maxMapped)
	qs := make([]*Queue, parts)
	for p := range qs {
		qs[p] = mustQueue(t, s, "t", int32(p))
	}
	for off := int64(0); off < perPart; off++ {
		for _, q := range qs {
			if err := q.Append(off, entryAt(off)); err != nil {
				t.Fatal(err)
			}
			if n := s.MappedFiles(); n > maxMapped {
				t.Fatalf("%d files mapped, max %d", n, maxMapped)
			}
		}
	}
	evicted := 0
	for _, q := range qs {
		for _, f := range q.snapshot() {
			f.mu.RLock()
			if f.m == nil {
				evicted++
			}
			f.mu.RUnlock()
		}
	}
	if evicted < parts*perPart/4-maxMapped {
		t.Fatalf("only %d files unmapped", evicted)
	}
	// Evicted files wait on the dirty list for Flush's fdatasync.
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	for _, q := range qs {
		for _, f := range q.snapshot() {
			if f.dirty.Load() {
				t.Errorf("%s still dirty after Flush", f.path)
			}
		}
	}
	// Every entry reads back through remapping, in an order that keeps
	// evicting: by offset across partitions, then backwards.
	for off := int64(0); off < perPart; off++ {
		for _, q := range qs {
			if e, err := q.Get(off); err != nil || e != entryAt(off) {
				t.Fatalf("get %d: %+v, %v", off, e, err)
			}
		}
	}
	for p := parts - 1; p >= 0; p-- {
		checkRange(t, qs[p], 0, perPart)
		if n := s.MappedFiles(); n > maxMapped {
			t.Fatalf("%d files mapped, max %d", n, maxMapped)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openStore(t, dir, 4, maxMapped)
	for p := range parts {
		q, _ := s.Lookup("t", int32(p))
		checkRange(t, q, 0, perPart)
	}
}

// TestConcurrentReaders runs one appender against readers while the LRU
// thrashes and DeleteBefore and Flush run: every read must return the exact
// entry or, for an offset DeleteBefore has dropped, ErrOutOfRange.
func TestConcurrentReaders(t *testing.T) {
	const (
		parts   = 6
		entries = 600
	)
	s := openStore(t, t.TempDir(), 16, 6)
	qs := make([]*Queue, parts)
	for p := range qs {
		qs[p] = mustQueue(t, s, "t", int32(p))
	}
	var done atomic.Bool
	var wg sync.WaitGroup
	var reads atomic.Int64
	errc := make(chan error, 8)
	for r := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(r), 9))
			for !done.Load() {
				q := qs[rng.IntN(parts)]
				lo, hi := q.MinOffset(), q.MaxOffset()
				if lo >= hi {
					continue
				}
				off := lo + rng.Int64N(hi-lo)
				e, err := q.Get(off)
				switch {
				case err == nil && e != entryAt(off):
					errc <- errors.New("wrong entry")
					return
				case err != nil && !(errors.Is(err, ErrOutOfRange) && off < q.MinOffset()):
					errc <- err
					return
				}
				if got := q.OffsetForTime(entryAt(off).Timestamp); got > off && off >= q.MinOffset() {
					errc <- errors.New("OffsetForTime past an entry with that timestamp")
					return
				}
				reads.Add(1)
			}
		}()
	}
	for off := int64(0); off < entries; off++ {
		for _, q := range qs {
			if err := q.Append(off, entryAt(off)); err != nil {
				t.Fatal(err)
			}
		}
		if off%150 == 149 {
			if err := s.DeleteBefore(entryAt(off - 100).PhysOffset); err != nil {
				t.Fatal(err)
			}
			if err := s.Flush(); err != nil {
				t.Fatal(err)
			}
		}
	}
	done.Store(true)
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
	for _, q := range qs {
		checkRange(t, q, entries-1-100, entries)
	}
	if s.MappedFiles() > 6 {
		t.Fatalf("%d files mapped, max 6", s.MappedFiles())
	}
	t.Logf("%d concurrent reads", reads.Load())
}
