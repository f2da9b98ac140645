package commitlog

import "os"

// FileOps is every file-system call of the log that decides what survives
// a crash or a full disk. Options.FS is fileops.OS unless a test injects failures or
// records durability (fileopstest), directly or through store.Options.FS.
type FileOps interface {
	Fallocate(f *os.File, size int64) error
	Fdatasync(f *os.File) error
	SyncDir(dir string) error
	Rename(oldpath, newpath string) error
}
