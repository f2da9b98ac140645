// Package fileops is the seam between unilog's storage packages and the
// file-system calls that decide durability: space allocation, msync,
// fdatasync, directory fsync, syncfs and rename. Every such call in unilog
// passes through it, so a power-cut test sees all of them.
//
// commitlog, consumequeue and the dispatcher each declare the small
// interface of the calls they make and use OS unless a test of theirs
// injects something else (fileopstest: injected failures, and a recorder of
// what was made durable that rebuilds a data directory as a power cut would
// leave it). Reads, writes through mappings and file creation stay direct:
// they decide nothing about what survives a crash.
//
// # Durability of names
//
// fsync of a file makes its data durable, not its name: a file created,
// renamed or removed in a directory survives a power failure only once the
// directory itself is synced (SyncDir). ReplaceFile therefore writes a
// temporary file beside the target, fdatasyncs it, renames it over the
// target and syncs the directory: a crash at any point leaves either the
// old or the new content under the target name, never a torn file, and the
// rename is on disk when ReplaceFile returns. It is the one atomic replace
// of every small file (checkpoint, leader epochs, metadata, snapshots,
// users).
//
// # Offset names
//
// Commit-log files and consume-queue files are named by the offset of their
// first byte or slot as exactly 20 decimal digits (00000000001073741824),
// zero-padded so that the lexical order of names is their numeric order and
// every int64 >= 0 fits. ParseOffsetName accepts only that form.
//
// Every method is named after the system call it makes and returns that
// call's error unwrapped (the caller adds the file and the context), so
// errors.Is(err, unix.ENOSPC) and the like keep working through the seam.
//
// Guard is the other half of living with mapped files: it turns the
// SIGBUS of an access to a mapping whose page the disk cannot return, or
// whose file was truncated, into an error.
//
// Open is os.OpenFile for the files the storage opens again and again (a
// consume-queue file each time it grows): it skips the runtime's poller,
// which refuses regular files after five system calls.
package fileops

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// Ops is every call of the seam. OS makes them; each storage package
// declares the smaller interface of the calls it makes, and store.Options
// takes an Ops to hand to all of them.
type Ops interface {
	Fallocate(f *os.File, size int64) error
	Msync(path string, b []byte, off int64) error
	Fdatasync(f *os.File) error
	SyncDir(dir string) error
	Syncfs(dir string) error
	Rename(oldpath, newpath string) error
}

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
// removal of its entries durable. Unlike the other methods it names the
// directory in its error, which still wraps the os error (a missing
// directory is errors.Is(err, fs.ErrNotExist)).
func (OS) SyncDir(dir string) error {
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
