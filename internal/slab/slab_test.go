package slab

import "testing"

func TestTakeStaysApart(t *testing.T) {
	var s Slab[int]
	a := s.Take(2)
	b := s.Take(3)
	if len(a) != 0 || cap(a) != 2 || len(b) != 0 || cap(b) != 3 {
		t.Fatalf("len/cap %d/%d and %d/%d, want 0/2 and 0/3", len(a), cap(a), len(b), cap(b))
	}
	b = append(b, 7, 8, 9)
	// A third value in a copies a out: b's values stay.
	a = append(a, 1, 2, 3)
	if b[0] != 7 || b[1] != 8 || b[2] != 9 || a[2] != 3 {
		t.Fatalf("a %v, b %v", a, b)
	}
}

func TestNewIsZeroAndDistinct(t *testing.T) {
	var s Slab[[2]int64]
	seen := map[*[2]int64]bool{}
	for range 3 * chunkValues {
		p := s.New()
		if *p != [2]int64{} || seen[p] {
			t.Fatalf("value %v at %p, seen before: %v", *p, p, seen[p])
		}
		seen[p] = true
		p[0] = 1
	}
}

func TestTakeLargerThanAChunk(t *testing.T) {
	var s Slab[byte]
	s.Take(10)
	big := s.Take(chunkValues + 1)
	if cap(big) != chunkValues+1 {
		t.Fatalf("cap %d, want %d", cap(big), chunkValues+1)
	}
	if next := s.Take(1); cap(next) != 1 {
		t.Fatalf("cap %d after a large take, want 1", cap(next))
	}
}

func TestNewAllocates(t *testing.T) {
	var s Slab[int64]
	if n := testing.AllocsPerRun(1000, func() { s.New() }); n > 0.01 {
		t.Fatalf("%.3f allocations per value, want a chunk per %d", n, chunkValues)
	}
}
