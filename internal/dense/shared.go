package dense

import (
	"sync"
	"sync/atomic"
)

// Shared maps partition numbers (>= 0) to pointers, for tables read by
// many goroutines without a lock: a reader loads the block list, its
// block and the slot, all atomically. Blocks are added under a mutex by
// copying the (short) block list, never by changing one a reader holds.
type Shared[T any] struct {
	mu     sync.Mutex
	blocks atomic.Pointer[[]*[blockSize]atomic.Pointer[T]]
}

// Load returns partition p's pointer, nil if none was stored.
func (t *Shared[T]) Load(p int32) *T {
	bs := t.blocks.Load()
	b := int(p) / blockSize
	if bs == nil || b >= len(*bs) || (*bs)[b] == nil {
		return nil
	}
	return (*bs)[b][int(p)%blockSize].Load()
}

// LoadOrStore returns partition p's pointer, storing v first if there
// was none.
func (t *Shared[T]) LoadOrStore(p int32, v *T) *T {
	slot := t.slot(p)
	if slot.CompareAndSwap(nil, v) {
		return v
	}
	return slot.Load()
}

// slot returns partition p's slot, adding its block if needed.
func (t *Shared[T]) slot(p int32) *atomic.Pointer[T] {
	b, i := int(p)/blockSize, int(p)%blockSize
	if bs := t.blocks.Load(); bs != nil && b < len(*bs) && (*bs)[b] != nil {
		return &(*bs)[b][i]
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	var old []*[blockSize]atomic.Pointer[T]
	if bs := t.blocks.Load(); bs != nil {
		old = *bs
	}
	if b < len(old) && old[b] != nil {
		return &old[b][i]
	}
	grown := make([]*[blockSize]atomic.Pointer[T], max(len(old), b+1))
	copy(grown, old)
	grown[b] = new([blockSize]atomic.Pointer[T])
	t.blocks.Store(&grown)
	return &grown[b][i]
}
