package consumequeue

import (
	"fmt"
	"sync"
	"sync/atomic"
	"unsafe"
)

// Tails: entries of cold files written behind, by pwrite.
//
// A client producing round robin over thousands of partitions sends one
// record per partition per request, so the dispatcher appends one entry
// at a time to each queue, each in a page of its own file that it last
// touched thousands of entries ago. A store into such a page misses the
// caches and the TLB, and on the paravirtualized machine of
// docs/BENCHMARKS.md a page of a mapping costs a fault the first time a
// process touches it however it was made ready (MADV_POPULATE_WRITE
// included).
//
// So a file appended to after at least coldPuts appends to other files
// (the store counts them: a producer writing round robin over P
// partitions puts about P appends between two of a queue's, past the
// threshold at 10,000 partitions, under it at 1,000) puts
// its entries in a tail: up to tailBytes of encoded entries kept in
// memory, written to the file with one pwrite when full, and by Flush
// (and Close) before the file is synced, so that nothing a checkpoint
// covers is left in memory. The kernel writes them into the page cache
// through its own mapping of memory, which faults on nothing. A tail
// takes the appends that follow it while they fit; one that does not fit
// writes the tail out, and a hot file stores through its mapping as
// before: its page is in the caches, and a pwrite per tail would cost it
// more than the stores. Readers find an entry in the tail first
// (slotBytes), so the tail is the file's bytes as the stores would have
// left them.
//
// Measured (docs/BENCHMARKS.md, "Consume-queue tails written behind"):
// broker CPU over 2,000,000 records into 10,000 partitions whose queues
// all had files, three interleaved runs each, 1,006-1,115 ticks before,
// 749-829 after; over a first 1,000,000 (promotions included) 569-765
// against 515-559. At 1,000 partitions a threshold of 512, which put
// every append in a tail, cost more than it saved (251-274 ticks against
// 230-278); 4,096 leaves those queues storing through their mappings. In
// isolation (BenchmarkAppend/10000partitions, nothing else touching
// memory, no flush write-protecting the pages) the stores are cheaper
// than the tails: 253-315 ns an append against 322-353 (3,000,000
// appends, three interleaved runs).
//
// A tail that is lost (a crash) is like stores the write-back did not
// reach: the entries after the dispatcher's checkpoint are dispatched
// again. The file is grown to hold the tail's slots before they are
// taken (putRange), so a full disk fails the append as before and the
// pwrite never extends the file.

// tailBytes is a tail's size: 128 entries, a page.
const tailBytes = 128 * EntrySize

// maxTails bounds the memory tails hold (maxTails*tailBytes, 64 MiB); a
// file that finds none left stores through its mapping.
const maxTails = 16384

// coldPuts is how many appends to other files make a file cold.
const coldPuts = 4096

// tails counts a store's appends and the tails it holds, and keeps the
// buffers of tails written out for the next ones: a tail lives for
// thousands of appends, longer than a sync.Pool keeps anything, and a
// buffer made anew is fresh memory, which this machine faults in at
// 10-17 µs a page. So the buffers stay, as many as were ever in use at
// once (at most maxTails).
type tails struct {
	puts atomic.Uint64
	// cold is coldPuts; tests lower it.
	cold uint64

	mu   sync.Mutex
	n    int // tails holding entries
	free []*[tailBytes]byte
}

// coldSince counts an append and reports whether the file whose last
// append was counted at *last is cold; *last becomes this append.
func (b *tails) coldSince(last *uint64) bool {
	now := b.puts.Add(1)
	cold := now-*last > b.cold
	*last = now
	return cold
}

// take returns a buffer for a new tail, or nil when maxTails are in use.
func (b *tails) take() *[tailBytes]byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.n >= maxTails {
		return nil
	}
	b.n++
	if k := len(b.free); k > 0 {
		buf := b.free[k-1]
		b.free[k-1] = nil
		b.free = b.free[:k-1]
		return buf
	}
	return new([tailBytes]byte)
}

// give takes back the buffer of a tail written out or dropped.
func (b *tails) give(buf *[tailBytes]byte) {
	b.mu.Lock()
	b.free = append(b.free, buf)
	b.n--
	b.mu.Unlock()
}

// held returns how many tails hold entries.
func (b *tails) held() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.n
}

// tail is a file's entries not yet written to it: buf[:n] are the bytes
// of the slots from at (a byte offset in the file) on.
type tail struct {
	buf *[tailBytes]byte
	n   int
	at  int64
}

// bytes returns the tail's bytes of the slot at byte offset off, or nil.
func (t *tail) bytes(off int) []byte {
	if t.buf == nil || int64(off) < t.at || int64(off)+EntrySize > t.at+int64(t.n) {
		return nil
	}
	i := int(int64(off) - t.at)
	return t.buf[i : i+EntrySize : i+EntrySize]
}

// putTailLocked takes the n entries from slot on into the tail if that is
// where they go (see above) and reports whether it did; with ok false the
// caller stores them through the mapping, the tail written out first.
// Caller holds mu for writing and the file holds the slots.
func (f *file) putTailLocked(slot int, offset int64, n int, e Entry) (ok bool, err error) {
	cold := f.tails.coldSince(&f.lastPut)
	off := int64(HeaderSize + slot*EntrySize)
	t := &f.tail
	if t.buf != nil && (off != t.at+int64(t.n) || t.n+n*EntrySize > tailBytes) {
		if err := f.writeTailLocked(); err != nil {
			return false, err
		}
	}
	if t.buf == nil {
		if !cold || n*EntrySize > tailBytes {
			return false, nil
		}
		if t.buf = f.tails.take(); t.buf == nil {
			return false, nil
		}
		t.n, t.at = 0, off
	}
	for i := range n {
		encodeEntry(t.buf[t.n:t.n+EntrySize], offset+int64(i), e)
		t.n += EntrySize
	}
	if t.n == tailBytes {
		return true, f.writeTailLocked()
	}
	f.setTailNextLocked()
	return true, nil
}

// setTailNextLocked publishes where the tail's next entry goes; the tail
// holds a buffer with room left (a full one is written out). Caller holds
// mu for writing.
func (f *file) setTailNextLocked() {
	f.tailNext.Store(uintptr(unsafe.Pointer(&f.tail.buf[f.tail.n])))
}

// writeTailLocked writes the tail to the file with one pwrite and lets it
// go. (Copied into the mapping instead, a page's worth of entries for one
// miss, it saved nothing: broker CPU at 10,000 partitions 835-1,209 ticks
// against 833-1,191 before tails and 757-870 by pwrite, three interleaved
// runs each; what costs is touching the mapping's pages at all.) On
// failure the tail stays, to be written by the next append or Flush.
// Caller holds mu for writing.
func (f *file) writeTailLocked() error {
	t := &f.tail
	if t.buf == nil {
		return nil
	}
	if t.n > 0 {
		fd, err := f.open()
		if err != nil {
			return err
		}
		_, err = fd.WriteAt(t.buf[:t.n], t.at)
		if cerr := fd.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("consumequeue: write %s at %d: %w", f.path, t.at, err)
		}
	}
	f.dropTailLocked()
	return nil
}

// cutTailLocked drops the tail's slots from byte offset off on. Caller
// holds mu for writing.
func (f *file) cutTailLocked(off int64) {
	t := &f.tail
	if t.buf == nil || off >= t.at+int64(t.n) {
		return
	}
	if off <= t.at {
		f.dropTailLocked()
		return
	}
	t.n = int(off - t.at)
	f.setTailNextLocked()
}

// dropTailLocked lets the tail go unwritten. Caller holds mu for writing.
func (f *file) dropTailLocked() {
	t := &f.tail
	if t.buf == nil {
		return
	}
	f.tails.give(t.buf)
	*t = tail{}
	f.tailNext.Store(0)
}

// writeTail is writeTailLocked taking mu; a removed file has nothing to
// write.
func (f *file) writeTail() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.removed {
		return nil
	}
	return f.writeTailLocked()
}
