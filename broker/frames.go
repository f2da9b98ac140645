package broker

import (
	"math/bits"
	"slices"
	"sync"
	"unsafe"

	"github.com/valyala/bytebufferpool"
	"golang.org/x/sys/unix"
)

// framePool keeps handled request frames for the next requests, up to a
// fixed number of bytes, across garbage collections.
//
// A sync.Pool (bytebufferpool's) is emptied by every other collection,
// and a produce request's frame is large: 1 MB at one partition, 2-3 MB
// from a client writing to 10,000. Measured in a broker under `bench
// produce`, a quarter of those frames (104 of 467 at 10,000 partitions)
// found the pool empty and grew from nothing, by doubling, into fresh
// heap: growFrame was 8% of the broker's CPU at 1 and at 10,000
// partitions (most likely faulting in and zeroing memory the runtime had
// given back to the kernel).
//
// Only frames larger than minKeptFrame are kept here, so the list holds
// at most limit/minKeptFrame of them and its inserts stay short however
// many connections fetch; smaller frames (fetches, metadata), cheap to
// make again, stay in bytebufferpool. A request whose frame comes back
// (recycleFrame: Produce, Fetch) takes the smallest kept frame that holds
// it, however large. Any other takes one only if it is at most 4x (plus
// minKeptFrame) its size: its frame goes to the garbage collector, and a
// small request should not take a produce frame with it. (With the 4x
// rule for produces too, 0.1-1 MB produces to 10,000 partitions after
// 4.5 MB ones each grew a frame of their own, in fresh heap, which this
// virtual machine faults in at 17 µs a page.) A frame taken
// before its bytes arrive allocates nothing, so the pool does not weaken
// readFrameBody's rule that an announced size allocates nothing ahead of
// its bytes.
type framePool struct {
	mu    sync.Mutex
	free  []*bytebufferpool.ByteBuffer // by capacity, smallest first
	held  int64                        // capacity of free
	limit int64                        // most held; a frame larger than a quarter is not kept
}

// maxKeptFrames bounds what the broker keeps: enough for a few requests
// in flight on each of a few producers' connections.
const maxKeptFrames = 64 << 20

// minKeptFrame is the smallest frame kept in the list, and what get
// allows a kept frame beyond 4x the request.
const minKeptFrame = 64 << 10

// smallFrames holds the frames below minKeptFrame.
var smallFrames bytebufferpool.Pool

func newFramePool(limit int64) *framePool {
	return &framePool{limit: limit}
}

// get returns an empty frame for an n-byte request: the smallest kept
// frame that holds it and, unless the frame comes back (back), is not far
// larger; or a new one.
func (p *framePool) get(n int, back bool) *bytebufferpool.ByteBuffer {
	if n <= minKeptFrame {
		f := smallFrames.Get()
		f.B = f.B[:0]
		return f
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	i := p.search(n)
	if i == len(p.free) || !back && cap(p.free[i].B) > 4*n+minKeptFrame {
		return &bytebufferpool.ByteBuffer{}
	}
	f := p.free[i]
	p.free = slices.Delete(p.free, i, i+1)
	p.held -= int64(cap(f.B))
	f.B = f.B[:0]
	return f
}

// put keeps f for later requests, making room by dropping smaller frames;
// a frame that does not fit is left to the garbage collector.
func (p *framePool) put(f *bytebufferpool.ByteBuffer) {
	c := int64(cap(f.B))
	switch {
	case c <= minKeptFrame:
		// growFrame makes a request of 32-64 KiB a frame of 64 KiB: it
		// goes where such requests take their frames from. Kept in the
		// list, where only larger requests look, every such frame stayed
		// there unused, up to the list's 64 MiB.
		smallFrames.Put(f)
		return
	case c > p.limit/4:
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for p.held+c > p.limit && len(p.free) > 0 && int64(cap(p.free[0].B)) < c {
		p.held -= int64(cap(p.free[0].B))
		p.free = slices.Delete(p.free, 0, 1)
	}
	if p.held+c > p.limit {
		return
	}
	p.free = slices.Insert(p.free, p.search(int(c)), f)
	p.held += c
}

// search is where a frame of capacity n goes in free; mu held.
func (p *framePool) search(n int) int {
	i, _ := slices.BinarySearchFunc(p.free, n, func(f *bytebufferpool.ByteBuffer, n int) int {
		return cap(f.B) - n
	})
	return i
}

// growFrame makes room for k more bytes of an n-byte frame: a new frame of
// the next power of two that holds them. k is what the read buffer holds,
// or one byte ahead of a read into the frame, so the frame is at most
// twice what has arrived (readFrameBody's rule).
//
// Powers of two because frames are kept (framePool): a produce request's
// size varies a little from one to the next (1,000,012 bytes of batch at
// most from franz-go at one partition), and a kept frame grown to the
// exact size of one request does not hold the next, slightly larger one,
// which then grew a frame of its own from nothing. One size class per
// doubling lets a kept frame serve every request of its class.
//
// The pages the request will fill are made in one madvise call
// (MADV_POPULATE_WRITE) before the copy rather than by a fault a page. A
// fresh broker's frames grow into heap no one has touched: over its first
// 300,000 records at one partition, 94% of the broker's 7,800 page faults
// were the frames' (perf record -e page-faults), and on the virtual
// machine of docs/BENCHMARKS.md the first store into a fresh page costs
// 10-16 µs (bench/unitcost.go), against about 5 when the call made the
// page (BenchmarkGrowFrame).
func growFrame(frame *bytebufferpool.ByteBuffer, k, n int) {
	have := len(frame.B)
	if have+k <= cap(frame.B) {
		return
	}
	c := 1 << bits.Len(uint(have+k-1))
	b := make([]byte, have, c)
	// Smaller frames live in bytebufferpool, mostly in heap touched
	// before, where the call would find its pages made.
	if fill := min(c, n); fill >= minKeptFrame {
		populate(b[:fill])
	}
	copy(b, frame.B)
	frame.B = b
}

var pageSize = uintptr(unix.Getpagesize())

// populate makes the whole pages of b present and writable, as a store
// into each would, without changing a byte. Best effort: a kernel
// without MADV_POPULATE_WRITE (before Linux 5.14) leaves them to the
// faults.
func populate(b []byte) {
	p := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	from := int((p+pageSize-1)&^(pageSize-1) - p)
	if to := from + (len(b)-from)&^int(pageSize-1); from < to {
		_ = unix.Madvise(b[from:to], unix.MADV_POPULATE_WRITE)
	}
}
