package fsutil

import (
	"errors"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"testing"
)

func TestOffsetName(t *testing.T) {
	for _, off := range []int64{0, 1, 1 << 30, math.MaxInt64} {
		name := OffsetName(off)
		if len(name) != OffsetNameLen {
			t.Fatalf("OffsetName(%d) = %q: %d characters", off, name, len(name))
		}
		if got, ok := ParseOffsetName(name); !ok || got != off {
			t.Fatalf("ParseOffsetName(%q) = %d, %v; want %d", name, got, ok, off)
		}
	}
	if OffsetName(1<<30) != "00000000001073741824" {
		t.Fatalf("OffsetName(1<<30) = %q", OffsetName(1<<30))
	}
}

func TestParseOffsetNameRejects(t *testing.T) {
	for _, name := range []string{
		"",
		"0",
		"0000000000000000000",   // 19 digits
		"000000000000000000000", // 21 digits
		"-0000000000000000001",
		"+0000000000000000001",
		"0000000000000000000a",
		"00000000000000000000.tmp",
		"99999999999999999999", // beyond int64
	} {
		if off, ok := ParseOffsetName(name); ok {
			t.Errorf("ParseOffsetName(%q) = %d, ok; want rejected", name, off)
		}
	}
}

func TestReplaceFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f")
	for _, content := range []string{"first", "second, longer", ""} {
		if err := ReplaceFile(path, []byte(content), 0o600); err != nil {
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
	if err := ReplaceFile(path, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	// A directory where the temporary file must go makes the write fail.
	if err := os.Mkdir(path+TmpSuffix, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := ReplaceFile(path, []byte("new"), 0o600); err == nil {
		t.Fatal("ReplaceFile succeeded with its temporary name taken by a directory")
	}
	if b, err := os.ReadFile(path); err != nil || string(b) != "old" {
		t.Fatalf("after a failed replace: %q, %v; want the old content", b, err)
	}
}

func TestSyncDir(t *testing.T) {
	if err := SyncDir(t.TempDir()); err != nil {
		t.Fatal(err)
	}
	err := SyncDir(filepath.Join(t.TempDir(), "missing"))
	if !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("SyncDir of a missing directory: %v, want fs.ErrNotExist", err)
	}
}
