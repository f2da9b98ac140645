package store

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/unilog/unilog/internal/fileops"
)

const abortName = "abort"

// abortLock is the flock'ed abort file. Its presence at open means the
// previous process did not stop cleanly; the lock keeps a second process off
// the same data directory.
type abortLock struct {
	f    *os.File
	path string
	ops  fileops.Replacer
}

// lockAbort creates (or opens) <dir>/abort, locks it and reports whether it
// existed before, i.e. whether the previous run crashed.
func lockAbort(ops fileops.Replacer, dir string) (*abortLock, bool, error) {
	path := filepath.Join(dir, abortName)
	for {
		a, crashed, again, err := tryLockAbort(ops, path)
		if !again {
			return a, crashed, err
		}
	}
}

// tryLockAbort asks to be tried again when the file it locked was removed
// by a process stopping at that very moment.
func tryLockAbort(ops fileops.Replacer, path string) (_ *abortLock, crashed, again bool, _ error) {
	dir := filepath.Dir(path)
	crashed = true
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		crashed = false
	} else if err != nil {
		return nil, false, false, fmt.Errorf("store: stat %s: %w", path, err)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, false, false, fmt.Errorf("store: open %s: %w", path, err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, false, false, fmt.Errorf("%w: %s", ErrLocked, dir)
		}
		return nil, false, false, fmt.Errorf("store: lock %s: %w", path, err)
	}
	held, err1 := f.Stat()
	named, err2 := os.Stat(path)
	if err1 != nil || err2 != nil || !os.SameFile(held, named) {
		f.Close()
		return nil, false, true, nil
	}
	// The pid is only for humans looking at a stuck directory.
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	// A crash of the whole machine must still find the file, or the next
	// start would trust a stale checkpoint as if the stop had been clean.
	if !crashed {
		if err := ops.Fdatasync(f); err != nil {
			f.Close()
			return nil, false, false, fmt.Errorf("store: sync %s: %w", path, err)
		}
		if err := ops.SyncDir(dir); err != nil {
			f.Close()
			return nil, false, false, fmt.Errorf("store: %w", err)
		}
	}
	return &abortLock{f: f, path: path, ops: ops}, crashed, false, nil
}

// release marks a clean stop: the file is removed while still locked, so no
// other process can observe it half-way.
func (a *abortLock) release() error {
	err := os.Remove(a.path)
	if err == nil {
		if err = a.ops.SyncDir(filepath.Dir(a.path)); err != nil {
			err = fmt.Errorf("store: %w", err)
		}
	} else {
		err = fmt.Errorf("store: remove %s: %w", a.path, err)
	}
	if cerr := a.f.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("store: close %s: %w", a.path, cerr)
	}
	return err
}

// unlock drops the lock but leaves the file, so the next open recovers.
func (a *abortLock) unlock() {
	a.f.Close()
}
