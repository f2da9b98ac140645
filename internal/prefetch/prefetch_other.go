//go:build !amd64 && !arm64

package prefetch

// Write does nothing where no prefetch instruction is wired up.
func Write(uintptr) {}

// Read does nothing where no prefetch instruction is wired up.
func Read(uintptr) {}
