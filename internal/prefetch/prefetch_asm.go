//go:build amd64 || arm64

package prefetch

// Write hints that the line holding addr is about to be written. addr need
// not be mapped: it may be an address kept from a mapping since unmapped.
func Write(addr uintptr)

// Read hints that the line holding addr is about to be read. addr need
// not be mapped.
func Read(addr uintptr)
