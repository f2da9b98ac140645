// Package prefetch asks the CPU to bring a line of memory into its cache
// ahead of a write (Write) or a read (Read), without waiting for it.
//
// A plain load to warm memory waits for the miss like the access it warms,
// and with a few hundred instructions between two such loads the core
// cannot keep more than one outstanding: the dispatcher's read-ahead
// warmed the slots it was about to write into and saved nothing. A
// prefetch instruction retires at once and never faults (a prefetch of an
// address that is not mapped is dropped), so several misses overlap and a
// stale address is harmless.
package prefetch

// lineSize is the cache line the hints step by (x86-64 and most arm64).
const lineSize = 64

// ReadRange hints that the n bytes from addr are about to be read: Read
// of each line they touch.
func ReadRange(addr, n uintptr) {
	for a := addr &^ (lineSize - 1); a < addr+n; a += lineSize {
		Read(a)
	}
}
