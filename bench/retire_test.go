package bench

import (
	"os"
	"path/filepath"
	"testing"
)

// TestRetirement: a retired run's files keep their inodes but lose their
// bytes until Close; a leftover of an interrupted benchmark is removed
// when the next one starts; a run directory that was never made is no
// error.
func TestRetirement(t *testing.T) {
	root := t.TempDir()
	stale := filepath.Join(root, retiredDir, "7")
	if err := os.MkdirAll(stale, 0o755); err != nil {
		t.Fatal(err)
	}
	ret, err := newRetirement(root)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Fatalf("the interrupted benchmark's leftover is still there: %v", err)
	}
	run := filepath.Join(root, "unilog-async-1000")
	queue := filepath.Join(run, "consumequeue", "t@0", "0")
	if err := os.MkdirAll(queue, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{filepath.Join(run, "log"), filepath.Join(queue, "00000000000000000000")} {
		if err := os.WriteFile(f, make([]byte, 64<<10), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := ret.retire(run); err != nil {
		t.Fatal(err)
	}
	if err := ret.retire(filepath.Join(root, "never-started")); err != nil {
		t.Fatalf("retiring a directory that does not exist: %v", err)
	}
	if _, err := os.Stat(run); !os.IsNotExist(err) {
		t.Fatalf("the run directory is still in place: %v", err)
	}
	kept := filepath.Join(root, retiredDir, "1", "consumequeue", "t@0", "0", "00000000000000000000")
	st, err := os.Stat(kept)
	if err != nil {
		t.Fatalf("the retired queue file is gone before Close: %v", err)
	}
	if st.Size() != 0 {
		t.Fatalf("the retired queue file holds %d bytes, want 0", st.Size())
	}
	if err := ret.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, retiredDir)); !os.IsNotExist(err) {
		t.Fatalf("retired runs are left after Close: %v", err)
	}
}
