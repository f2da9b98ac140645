package consumequeue

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"

	"github.com/edsrzf/mmap-go"
	"golang.org/x/sys/unix"

	"github.com/unilog/unilog/internal/fileops"
)

// errRemoved tells a reader that the file went away (DeleteBefore,
// TruncateFrom, DeleteTopic or Close) between finding it and reading it.
var errRemoved = errors.New("consumequeue: file removed")

// file is one consume-queue file. It is mapped only while in use: mu
// guards the mapping, which readers copy entries out of under a read lock
// and which eviction, growth and removal replace under the write lock. No
// file descriptor is kept: it is closed as soon as the mapping exists.
type file struct {
	path string
	base int64
	epf  int
	lru  *lru
	ops  FileOps

	mu sync.RWMutex
	// addr and size publish f.m's first byte and length to Prefetch, which
	// takes no lock (a lock's atomic instruction would wait for the very
	// miss it is meant to overlap). Written under mu with f.m.
	addr atomic.Pointer[byte]
	size atomic.Int64
	// mapped is the file's mapping, at least mapLen(its length) long, and
	// growth past it extends it with mremap, which carries the page-table
	// entries of the pages already mapped along (no fault on them again,
	// no munmap and mmap). Mapping the full size (header+epf slots,
	// 9.6 MB) instead gave every mapped file a page table of its own,
	// 4 KiB of kernel memory (40 MB at 10,000 promoted partitions), which
	// a new file's first store also had to make; short mappings sit side
	// by side and share one. m is mapped cut to the view: the file's
	// length, or less where room allocated ahead (room.go) was not taken;
	// the only bytes ever accessed (past the end of the file a mapping
	// faults). Both are nil while unmapped.
	mapped mmap.MMap
	m      []byte
	// removed is set, under mu and sizeMu, before the file is unlinked.
	removed bool

	dirty atomic.Bool // written since the last msync
	// flushed is set by a flush that wrote the file back: the pages at its
	// tail are write-protected or unmapped since (unmapdirty.go), and the
	// next store maps them again in one call (remapTailLocked).
	flushed atomic.Bool

	// zeroed is where the zeros written ahead of the entries end; no
	// entry is at or past it (zeroahead.go). Guarded by mu.
	zeroed int64
	// stored counts the entries stored since the file was last clean
	// (unmapdirty.go): the first store after a flush took its dirty flag
	// starts it again. Guarded by mu.
	stored int
	// sizeMu orders the changes of the file's size on disk: growth by the
	// appender and by the room maker (room.go), which holds only sizeMu
	// while it allocates, and cuts. Taken after mu, never before it.
	sizeMu sync.Mutex
	// shrunk counts the times the file was cut shorter, so that room
	// allocated without mu is not taken for a file cut meanwhile. Guarded
	// by mu and sizeMu, read under either.
	shrunk uint64

	// tail holds entries written behind (tail.go), counted by tails;
	// lastPut is the tails' count of appends at the file's last. Guarded
	// by mu.
	tail    tail
	tails   *tails
	lastPut uint64
	// tailNext is the address in the tail's buffer of the slot after its
	// last, 0 without a tail: where a cold file's next entry goes, for
	// Queue.Prefetch. Set under mu.
	tailNext atomic.Uintptr

	// room makes the file's room ahead of its entries (room.go); ahead is
	// set while it is asked to. room is nil where nothing appends.
	room  *roomMaker
	ahead atomic.Bool
	// roomTo is where the room asked for ends. Guarded by mu.
	roomTo int64

	// lru bookkeeping; elem is guarded by lru.mu.
	elem     *lruElem
	listed   atomic.Bool
	lastMove atomic.Uint64
}

func (f *file) fullSize() int64 { return HeaderSize + int64(f.epf)*EntrySize }

// minMapLen is the shortest mapping of a file. Mappings sit next to each
// other, so one as long as its file could not grow in place: mremap moved
// it, and a move flushes the old range from every core's TLB: on the
// machine of docs/BENCHMARKS.md, at 1,000 partitions, the growths of 4
// and 8 KiB files (two a queue) had 0.05 s of mremap in the broker's
// samples, about 25 µs a growth. 64 KiB holds
// 2,047 entries, so a young queue's file grows four times before its
// mapping first moves, and 32 mappings still share a page table.
const minMapLen = 64 << 10

// mapLen is the length to map a file of size bytes at: minMapLen or size,
// whichever is longer, within the full size.
func (f *file) mapLen(size int64) int64 { return min(max(size, minMapLen), f.fullSize()) }

// slotBytes returns the bytes of slot in the tail (tail.go) or the
// mapping, or nil when the file is not (yet) that large. Caller holds mu
// and f.m != nil.
func (f *file) slotBytes(slot int) []byte {
	off := HeaderSize + slot*EntrySize
	if b := f.tail.bytes(off); b != nil {
		return b
	}
	if off+EntrySize > len(f.m) {
		return nil
	}
	return f.m[off : off+EntrySize : off+EntrySize]
}

// open opens the file for reading and writing, without the poller (see
// fileops.Open).
func (f *file) open() (*os.File, error) {
	fd, err := fileops.Open(f.path, os.O_RDWR, 0)
	if err != nil {
		return nil, fmt.Errorf("consumequeue: open %s: %w", f.path, err)
	}
	return fd, nil
}

// mapLocked maps the file and checks its header. Caller holds mu for writing.
func (f *file) mapLocked() error {
	if f.removed {
		return errRemoved
	}
	fd, err := f.open()
	if err != nil {
		return err
	}
	defer fd.Close()
	st, err := fd.Stat()
	if err != nil {
		return fmt.Errorf("consumequeue: stat %s: %w", f.path, err)
	}
	if st.Size() < HeaderSize || st.Size() > f.fullSize() {
		return fmt.Errorf("consumequeue: %s: size %d outside [%d, %d]: %w", f.path, st.Size(), HeaderSize, f.fullSize(), ErrCorrupt)
	}
	m, err := mmap.MapRegion(fd, int(f.mapLen(st.Size())), mmap.RDWR, 0, 0)
	if err != nil {
		return fmt.Errorf("consumequeue: mmap %s: %w", f.path, err)
	}
	if err := f.checkHeader(m[:st.Size()]); err != nil {
		_ = m.Unmap()
		return err
	}
	f.setMapping(m, st.Size(), st.Size())
	return nil
}

// setMapping installs a mapping, at least size bytes long, of a file size
// bytes long whose bytes from zeroed on hold no entry. Caller holds mu for
// writing.
func (f *file) setMapping(m mmap.MMap, size, zeroed int64) {
	f.mapped = m
	f.setView(size)
	f.zeroed = zeroed
	f.lru.mapped.Add(1)
}

func (f *file) checkHeader(b []byte) error {
	h, err := decodeHeader(b)
	if err != nil {
		return fmt.Errorf("consumequeue: %s: %w", f.path, err)
	}
	if h.Base != f.base || h.EntriesPerFile != f.epf {
		return fmt.Errorf("consumequeue: %s: header base %d with %d entries per file, want base %d with %d: %w",
			f.path, h.Base, h.EntriesPerFile, f.base, f.epf, ErrCorrupt)
	}
	return nil
}

// header returns the decoded header of a mapped file. Caller holds mu.
func (f *file) header() header {
	h, _ := decodeHeader(f.m)
	return h
}

// ensureMappedLocked maps the file if needed and reports whether it did.
// Caller holds mu for writing.
func (f *file) ensureMappedLocked() (bool, error) {
	if f.m != nil {
		return false, nil
	}
	if err := f.mapLocked(); err != nil {
		return false, err
	}
	return true, nil
}

// unmapLocked msyncs the mapping if it was written and unmaps it, so the
// data reaches the disk before the file can leave the dirty list unnoticed.
// Caller holds mu for writing.
func (f *file) unmapLocked(sync bool) error {
	if f.m == nil {
		return nil
	}
	var err error
	if sync && f.dirty.Swap(false) {
		f.unmapDirtyLocked()
		if err = f.ops.Msync(f.path, f.m, 0); err != nil {
			f.dirty.Store(true)
			err = fmt.Errorf("consumequeue: msync %s: %w", f.path, err)
		}
	}
	f.size.Store(0)
	f.addr.Store(nil)
	if uerr := f.mapped.Unmap(); uerr != nil && err == nil {
		err = fmt.Errorf("consumequeue: munmap %s: %w", f.path, uerr)
	}
	f.mapped, f.m = nil, nil
	f.lru.mapped.Add(-1)
	return err
}

// resizeLocked changes the file's size to size, extending the mapping to
// cover it; a shrunk file keeps its longer mapping, of which only the
// view is cut. Caller holds mu for writing and the file is mapped.
func (f *file) resizeLocked(size int64) error {
	switch have := int64(len(f.m)); {
	case size > have:
		if err := f.allocateTo(size); err != nil {
			return err
		}
		return f.extendLocked(size)
	case size < have:
		return f.shrinkLocked(size)
	}
	return nil
}

// allocateTo extends the file on disk to at least size bytes. Growth uses
// fallocate so that the blocks exist: a write through a mapping of a hole
// on a full disk is a SIGBUS, a failed fallocate is an error. It needs
// sizeMu only, not mu: the bytes it adds are past the view, where no
// store goes, and the file keeps at least the size it had.
func (f *file) allocateTo(size int64) error {
	f.sizeMu.Lock()
	defer f.sizeMu.Unlock()
	if f.removed {
		return errRemoved
	}
	fd, err := f.open()
	if err != nil {
		return err
	}
	defer fd.Close()
	if err := allocate(f.ops, fd, size); err != nil {
		return fmt.Errorf("consumequeue: grow %s to %d: %w", f.path, size, err)
	}
	return nil
}

// extendLocked makes the view size bytes long, for a file allocated to at
// least size. A failed mremap leaves the view as it was; the next growth
// allocates nothing new and tries the mremap again. Caller holds mu for
// writing and the file is mapped.
func (f *file) extendLocked(size int64) error {
	if size > int64(len(f.mapped)) {
		m, err := unix.Mremap(f.mapped, int(f.mapLen(size)), unix.MREMAP_MAYMOVE)
		if err != nil {
			return fmt.Errorf("consumequeue: mremap %s to %d: %w", f.path, size, err)
		}
		f.mapped = m
	}
	f.setView(size)
	return nil
}

// shrinkLocked cuts the file and its view to size. Caller holds mu for
// writing and the file is mapped.
func (f *file) shrinkLocked(size int64) error {
	fd, err := f.open()
	if err != nil {
		return err
	}
	defer fd.Close()
	f.sizeMu.Lock()
	defer f.sizeMu.Unlock()
	f.shrunk++
	if err := fd.Truncate(size); err != nil {
		return fmt.Errorf("consumequeue: truncate %s to %d: %w", f.path, size, err)
	}
	f.setView(size)
	f.zeroed = min(f.zeroed, size)
	return nil
}

// setView cuts f.m to the first size bytes of the mapping and publishes
// it to Prefetch. Caller holds mu for writing.
func (f *file) setView(size int64) {
	f.m = f.mapped[:size:size]
	f.addr.Store(&f.m[0])
	f.size.Store(size)
}

// allocate extends fd to size with real blocks. On a file system without
// fallocate the new bytes are written as zeros instead: a sparse ftruncate
// would leave a hole, and a store into a mapped hole on a full disk is a
// SIGBUS that kills the process, where a failed write is an error here.
func allocate(ops FileOps, fd *os.File, size int64) error {
	err := ops.Fallocate(fd, size)
	if errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.ENOSYS) {
		err = writeZeros(fd, size)
	}
	if errors.Is(err, unix.ENOSPC) || errors.Is(err, unix.EDQUOT) || errors.Is(err, unix.EFBIG) {
		return fmt.Errorf("%w: %w", ErrDiskFull, err)
	}
	return err
}

// zeroChunk is the largest write of writeZeros (files grow by doubling
// from 4 KiB to 9.6 MB, so most growths are one write) and holds the
// zeros of zeroAheadLocked.
var zeroChunk = make([]byte, 1<<20)

// writeZeros extends fd to size by writing zeros after its current end.
// A failed write (full disk) cuts the file back to its old size, which
// its mapping still has.
func writeZeros(fd *os.File, size int64) error {
	st, err := fd.Stat()
	if err != nil {
		return err
	}
	for off := st.Size(); off < size; {
		n, err := fd.WriteAt(zeroChunk[:min(int64(len(zeroChunk)), size-off)], off)
		if err != nil {
			_ = fd.Truncate(st.Size())
			return err
		}
		off += int64(n)
	}
	return nil
}

// read copies the entry in slot out of the mapping, mapping the file first
// if it is not mapped. ok is false for a slot that holds no valid entry.
func (f *file) read(slot int, off int64) (e Entry, ok bool, err error) {
	f.mu.RLock()
	if f.m != nil {
		e, ok, err = f.decode(slot, off)
		f.mu.RUnlock()
		f.lru.use(f)
		return e, ok, err
	}
	f.mu.RUnlock()

	f.mu.Lock()
	if _, err := f.ensureMappedLocked(); err != nil {
		f.mu.Unlock()
		return Entry{}, false, err
	}
	e, ok, err = f.decode(slot, off)
	f.mu.Unlock()
	f.lru.use(f)
	return e, ok, err
}

// decode copies the entry in slot out of the mapping, turning a fault (a
// media error, or the file truncated under the store) into ErrIO. Caller
// holds mu and the file is mapped.
func (f *file) decode(slot int, off int64) (e Entry, ok bool, err error) {
	err = guard(f.path, func() { e, ok = decodeEntry(f.slotBytes(slot), off) })
	return e, ok, err
}

// guard runs access to the mapping of the file at path under
// fileops.Guard, wrapping a fault in ErrIO.
func guard(path string, access func()) error {
	if err := fileops.Guard(access); err != nil {
		return fmt.Errorf("consumequeue: %s: %w: %w", path, ErrIO, err)
	}
	return nil
}

// lock takes the write lock with the file mapped. The caller must call
// unlock, which also records the use with the LRU.
func (f *file) lock() error {
	f.mu.Lock()
	if _, err := f.ensureMappedLocked(); err != nil {
		f.mu.Unlock()
		return err
	}
	return nil
}

func (f *file) unlock() {
	f.mu.Unlock()
	f.lru.use(f)
}

// markDirty records a write so that the next Flush syncs this file, and
// reports whether the file was clean until this write.
func (f *file) markDirty() (wasClean bool) {
	if !f.dirty.Load() && f.dirty.CompareAndSwap(false, true) {
		f.lru.addDirty(f)
		return true
	}
	return false
}

// remove unmaps the file for good; later reads get errRemoved. With sync
// the mapping is msynced first (Close); files about to be deleted are not.
// removed is set before the file leaves the LRU list so that a concurrent
// use cannot put it back.
func (f *file) remove(sync bool) error {
	f.mu.Lock()
	var err error
	if sync {
		err = f.writeTailLocked()
	}
	f.dropTailLocked()
	f.sizeMu.Lock()
	f.removed = true
	f.sizeMu.Unlock()
	err = errors.Join(err, f.unmapLocked(sync))
	f.mu.Unlock()
	f.lru.remove(f)
	return err
}

// put writes e for offset into slot, growing the file to hold it.
func (f *file) put(slot int, offset int64, e Entry) error {
	_, err := f.putRange(slot, offset, 1, e)
	return err
}

// putRange writes e for the n offsets from offset on into the n slots
// from slot on, growing the file to hold them, and returns how many it
// wrote (all n unless err). A batch's entries take one lock, one fault
// guard, one growth check and one LRU touch here, not one each: per entry
// those cost about a third of an entry (BenchmarkAppend/range-10 and
// range-1000, medians of six interleaved runs: 141 and 139 ns an entry
// stored one by one, 95 and 94 ns as a run).
func (f *file) putRange(slot int, offset int64, n int, e Entry) (written int, err error) {
	if err := f.lock(); err != nil {
		return 0, err
	}
	defer f.unlock()
	if want := sizeFor(slot+n-1, f.epf); int64(len(f.m)) < want {
		if err := f.resizeLocked(want); err != nil {
			return 0, err
		}
	}
	if ok, err := f.putTailLocked(slot, offset, n, e); ok || err != nil {
		if ok {
			written = n
			f.markWrittenLocked(slot, written)
		}
		return written, err
	}
	if f.flushed.Load() && f.flushed.Swap(false) {
		f.remapTailLocked(slot)
	}
	err = guard(f.path, func() {
		for ; written < n; written++ {
			f.zeroAheadLocked(int64(HeaderSize + (slot+written+1)*EntrySize))
			encodeEntry(f.slotBytes(slot+written), offset+int64(written), e)
		}
	})
	if written > 0 {
		f.markWrittenLocked(slot, written)
	}
	return written, err
}

// markWrittenLocked records that written entries were put from slot on.
// Caller holds mu for writing.
func (f *file) markWrittenLocked(slot, written int) {
	if f.markDirty() {
		f.stored = 0
	}
	f.stored += written
	f.askRoomLocked(int64(HeaderSize + (slot+written)*EntrySize))
}
