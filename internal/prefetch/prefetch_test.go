package prefetch

import (
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// TestNeverFaults: a prefetch, for a write or a read, of memory that is
// not mapped, is gone or is mapped read-only does nothing, as callers
// that load an address without a lock rely on.
func TestNeverFaults(t *testing.T) {
	page := unix.Getpagesize()
	base, err := unix.MmapPtr(-1, 0, nil, uintptr(2*page), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANON)
	if err != nil {
		t.Fatal(err)
	}
	m := unsafe.Slice((*byte)(base), page)
	gone := unsafe.Add(base, page)
	if err := unix.MunmapPtr(gone, uintptr(page)); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mprotect(m, unix.PROT_READ); err != nil {
		t.Fatal(err)
	}
	readOnly := unsafe.Pointer(&m[8])
	var local [64]byte
	for _, tc := range []struct {
		name string
		p    unsafe.Pointer
	}{
		{"nil", nil},
		{"unmapped", gone},
		{"read-only", readOnly},
		{"heap", unsafe.Pointer(&local[1])},
	} {
		t.Run(tc.name, func(t *testing.T) {
			Write(uintptr(tc.p))
			Read(uintptr(tc.p))
			ReadRange(uintptr(tc.p), 200)
			ReadRange(uintptr(tc.p), 0)
		})
	}
	if m[8] != 0 {
		t.Fatalf("a prefetch changed memory: %d", m[8])
	}
	_ = unix.MunmapPtr(base, uintptr(page))
}
