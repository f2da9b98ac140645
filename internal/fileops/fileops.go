// Package fileops is the seam between unilog's storage packages and the
// file-system calls that decide durability: space allocation, msync,
// fdatasync, directory fsync, syncfs and rename.
//
// commitlog and consumequeue each declare the small interface of the calls
// they make and use OS unless a test of theirs injects something else
// (fileopstest: injected failures, and a recorder of what was made durable
// that rebuilds a data directory as a power cut would leave it). Reads,
// writes through mappings and file creation stay direct: they decide
// nothing about what survives a crash.
//
// Every method is named after the system call it makes and returns that
// call's error unwrapped (the caller adds the file and the context), so
// errors.Is(err, unix.ENOSPC) and the like keep working through the seam.
//
// Guard is the other half of living with mapped files: it turns the
// SIGBUS of an access to a mapping whose page the disk cannot return, or
// whose file was truncated, into an error.
package fileops

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"

	"github.com/unilog/unilog/internal/fsutil"
)

// OS makes the real system calls.
type OS struct{}

// Fallocate gives f real blocks up to size (mode 0: the file grows), so a
// full disk is this error and never a SIGBUS on a later store into a
// mapping of a hole. An interrupted call is retried.
func (OS) Fallocate(f *os.File, size int64) error {
	for {
		err := unix.Fallocate(int(f.Fd()), 0, 0, size)
		if !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}

// Msync writes b, a page-aligned range of a shared mapping of the file at
// path starting at file offset off, to disk (MS_SYNC). path and off do not
// change the call; they tell a recorder which bytes became durable.
func (OS) Msync(path string, b []byte, off int64) error {
	return unix.Msync(b, unix.MS_SYNC)
}

// Fdatasync writes f's data and the metadata needed to read it back.
func (OS) Fdatasync(f *os.File) error { return unix.Fdatasync(int(f.Fd())) }

// SyncDir fsyncs the directory dir, making the creation, renaming and
// removal of its entries durable.
func (OS) SyncDir(dir string) error { return fsutil.SyncDir(dir) }

// Syncfs writes back every dirty page and inode of the file system holding
// dir (syncfs(2)): one journal commit instead of one per file.
func (OS) Syncfs(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return unix.Syncfs(int(d.Fd()))
}

// Rename renames oldpath to newpath; it is durable once the directory is
// synced.
func (OS) Rename(oldpath, newpath string) error { return os.Rename(oldpath, newpath) }
