package fileopstest

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/edsrzf/mmap-go"

	"github.com/unilog/unilog/internal/fileops"
)

// TestRecorderImage checks the power-cut model file by file: only synced
// bytes, sizes and directory entries survive.
func TestRecorderImage(t *testing.T) {
	root := t.TempDir()
	r := NewRecorder(fileops.OS{}, root)
	page := os.Getpagesize()
	path := func(name string) string { return filepath.Join(root, name) }
	full := bytes.Repeat([]byte{7}, 2*page)

	// synced: written and fdatasynced, listed by a directory sync.
	f, err := os.Create(path("synced"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(full); err != nil {
		t.Fatal(err)
	}
	if err := r.Fdatasync(f); err != nil {
		t.Fatal(err)
	}
	// half: mapped, both pages written, only the second msynced.
	h, err := os.OpenFile(path("half"), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if err := r.Fallocate(h, int64(2*page)); err != nil {
		t.Fatal(err)
	}
	m, err := mmap.Map(h, mmap.RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Unmap()
	copy(m, full)
	if err := r.Msync(path("half"), m[page:], int64(page)); err != nil {
		t.Fatal(err)
	}
	// listed: in the directory, contents never synced.
	if err := os.WriteFile(path("listed"), full, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := r.SyncDir(root); err != nil {
		t.Fatal(err)
	}
	// After the last directory sync: a rename and a new file.
	if err := r.Rename(path("synced"), path("renamed")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path("late"), full, 0o644); err != nil {
		t.Fatal(err)
	}

	img := t.TempDir()
	if err := r.Image(img, false, 0); err != nil {
		t.Fatal(err)
	}
	want := map[string][]byte{
		"synced": full,
		"half":   append(make([]byte, page), full[page:]...),
		"listed": {},
	}
	ents, err := os.ReadDir(img)
	if err != nil {
		t.Fatal(err)
	}
	if len(ents) != len(want) {
		t.Fatalf("image holds %v, want %d files", ents, len(want))
	}
	for name, w := range want {
		got, err := os.ReadFile(filepath.Join(img, name))
		if err != nil || !bytes.Equal(got, w) {
			t.Fatalf("%s: %d bytes (%v), want %d", name, len(got), err, len(w))
		}
	}
}

// blockingOps holds Fdatasync calls until release is closed, after
// telling entered.
type blockingOps struct {
	fileops.OS
	entered chan struct{}
	release chan struct{}
}

func (b blockingOps) Fdatasync(f *os.File) error {
	b.entered <- struct{}{}
	<-b.release
	return b.OS.Fdatasync(f)
}

// TestRecorderOverlappingSyncs: a sync that snapshotted the file before a
// later one and returns after it must not take back what the later one
// made durable; the image holds the newest snapshot of every byte, size and
// directory.
func TestRecorderOverlappingSyncs(t *testing.T) {
	root := t.TempDir()
	inner := blockingOps{entered: make(chan struct{}), release: make(chan struct{})}
	r := NewRecorder(inner, root)
	path := filepath.Join(root, "f")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write([]byte("old")); err != nil {
		t.Fatal(err)
	}
	slow := make(chan error)
	go func() { slow <- r.Fdatasync(f) }() // snapshots "old", then waits in the kernel
	<-inner.entered
	if _, err := f.WriteAt([]byte("newer"), 0); err != nil {
		t.Fatal(err)
	}
	if err := r.Syncfs(root); err != nil { // snapshots "newer" and returns first
		t.Fatal(err)
	}
	close(inner.release)
	if err := <-slow; err != nil {
		t.Fatal(err)
	}
	img := t.TempDir()
	if err := r.Image(img, false, 1); err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(filepath.Join(img, "f")); err != nil || string(got) != "newer" {
		t.Fatalf("image holds %q (%v), want the newer sync's %q", got, err, "newer")
	}
}
