//go:build amd64 || arm64

package prefetch

import "unsafe"

// Write hints that the line holding p is about to be written. p need not
// point at mapped memory.
//
//go:noescape
func Write(p unsafe.Pointer)
