package fileopstest

import (
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"syscall"
)

// Recorder passes every call to Inner and remembers what each successful
// one made durable, under the strict model a power cut tests against:
//
//   - Msync of a range: those bytes, as they were when it was called, and
//     the file's size (an msync is an fdatasync of the range).
//   - Fdatasync: the whole file's bytes and size.
//   - SyncDir: the directory's entries (names and the files they lead to);
//     creations, renames and removals not followed by one are not durable.
//   - Syncfs: every file and directory under Root.
//
// Calls may overlap: each takes what it makes durable when it is made (a
// snapshot, numbered), and a call returning after a later one takes back
// nothing the later one recorded: each byte, size and listing keeps its
// newest snapshot.
//
// Fallocate, Rename, writes and truncation make nothing durable. Image then
// rebuilds Root as a power cut at that moment may leave it: the entries of
// the last durable listing of each directory, each file at its last durable
// size holding its durable bytes, and zeros or garbage everywhere else.
// Files are told apart by inode number, so a test must not depend on an
// inode reused after a removal.
type Recorder struct {
	Inner Ops
	// Root is the directory Image rebuilds; the test makes it exist.
	Root string

	mu     sync.Mutex
	frozen bool
	snaps  uint32 // snapshots numbered so far
	files  map[uint64]*durableFile
	dirs   map[uint64]dirListing
}

// durableFile is what the syncs of one file made durable, each byte and
// the size with the number of the snapshot it comes from (0: none; 32
// bits, as a test takes far fewer snapshots and a byte's number costs
// memory).
type durableFile struct {
	size    int64
	sizeVer uint32
	data    []byte
	ver     []uint32
}

type dirListing struct {
	ver  uint32
	ents []dirEntry
}

type dirEntry struct {
	name string
	ino  uint64
	dir  bool
}

// NewRecorder wraps inner, recording what becomes durable under root.
func NewRecorder(inner Ops, root string) *Recorder {
	return &Recorder{Inner: inner, Root: root, files: make(map[uint64]*durableFile), dirs: make(map[uint64]dirListing)}
}

// Freeze stops recording: it is the moment of the cut. Calls still reach
// Inner afterwards, so the process under test runs on unaware.
func (r *Recorder) Freeze() {
	r.mu.Lock()
	r.frozen = true
	r.mu.Unlock()
}

// Frozen reports whether Freeze has run. A test counts a write as
// acknowledged only if it saw its acknowledgement before the cut, that is
// when Frozen was still false after it.
func (r *Recorder) Frozen() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.frozen
}

func inode(fi os.FileInfo) uint64 { return fi.Sys().(*syscall.Stat_t).Ino }

// snapshot numbers a snapshot about to be taken.
func (r *Recorder) snapshot() uint32 {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.snaps++
	return r.snaps
}

// record stores bytes [off, off+len(b)) of the file ino of size size, as
// snapshot ver took them, as durable where no later snapshot did.
func (r *Recorder) record(ver uint32, ino uint64, size int64, b []byte, off int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.frozen {
		return
	}
	f := r.files[ino]
	if f == nil {
		f = &durableFile{}
		r.files[ino] = f
	}
	if ver > f.sizeVer {
		f.size, f.sizeVer = size, ver
	}
	if end := off + int64(len(b)); end > int64(len(f.data)) {
		f.data = append(f.data, make([]byte, end-int64(len(f.data)))...)
		f.ver = append(f.ver, make([]uint32, end-int64(len(f.ver)))...)
	}
	for i, c := range b {
		if k := off + int64(i); ver > f.ver[k] {
			f.data[k], f.ver[k] = c, ver
		}
	}
}

// recordDir stores a directory's listing, as snapshot ver took it, where
// no later snapshot did. r.mu is held.
func (r *Recorder) recordDir(ver uint32, ino uint64, ents []dirEntry) {
	if !r.frozen && ver > r.dirs[ino].ver {
		r.dirs[ino] = dirListing{ver, ents}
	}
}

// Fallocate implements Ops; an allocation alone is not durable.
func (r *Recorder) Fallocate(fd *os.File, size int64) error { return r.Inner.Fallocate(fd, size) }

// Rename implements Ops; a rename is durable with its directory's SyncDir.
func (r *Recorder) Rename(oldpath, newpath string) error { return r.Inner.Rename(oldpath, newpath) }

// Msync implements Ops.
func (r *Recorder) Msync(path string, b []byte, off int64) error {
	ver := r.snapshot()
	snap := append([]byte(nil), b...)
	if err := r.Inner.Msync(path, b, off); err != nil {
		return err
	}
	fi, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("recorder: msync %s: %w", path, err)
	}
	r.record(ver, inode(fi), fi.Size(), snap, off)
	return nil
}

// Fdatasync implements Ops.
func (r *Recorder) Fdatasync(fd *os.File) error {
	ver := r.snapshot()
	fi, err := fd.Stat()
	if err != nil {
		return err
	}
	snap := make([]byte, fi.Size())
	if _, err := fd.ReadAt(snap, 0); err != nil {
		return fmt.Errorf("recorder: read %s: %w", fd.Name(), err)
	}
	if err := r.Inner.Fdatasync(fd); err != nil {
		return err
	}
	r.record(ver, inode(fi), fi.Size(), snap, 0)
	return nil
}

// SyncDir implements Ops.
func (r *Recorder) SyncDir(dir string) error {
	ver := r.snapshot()
	ino, ents, err := listDir(dir)
	if err != nil {
		return err
	}
	if err := r.Inner.SyncDir(dir); err != nil {
		return err
	}
	r.mu.Lock()
	r.recordDir(ver, ino, ents)
	r.mu.Unlock()
	return nil
}

// Syncfs implements Ops: everything under Root becomes durable.
func (r *Recorder) Syncfs(dir string) error {
	type fileSnap struct {
		ino  uint64
		data []byte
	}
	ver := r.snapshot()
	var files []fileSnap
	dirs := make(map[uint64][]dirEntry)
	err := filepath.WalkDir(r.Root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			ino, ents, err := listDir(path)
			dirs[ino] = ents
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		files = append(files, fileSnap{inode(fi), data})
		return nil
	})
	if err != nil {
		return fmt.Errorf("recorder: syncfs %s: %w", r.Root, err)
	}
	if err := r.Inner.Syncfs(dir); err != nil {
		return err
	}
	for _, f := range files {
		r.record(ver, f.ino, int64(len(f.data)), f.data, 0)
	}
	r.mu.Lock()
	for ino, ents := range dirs {
		r.recordDir(ver, ino, ents)
	}
	r.mu.Unlock()
	return nil
}

func listDir(dir string) (uint64, []dirEntry, error) {
	fi, err := os.Stat(dir)
	if err != nil {
		return 0, nil, err
	}
	des, err := os.ReadDir(dir)
	if err != nil {
		return 0, nil, err
	}
	ents := make([]dirEntry, 0, len(des))
	for _, de := range des {
		info, err := de.Info()
		if err != nil {
			continue // removed since ReadDir
		}
		ents = append(ents, dirEntry{name: de.Name(), ino: inode(info), dir: de.IsDir()})
	}
	return inode(fi), ents, nil
}

// Image writes into dst (an existing, empty directory) what Root holds
// after a power cut now: see Recorder. Bytes never made durable are zero,
// or with garbage set pseudo-random (seeded by seed), as a disk may return
// stale blocks. It freezes the Recorder first.
func (r *Recorder) Image(dst string, garbage bool, seed uint64) error {
	r.Freeze()
	fi, err := os.Stat(r.Root)
	if err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	return r.image(inode(fi), dst, garbage, rng)
}

func (r *Recorder) image(dirIno uint64, dst string, garbage bool, rng *rand.Rand) error {
	for _, e := range r.dirs[dirIno].ents {
		path := filepath.Join(dst, e.name)
		if e.dir {
			if err := os.Mkdir(path, 0o755); err != nil {
				return err
			}
			if err := r.image(e.ino, path, garbage, rng); err != nil {
				return err
			}
			continue
		}
		var b []byte
		if f := r.files[e.ino]; f != nil {
			b = make([]byte, f.size)
			for i := range b {
				switch {
				case i < len(f.ver) && f.ver[i] > 0:
					b[i] = f.data[i]
				case garbage:
					b[i] = byte(rng.Uint32())
				}
			}
		}
		if err := os.WriteFile(path, b, 0o644); err != nil {
			return err
		}
	}
	return nil
}
