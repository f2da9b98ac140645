package commitlog

// Writes in pieces of the zero-chunk grid.
//
// No write of the log crosses a multiple of zeroChunk (256 KiB): a longer
// one is cut there into several. The page cache makes a write's folios as
// large as the aligned range it covers allows, up to 2 MiB, and a group of
// 256 batches at 100 partitions is a 3 MB write, so each covered a whole
// aligned 2 MiB range. On the machine of docs/BENCHMARKS.md the kernel's
// copy into those folios cost 10 times as much per byte as into the
// 256 KiB ones the zeros ahead make (perf: copy_folio_from_iter_atomic at
// 52-57% of the broker's samples at 100 partitions, 10-13% at 1, for the
// same bytes); the likely reason is that such blocks are the free memory a
// VM's balloon reports back to its host, so each of their pages faults in
// the host on first touch. Cut at the grid, the broker's CPU for four
// topics of 300,000 1 KiB records at 100 partitions fell from 235 to
// 125-133 ticks (records/s from about 430,000 to 560,000); at 1, 1,000
// and 10,000 partitions it did not change. The cost is a system call per
// 256 KiB, about 1 µs.

// pieceLen is how many of n bytes to write at pos so that the write stops
// at the next multiple of zeroChunk.
func pieceLen(pos, n int64) int64 {
	return min(n, zeroChunk-pos%zeroChunk)
}

// cutVector returns the first n bytes of iov (not empty) as a vector
// sharing its array: the iovec at cut is shortened in place, and the
// caller puts whole back once it has written the vector.
func cutVector(iov [][]byte, n int64) (piece [][]byte, cut int, whole []byte) {
	for i, b := range iov {
		if int64(len(b)) >= n {
			iov[i] = b[:n]
			return iov[:i+1], i, b
		}
		n -= int64(len(b))
	}
	last := len(iov) - 1
	return iov, last, iov[last]
}
