package consumequeue

import "os"

// FileOps is every file-system call of the store that decides what
// survives a crash or a full disk. Options.FS is fileops.OS unless a test
// injects failures or records durability (fileopstest), directly or
// through store.Options.FS.
type FileOps interface {
	Fallocate(f *os.File, size int64) error
	Msync(path string, b []byte, off int64) error
	Fdatasync(f *os.File) error
	SyncDir(dir string) error
	Syncfs(dir string) error
	Rename(oldpath, newpath string) error
}
