package fileops

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// Open opens the file at path as os.OpenFile does, without offering it to
// the runtime's network poller.
//
// os.OpenFile puts every descriptor it opens in non-blocking mode and tries
// to register it with epoll; a regular file cannot be registered, so it
// puts the descriptor back in blocking mode: four fcntl calls and a failed
// epoll_ctl around each open (strace). The consume queues open a file by
// its path each time one grows, is mapped again or is synced on its own,
// which at 10,000 partitions is thousands of opens a second while queues
// are young. On the 2-core virtual machine of docs/BENCHMARKS.md an open,
// fallocate and close of an existing file took 13.3-15.4 µs through
// os.OpenFile and 8.0-9.8 µs through Open (BenchmarkOpen, three runs of
// 20,000). A file from Open reads and writes in blocking mode, as one from
// os.OpenFile does once epoll has refused it.
//
// The descriptor is close-on-exec. Errors are *os.PathError, so
// errors.Is(err, os.ErrNotExist) and the like hold as for os.OpenFile.
func Open(path string, flag int, perm os.FileMode) (*os.File, error) {
	for {
		fd, err := unix.Open(path, flag|unix.O_CLOEXEC, uint32(perm.Perm()))
		if err == nil {
			return os.NewFile(uintptr(fd), path), nil
		}
		if !errors.Is(err, unix.EINTR) {
			return nil, &os.PathError{Op: "open", Path: path, Err: err}
		}
	}
}
