package fileops

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

func TestReplaceFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f")
	for _, content := range []string{"first", "second, longer", ""} {
		if err := ReplaceFile(OS{}, path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(path)
		if err != nil || string(b) != content {
			t.Fatalf("after ReplaceFile(%q): %q, %v", content, b, err)
		}
		if _, err := os.Stat(path + TmpSuffix); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("temporary file left behind: %v", err)
		}
	}
}

func TestReplaceFileFailureKeepsOld(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f")
	if err := ReplaceFile(OS{}, path, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	// A directory where the temporary file must go makes the write fail.
	if err := os.Mkdir(path+TmpSuffix, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := ReplaceFile(OS{}, path, []byte("new"), 0o600); err == nil {
		t.Fatal("ReplaceFile succeeded with its temporary name taken by a directory")
	}
	if b, err := os.ReadFile(path); err != nil || string(b) != "old" {
		t.Fatalf("after a failed replace: %q, %v; want the old content", b, err)
	}
}

func TestSyncDir(t *testing.T) {
	if err := (OS{}).SyncDir(t.TempDir()); err != nil {
		t.Fatal(err)
	}
	err := (OS{}).SyncDir(filepath.Join(t.TempDir(), "missing"))
	if !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("SyncDir of a missing directory: %v, want fs.ErrNotExist", err)
	}
}
