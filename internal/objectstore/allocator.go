package objectstore

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/google/btree"
)

// Alignment is the alignment of every block start and size the Allocator
// hands out: one cache line, so that objects never share a line and
// float64/int64 views of them are always aligned.
const Alignment = 64

// block is a free range of the arena.
type block struct {
	off, size uint64
}

func bySizeLess(a, b block) bool {
	if a.size != b.size {
		return a.size < b.size
	}
	return a.off < b.off
}

func byOffsetLess(a, b block) bool { return a.off < b.off }

// Allocator places blocks inside [0, capacity). It is best fit over the free
// blocks (the smallest free block that fits, lowest offset among equals),
// freed blocks coalesce with free neighbours, and alloc and free are
// O(log n) in the number of free blocks. It does no I/O and is not safe for
// concurrent use: the store actor owns it.
type Allocator struct {
	capacity uint64
	used     uint64
	// free blocks, indexed twice: by (size, offset) for best fit and by
	// offset for coalescing.
	bySize   *btree.BTreeG[block]
	byOffset *btree.BTreeG[block]
	// allocated blocks: offset → aligned size.
	allocated map[uint64]uint64
}

const btreeDegree = 32

// NewAllocator returns an allocator over [0, capacity). The capacity is
// rounded down to a multiple of Alignment; Capacity reports the result.
func NewAllocator(capacity uint64) *Allocator {
	capacity &^= Alignment - 1
	a := &Allocator{
		capacity:  capacity,
		bySize:    btree.NewG(btreeDegree, bySizeLess),
		byOffset:  btree.NewG(btreeDegree, byOffsetLess),
		allocated: make(map[uint64]uint64),
	}
	if capacity > 0 {
		a.insertFree(block{0, capacity})
	}
	return a
}

// BlockSize is the number of bytes an allocation of size bytes occupies:
// size rounded up to Alignment, and at least Alignment (zero-size objects
// still get a block, so that every object has a distinct offset). It returns
// 0 when the rounded size would overflow.
func BlockSize(size uint64) uint64 {
	if size == 0 {
		return Alignment
	}
	if size > ^uint64(0)-(Alignment-1) {
		return 0
	}
	return (size + Alignment - 1) &^ (Alignment - 1)
}

// Alloc reserves a block for size bytes and returns its offset, or ok=false
// when no free block is large enough.
func (a *Allocator) Alloc(size uint64) (offset uint64, ok bool) {
	need := BlockSize(size)
	if need == 0 || need > a.capacity-a.used {
		return 0, false
	}
	var found block
	a.bySize.AscendGreaterOrEqual(block{size: need}, func(b block) bool {
		found, ok = b, true
		return false
	})
	if !ok {
		return 0, false
	}
	a.removeFree(found)
	if rest := found.size - need; rest > 0 {
		a.insertFree(block{found.off + need, rest})
	}
	a.allocated[found.off] = need
	a.used += need
	return found.off, true
}

// Free returns the block at offset to the free space, merging it with free
// neighbours. Freeing an offset that is not allocated (a double free or a
// stray offset) returns an error, and panics in invariants builds.
func (a *Allocator) Free(offset uint64) error {
	size, ok := a.allocated[offset]
	if !ok {
		err := fmt.Errorf("objectstore: free of unallocated offset %d", offset)
		if invariantsEnabled {
			panic(err)
		}
		return err
	}
	delete(a.allocated, offset)
	a.used -= size
	b := block{offset, size}
	// Merge with the free block just before, if it ends where b starts.
	a.byOffset.DescendLessOrEqual(block{off: offset}, func(prev block) bool {
		if prev.off+prev.size == b.off {
			a.removeFree(prev)
			b = block{prev.off, prev.size + b.size}
		}
		return false
	})
	// Merge with the free block just after, if it starts where b ends.
	if next, ok := a.byOffset.Get(block{off: b.off + b.size}); ok {
		a.removeFree(next)
		b.size += next.size
	}
	a.insertFree(b)
	return nil
}

// SizeOf returns the aligned size of the allocated block at offset.
func (a *Allocator) SizeOf(offset uint64) (uint64, bool) {
	size, ok := a.allocated[offset]
	return size, ok
}

// Used returns the bytes in allocated blocks (aligned sizes).
func (a *Allocator) Used() uint64 { return a.used }

// Capacity returns the usable size, a multiple of Alignment.
func (a *Allocator) Capacity() uint64 { return a.capacity }

// LargestFree returns the size of the largest free block: the largest
// allocation that would succeed now.
func (a *Allocator) LargestFree() uint64 {
	b, ok := a.bySize.Max()
	if !ok {
		return 0
	}
	return b.size
}

// FreeBlocks returns the number of free blocks, a measure of fragmentation.
func (a *Allocator) FreeBlocks() int { return a.byOffset.Len() }

// Allocated returns the number of allocated blocks.
func (a *Allocator) Allocated() int { return len(a.allocated) }

func (a *Allocator) insertFree(b block) {
	a.bySize.ReplaceOrInsert(b)
	a.byOffset.ReplaceOrInsert(b)
}

func (a *Allocator) removeFree(b block) {
	a.bySize.Delete(b)
	a.byOffset.Delete(b)
}

// check verifies the allocator's structure: free and allocated blocks tile
// [0, capacity) without overlap, everything is aligned, free neighbours are
// merged and used matches the allocated blocks. It is O(n log n) and meant
// for tests and invariants builds.
func (a *Allocator) check() error {
	if a.bySize.Len() != a.byOffset.Len() {
		return fmt.Errorf("free indexes disagree: %d by size, %d by offset", a.bySize.Len(), a.byOffset.Len())
	}
	type span struct {
		off, size uint64
		free      bool
	}
	spans := make([]span, 0, a.byOffset.Len()+len(a.allocated))
	var free, used uint64
	a.byOffset.Ascend(func(b block) bool {
		spans = append(spans, span{b.off, b.size, true})
		free += b.size
		return true
	})
	for off, size := range a.allocated {
		spans = append(spans, span{off, size, false})
		used += size
	}
	slices.SortFunc(spans, func(x, y span) int { return cmp.Compare(x.off, y.off) })
	if used != a.used {
		return fmt.Errorf("used %d, allocated blocks sum to %d", a.used, used)
	}
	if used+free != a.capacity {
		return fmt.Errorf("used %d + free %d != capacity %d", used, free, a.capacity)
	}
	var at uint64
	for i, s := range spans {
		if s.off%Alignment != 0 || s.size%Alignment != 0 || s.size == 0 {
			return fmt.Errorf("block [%d,+%d) not aligned or empty", s.off, s.size)
		}
		if s.off != at {
			return fmt.Errorf("block at %d, expected %d (gap or overlap)", s.off, at)
		}
		if s.free {
			if !a.bySize.Has(block{s.off, s.size}) {
				return fmt.Errorf("free block [%d,+%d) missing from size index", s.off, s.size)
			}
			if i > 0 && spans[i-1].free {
				return fmt.Errorf("free blocks at %d and %d not coalesced", spans[i-1].off, s.off)
			}
		}
		at = s.off + s.size
	}
	if at != a.capacity {
		return fmt.Errorf("blocks end at %d, capacity %d", at, a.capacity)
	}
	return nil
}
