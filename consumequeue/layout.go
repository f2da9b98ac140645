package consumequeue

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/unilog/unilog/internal/fileops"
)

// The directory layout (see "Layout" in the package doc) is read only here,
// by Open and by tools that inspect a store without opening it, so the two
// never disagree on which directory is a queue: an inspection once listed a
// directory "007" that Open ignored.

// QueueDir is the directory of queue id in a store rooted at dir.
func QueueDir(dir string, id ID) string {
	return filepath.Join(dir, id.Topic, strconv.FormatInt(int64(id.Partition), 10))
}

// ListQueues returns the queues that have a directory under dir, ordered
// by ID.Compare: <topic>/<partition> where topic is a valid topic name and
// partition a non-negative int32 written without sign or leading zero. A
// missing dir holds no queue. A topic directory that cannot be read is
// reported in the error but does not hide the others' queues, which are
// returned; one removed meanwhile (a concurrent delete) holds none.
func ListQueues(dir string) ([]ID, error) { return listQueues(os.DirFS(dir), dir) }

func listQueues(fsys fs.FS, dir string) ([]ID, error) {
	topics, err := fs.ReadDir(fsys, ".")
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("consumequeue: list %s: %w", dir, err)
	}
	var ids []ID
	var errs []error
	for _, t := range topics {
		if !t.IsDir() || !validTopic(t.Name()) {
			continue
		}
		parts, err := fs.ReadDir(fsys, t.Name())
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("consumequeue: list %s: %w", dir, err))
			continue
		}
		for _, p := range parts {
			n, err := strconv.ParseInt(p.Name(), 10, 32)
			if err != nil || n < 0 || !p.IsDir() || strconv.FormatInt(n, 10) != p.Name() {
				continue
			}
			ids = append(ids, ID{Topic: t.Name(), Partition: int32(n)})
		}
	}
	slices.SortFunc(ids, ID.Compare)
	return ids, errors.Join(errs...)
}

// ListFiles returns the base offsets of the queue files in qdir, ascending:
// regular files named by 20 zero-padded digits. Other entries are not the
// queue's and are left alone.
func ListFiles(qdir string) ([]int64, error) {
	des, err := os.ReadDir(qdir)
	if err != nil {
		return nil, fmt.Errorf("consumequeue: list %s: %w", qdir, err)
	}
	var bases []int64
	for _, de := range des {
		if base, ok := fileops.ParseOffsetName(de.Name()); ok && de.Type().IsRegular() {
			bases = append(bases, base)
		}
	}
	slices.Sort(bases)
	return bases, nil
}
