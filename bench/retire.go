package bench

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
)

// retiredDir is where finished runs wait, under the benchmark's directory,
// until the whole benchmark ends.
const retiredDir = "retired"

// retirement keeps the inodes of finished runs until the benchmark ends.
//
// ext4 without a journal (as on the machines these reports come from)
// does not reuse an inode for 60 s after it was deleted, 360 s while its
// inode-table block is dirty: every creation scans past the inodes
// deleted in that window (recently_deleted in fs/ext4/ialloc.c). A run at
// 10,000 partitions leaves some 20,000 consume-queue files and
// directories; deleting them right before the next run put 24-45% of that
// run's broker CPU into the scan (perf, kernel stacks), a cost of the
// benchmark's own deletes that a broker serving one workload never pays,
// and one that lands on whichever run comes next. So a finished run's
// files are cut to zero length (their blocks freed, the disk stays as
// empty as before) and its directory moved aside; Close removes them all
// at once, after the last run.
type retirement struct {
	dir string
	n   int
}

// newRetirement prepares root's retired directory, removing what an
// interrupted benchmark left there.
func newRetirement(root string) (*retirement, error) {
	dir := filepath.Join(root, retiredDir)
	if err := os.RemoveAll(dir); err != nil {
		return nil, fmt.Errorf("bench: clean %s: %w", dir, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	return &retirement{dir: dir}, nil
}

// retire frees the bytes of a finished run's directory and moves it aside.
// A directory that does not exist is no error (the run failed to start).
func (r *retirement) retire(dir string) error {
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		return os.Truncate(path, 0)
	})
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("bench: retire %s: %w", dir, err)
	}
	r.n++
	if err := os.Rename(dir, filepath.Join(r.dir, strconv.Itoa(r.n))); err != nil {
		return fmt.Errorf("bench: retire %s: %w", dir, err)
	}
	return nil
}

// Close removes every retired run.
func (r *retirement) Close() error {
	if err := os.RemoveAll(r.dir); err != nil {
		return fmt.Errorf("bench: remove %s: %w", r.dir, err)
	}
	return nil
}
