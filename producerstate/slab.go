package producerstate

// slabChunk is how many values one chunk of a slab holds: a chunk of
// Stored is 96 KiB.
const slabChunk = 4096

// slab hands out slices carved from shared chunks, so that decoding a
// snapshot of a million partitions makes a few hundred allocations instead
// of two per partition (its producers and each one's batches), which were
// a third of the decode and as many objects for the collector to mark
// (issue 19). Each slice's capacity is its length, so an append to it
// copies it out rather than writing into its neighbour's values; a chunk
// stays alive while any of its slices does.
type slab[T any] struct{ free []T }

// take returns a slice of n values of T, length 0 and capacity n.
func (s *slab[T]) take(n int) []T {
	if n > cap(s.free)-len(s.free) {
		s.free = make([]T, 0, max(n, slabChunk))
	}
	at := len(s.free)
	s.free = s.free[:at+n]
	return s.free[at : at : at+n]
}
