// Package fileopstest holds test doubles for the fileops seam: Faults
// fails chosen calls, Recorder remembers what each successful sync made
// durable and rebuilds a data directory as a power cut would leave it.
// Only tests import it.
package fileopstest

import (
	"errors"
	"os"
	"sync"

	"github.com/unilog/unilog/internal/fileops"
)

// Ops is fileops.Ops: the doubles wrap one (usually fileops.OS{}) and
// offer the same methods, so they fit the smaller interface each storage
// package declares.
type Ops = fileops.Ops

// Op names a call of Ops.
type Op string

// The calls Faults can fail.
const (
	Fallocate Op = "fallocate"
	Msync     Op = "msync"
	Fdatasync Op = "fdatasync"
	SyncDir   Op = "syncdir"
	Syncfs    Op = "syncfs"
	Rename    Op = "rename"
)

// Faults passes every call to Inner unless a rule set with Set returns an
// error for it; that error is returned instead and the call is not made,
// as when the kernel fails it.
type Faults struct {
	Inner Ops

	mu    sync.Mutex
	rules map[Op]func(path string) error
	calls map[Op]int
}

// NewFaults wraps inner with no rules.
func NewFaults(inner Ops) *Faults {
	return &Faults{Inner: inner, rules: make(map[Op]func(string) error), calls: make(map[Op]int)}
}

// Set makes every later call of op ask rule, with the path the call is
// about (for Rename the old path); a nil rule, or a rule returning nil,
// lets the call through.
func (f *Faults) Set(op Op, rule func(path string) error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if rule == nil {
		delete(f.rules, op)
		return
	}
	f.rules[op] = rule
}

// ErrSkip, returned by a rule, drops the call and reports success: the
// sync a caller forgot, or a disk that lies about it. A Recorder behind the
// Faults never sees the call, so a power-cut test shows whether it was
// needed.
var ErrSkip = errors.New("fileopstest: call skipped")

// Skip makes every later call of op whose path satisfies match succeed
// without being made, until Set(op, nil).
func (f *Faults) Skip(op Op, match func(path string) bool) {
	f.Set(op, func(path string) error {
		if match(path) {
			return ErrSkip
		}
		return nil
	})
}

// Fail makes every later call of op fail with err until Set(op, nil).
func (f *Faults) Fail(op Op, err error) { f.Set(op, func(string) error { return err }) }

// Calls counts the calls of op made so far, failed ones included.
func (f *Faults) Calls(op Op) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[op]
}

// check asks op's rule; skip reports a call to drop with success.
func (f *Faults) check(op Op, path string) (skip bool, err error) {
	f.mu.Lock()
	f.calls[op]++
	rule := f.rules[op]
	f.mu.Unlock()
	if rule == nil {
		return false, nil
	}
	err = rule(path)
	if errors.Is(err, ErrSkip) {
		return true, nil
	}
	return false, err
}

// Fallocate implements Ops.
func (f *Faults) Fallocate(fd *os.File, size int64) error {
	if skip, err := f.check(Fallocate, fd.Name()); skip || err != nil {
		return err
	}
	return f.Inner.Fallocate(fd, size)
}

// Msync implements Ops.
func (f *Faults) Msync(path string, b []byte, off int64) error {
	if skip, err := f.check(Msync, path); skip || err != nil {
		return err
	}
	return f.Inner.Msync(path, b, off)
}

// Fdatasync implements Ops.
func (f *Faults) Fdatasync(fd *os.File) error {
	if skip, err := f.check(Fdatasync, fd.Name()); skip || err != nil {
		return err
	}
	return f.Inner.Fdatasync(fd)
}

// SyncDir implements Ops.
func (f *Faults) SyncDir(dir string) error {
	if skip, err := f.check(SyncDir, dir); skip || err != nil {
		return err
	}
	return f.Inner.SyncDir(dir)
}

// Syncfs implements Ops.
func (f *Faults) Syncfs(dir string) error {
	if skip, err := f.check(Syncfs, dir); skip || err != nil {
		return err
	}
	return f.Inner.Syncfs(dir)
}

// Rename implements Ops.
func (f *Faults) Rename(oldpath, newpath string) error {
	if skip, err := f.check(Rename, oldpath); skip || err != nil {
		return err
	}
	return f.Inner.Rename(oldpath, newpath)
}
