package fileops

import (
	"fmt"
	"os"
	"path/filepath"
)

// Replacer is the part of the seam ReplaceFile makes its calls through,
// and all the dispatcher's own files (checkpoint, abort lock) need.
type Replacer interface {
	Fdatasync(f *os.File) error
	Rename(oldpath, newpath string) error
	SyncDir(dir string) error
}

// ReplaceFile replaces the file at path with b atomically and durably:
// path+TmpSuffix is written and fdatasynced, renamed over path, and the
// directory is synced, each through ops. On error the temporary file is
// removed and path holds its old content (or, if the error came from the
// final directory sync, possibly the new one).
func ReplaceFile(ops Replacer, path string, b []byte, perm os.FileMode) error {
	tmp := path + TmpSuffix
	// Read-write, so a recorder behind ops can read what it syncs.
	f, err := os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_TRUNC, perm)
	if err != nil {
		return fmt.Errorf("replace %s: %w", path, err)
	}
	_, err = f.Write(b)
	if err == nil {
		err = ops.Fdatasync(f)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = ops.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("replace %s: %w", path, err)
	}
	if err := ops.SyncDir(filepath.Dir(path)); err != nil {
		return fmt.Errorf("replace %s: %w", path, err)
	}
	return nil
}
