package fsutil

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
)

// TmpSuffix marks a file being written under a temporary name: it never
// holds data anyone relies on, and the store that owns the directory may
// remove it at open.
const TmpSuffix = ".tmp"

// OffsetNameLen is the length of an offset name.
const OffsetNameLen = 20

// OffsetName is the name of a file that starts at offset off (>= 0).
func OffsetName(off int64) string { return fmt.Sprintf("%0*d", OffsetNameLen, off) }

// ParseOffsetName returns the offset an offset name stands for; ok is
// false for any other name (wrong length, a sign, a non-digit).
func ParseOffsetName(name string) (off int64, ok bool) {
	if len(name) != OffsetNameLen {
		return 0, false
	}
	for i := 0; i < len(name); i++ {
		if name[i] < '0' || name[i] > '9' {
			return 0, false
		}
	}
	v, err := strconv.ParseInt(name, 10, 64)
	return v, err == nil
}

// SyncDir fsyncs the directory dir, making the creation, rename or removal
// of the entries in it durable. The error wraps the os error, so a missing
// directory is errors.Is(err, fs.ErrNotExist).
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("sync dir: %w", err)
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("sync dir %s: %w", dir, err)
	}
	return nil
}

// ReplaceFile replaces the file at path with b atomically and durably:
// path+TmpSuffix is written and fsynced, renamed over path, and the
// directory is fsynced. On error the temporary file is removed and path
// holds its old content (or, if the error came from the final directory
// fsync, possibly the new one).
func ReplaceFile(path string, b []byte, perm os.FileMode) error {
	tmp := path + TmpSuffix
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, perm)
	if err != nil {
		return fmt.Errorf("replace %s: %w", path, err)
	}
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("replace %s: %w", path, err)
	}
	if err := SyncDir(filepath.Dir(path)); err != nil {
		return fmt.Errorf("replace %s: %w", path, err)
	}
	return nil
}
