// Package slab hands out values carved from shared chunks, for state
// rebuilt at start for every partition: at a million partitions one heap
// object per value is a million allocations to make and as many objects
// for the collector to mark (issue 19). A chunk stays alive while any
// value or slice carved from it is referenced, so a slab suits values
// that mostly live and die together, like the partitions of a topic.
package slab

// chunkValues is how many values one chunk holds.
const chunkValues = 4096

// Slab carves values of T from chunks. The zero Slab is ready to use; it
// is not safe for concurrent use.
type Slab[T any] struct{ free []T }

// Take returns a slice of n zero values of T, length 0 and capacity n.
// Its capacity is its length's limit, so an append past n copies it out
// rather than writing into its neighbour's values.
func (s *Slab[T]) Take(n int) []T {
	if n > cap(s.free)-len(s.free) {
		s.free = make([]T, 0, max(n, chunkValues))
	}
	at := len(s.free)
	s.free = s.free[:at+n]
	return s.free[at : at : at+n]
}

// New returns a pointer to one zero value of T.
func (s *Slab[T]) New() *T {
	return &s.Take(1)[:1][0]
}
