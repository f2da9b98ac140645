package fileops

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/edsrzf/mmap-go"
)

func TestGuard(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(path, make([]byte, os.Getpagesize()), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m, err := mmap.Map(f, mmap.RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Unmap()
	if err := os.Truncate(path, 0); err != nil {
		t.Fatal(err)
	}
	var sink byte
	if err := Guard(func() { sink = m[0] }); !errors.Is(err, ErrFault) {
		t.Fatalf("load past the end of a truncated file: %v (read %d), want ErrFault", err, sink)
	}
	if err := Guard(func() {}); err != nil {
		t.Fatalf("no access: %v", err)
	}
	func() {
		defer func() {
			if r := recover(); r != "not a fault" {
				t.Fatalf("recovered %v, want the panic passed on", r)
			}
		}()
		_ = Guard(func() { panic("not a fault") })
	}()
}
