// Package dense holds per-partition values in tables indexed by partition
// number, for the maps that would otherwise hold an entry per partition
// keyed by topic and partition: at 1,000,000 partitions such a map costs
// 100-120 bytes and often a heap object per partition, which the garbage
// collector scans; a table costs the value's size and one object per block.
package dense

import "iter"

// blockSize is how many partitions one block holds: a 100,000-partition
// topic is 391 blocks.
const blockSize = 256

// Table maps partition numbers (>= 0) to values of T, the zero T for a
// partition never set. Blocks are allocated as partitions are touched and
// never move, so a pointer from Ptr stays valid while the table grows. It
// is not safe for concurrent use.
type Table[T any] struct {
	blocks []*[blockSize]T
}

// Ptr returns the value of partition p, allocating its block if needed.
func (t *Table[T]) Ptr(p int32) *T {
	b, i := int(p)/blockSize, int(p)%blockSize
	if b >= len(t.blocks) {
		t.blocks = append(t.blocks, make([]*[blockSize]T, b+1-len(t.blocks))...)
	}
	if t.blocks[b] == nil {
		t.blocks[b] = new([blockSize]T)
	}
	return &t.blocks[b][i]
}

// Get returns the value of partition p, the zero T if it was never set.
func (t *Table[T]) Get(p int32) T {
	b, i := int(p)/blockSize, int(p)%blockSize
	if b >= len(t.blocks) || t.blocks[b] == nil {
		var zero T
		return zero
	}
	return t.blocks[b][i]
}

// All yields the partition number and value pointer of every slot in the
// allocated blocks, in partition order: the zero T for a partition never
// set, as Get returns. The table must not grow while it runs.
func (t *Table[T]) All() iter.Seq2[int32, *T] {
	return func(yield func(int32, *T) bool) {
		for b, blk := range t.blocks {
			if blk == nil {
				continue
			}
			for i := range blk {
				if !yield(int32(b*blockSize+i), &blk[i]) {
					return
				}
			}
		}
	}
}
