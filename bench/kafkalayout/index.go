package kafkalayout

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"sort"
	"sync"

	"golang.org/x/sys/unix"
)

const (
	offsetEntrySize = 8  // int32 relative offset, int32 position
	timeEntrySize   = 12 // int64 timestamp, int32 relative offset
)

// mappedIndex is a fixed-entry-size index file mapped read-write, the common
// part of Kafka's AbstractIndex. The file descriptor is closed as soon as the
// file is mapped. mu guards the mapping against a concurrent flush while
// the index is resized.
type mappedIndex struct {
	mu        sync.Mutex
	path      string
	entrySize int
	random    bool   // MADV_RANDOM on every mapping
	data      []byte // the whole mapping; nil when the file is empty
	entries   int
}

// openIndex maps path, creating it when absent, resized to size bytes
// (rounded down to whole entries). entries is set by the caller's validation.
func openIndex(path string, entrySize, size int, random bool) (*mappedIndex, error) {
	ix := &mappedIndex{path: path, entrySize: entrySize, random: random}
	if err := ix.remap(size); err != nil {
		return nil, err
	}
	return ix, nil
}

// remap sets the file's length to size (a sparse ftruncate, as Kafka's
// RandomAccessFile.setLength) and maps it again. The caller holds mu or owns
// the index exclusively.
func (ix *mappedIndex) remap(size int) error {
	size -= size % ix.entrySize
	if ix.data != nil {
		if err := unix.Munmap(ix.data); err != nil {
			return fmt.Errorf("kafkalayout: munmap %s: %w", ix.path, err)
		}
		ix.data = nil
	}
	f, err := os.OpenFile(ix.path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("kafkalayout: open index: %w", err)
	}
	defer f.Close()
	if err := f.Truncate(int64(size)); err != nil {
		return fmt.Errorf("kafkalayout: resize %s: %w", ix.path, err)
	}
	if size == 0 {
		return nil
	}
	data, err := unix.Mmap(int(f.Fd()), 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		if errors.Is(err, unix.ENOMEM) {
			return fmt.Errorf("kafkalayout: mmap %s: %w (map count: vm.max_map_count)", ix.path, err)
		}
		return fmt.Errorf("kafkalayout: mmap %s: %w", ix.path, err)
	}
	ix.data = data
	if ix.random {
		if err := unix.Madvise(data, unix.MADV_RANDOM); err != nil {
			return fmt.Errorf("kafkalayout: madvise %s: %w", ix.path, err)
		}
	}
	return nil
}

func (ix *mappedIndex) maxEntries() int { return len(ix.data) / ix.entrySize }

func (ix *mappedIndex) full() bool { return ix.entries >= ix.maxEntries() }

func (ix *mappedIndex) entry(i int) []byte {
	return ix.data[i*ix.entrySize : (i+1)*ix.entrySize]
}

// trim shrinks the file to its used entries, as Kafka's trimToValidSize does
// when a segment stops being active or the log closes.
func (ix *mappedIndex) trim() error {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	return ix.remap(ix.entries * ix.entrySize)
}

// grow maps the file at size again so that it can take new entries, as Kafka
// does with the active segment's indexes when a log is loaded.
func (ix *mappedIndex) grow(size int) error {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	return ix.remap(size)
}

// flush msyncs the used part of the mapping, as MappedByteBuffer.force.
func (ix *mappedIndex) flush() error {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	n := ix.entries * ix.entrySize
	if n == 0 {
		return nil
	}
	if err := unix.Msync(ix.data[:pageCeil(n, len(ix.data))], unix.MS_SYNC); err != nil {
		return fmt.Errorf("kafkalayout: msync %s: %w", ix.path, err)
	}
	return nil
}

func (ix *mappedIndex) close() error {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if ix.data == nil {
		return nil
	}
	err := unix.Munmap(ix.data)
	ix.data = nil
	if err != nil {
		return fmt.Errorf("kafkalayout: munmap %s: %w", ix.path, err)
	}
	return nil
}

func pageCeil(n, limit int) int {
	page := os.Getpagesize()
	n = (n + page - 1) / page * page
	return min(n, limit)
}

// offsetIndex is Kafka's OffsetIndex: sparse (relative offset, position) pairs.
type offsetIndex struct{ *mappedIndex }

func (ix offsetIndex) at(i int) (rel int32, pos int32) {
	e := ix.entry(i)
	return int32(binary.BigEndian.Uint32(e[0:4])), int32(binary.BigEndian.Uint32(e[4:8]))
}

func (ix offsetIndex) append(rel, pos int32) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	e := ix.entry(ix.entries)
	binary.BigEndian.PutUint32(e[0:4], uint32(rel))
	binary.BigEndian.PutUint32(e[4:8], uint32(pos))
	ix.entries++
}

// lookup returns the position of the last entry whose offset is <= rel, or
// 0 when there is none: the place a scan for rel starts from.
func (ix offsetIndex) lookup(rel int32) int32 {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	i := sort.Search(ix.entries, func(i int) bool {
		r, _ := ix.at(i)
		return r > rel
	})
	if i == 0 {
		return 0
	}
	_, pos := ix.at(i - 1)
	return pos
}

// usedPrefix counts the leading entries that can be real: the first record of
// a segment is never indexed and both fields strictly increase, so the first
// entry breaking that marks the end of what was written.
func (ix offsetIndex) usedPrefix() int {
	n := 0
	var lastRel, lastPos int32 = -1, 0
	for n < ix.maxEntries() {
		rel, pos := ix.at(n)
		if pos <= lastPos || rel <= lastRel {
			break
		}
		lastRel, lastPos = rel, pos
		n++
	}
	return n
}

// timeIndex is Kafka's TimeIndex: (largest timestamp so far, relative offset).
type timeIndex struct{ *mappedIndex }

func (ix timeIndex) at(i int) (ts int64, rel int32) {
	e := ix.entry(i)
	return int64(binary.BigEndian.Uint64(e[0:8])), int32(binary.BigEndian.Uint32(e[8:12]))
}

// maybeAppend adds an entry only when ts grew, as TimeIndex.maybeAppend. The
// roll-time entry may use the slot kept back for it (skipFullCheck in Kafka).
func (ix timeIndex) maybeAppend(ts int64, rel int32) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if ix.entries >= ix.maxEntries() {
		return
	}
	if ix.entries > 0 {
		if last, _ := ix.at(ix.entries - 1); ts <= last {
			return
		}
	}
	e := ix.entry(ix.entries)
	binary.BigEndian.PutUint64(e[0:8], uint64(ts))
	binary.BigEndian.PutUint32(e[8:12], uint32(rel))
	ix.entries++
}

// usedPrefix counts leading entries with strictly growing timestamps and
// non-decreasing offsets that are at most maxRel.
func (ix timeIndex) usedPrefix(maxRel int32) int {
	n := 0
	var lastTS int64
	var lastRel int32 = -1
	for n < ix.maxEntries() {
		ts, rel := ix.at(n)
		if ts <= lastTS || rel < lastRel || rel > maxRel {
			break
		}
		lastTS, lastRel = ts, rel
		n++
	}
	return n
}
