package broker

import (
	"slices"
	"sync"

	"github.com/valyala/bytebufferpool"
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
// partitions, most of it faulting in and zeroing memory the runtime had
// just given back to the kernel.
//
// get hands out a kept frame only if it is at most 4x (plus 64 KiB) the
// request it is for: a frame that is not recycled (recycleFrame) goes to
// the garbage collector, and a metadata request should not take a produce
// frame with it. A frame taken before its bytes arrive allocates nothing,
// so the pool does not weaken readFrameBody's rule that an announced size
// allocates nothing ahead of its bytes.
type framePool struct {
	mu    sync.Mutex
	free  []*bytebufferpool.ByteBuffer // by capacity, smallest first
	held  int64                        // capacity of free
	limit int64                        // most held; a frame larger than a quarter is not kept
}

// maxKeptFrames bounds what the broker keeps: enough for a few requests
// in flight on each of a few producers' connections.
const maxKeptFrames = 64 << 20

// frameSlack is what get allows a kept frame beyond 4x the request.
const frameSlack = 64 << 10

func newFramePool(limit int64) *framePool {
	return &framePool{limit: limit}
}

// get returns an empty frame for an n-byte request: the smallest kept
// frame that holds it and is not far larger, or a new one.
func (p *framePool) get(n int) *bytebufferpool.ByteBuffer {
	p.mu.Lock()
	defer p.mu.Unlock()
	i, _ := slices.BinarySearchFunc(p.free, n, func(f *bytebufferpool.ByteBuffer, n int) int {
		return cap(f.B) - n
	})
	if i == len(p.free) || cap(p.free[i].B) > 4*n+frameSlack {
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
	if c == 0 || c > p.limit/4 {
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
	i, _ := slices.BinarySearchFunc(p.free, int(c), func(f *bytebufferpool.ByteBuffer, n int) int {
		return cap(f.B) - n
	})
	p.free = slices.Insert(p.free, i, f)
	p.held += c
}
