package commitlog

import "os"

// fileOps is every file-system call of the log that decides what survives
// a crash or a full disk. Options.fs is fileops.OS unless a test of this
// package injects failures or records durability (fileopstest).
type fileOps interface {
	Fallocate(f *os.File, size int64) error
	Fdatasync(f *os.File) error
	SyncDir(dir string) error
	Rename(oldpath, newpath string) error
}
