package dispatcher

import "os"

// fileOps is every file-system call of the dispatcher's own files (the
// checkpoint and the abort lock) that decides what survives a crash.
// Options.fs is fileops.OS unless a test of this package records
// durability (fileopstest).
type fileOps interface {
	Fdatasync(f *os.File) error
	Rename(oldpath, newpath string) error
	SyncDir(dir string) error
}
