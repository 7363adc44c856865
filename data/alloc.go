package data

import (
	"fmt"
	"math/bits"
	"os"
	"sync"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Allocator returns the Arrow allocator Datasets' tasks build their
// columns with: it recycles freed buffers instead of leaving them to the
// collector, so a worker that reads and transforms batch after batch
// reuses the same memory rather than allocating (and collecting)
// gigabytes of it. Buffers return to it when their arrays are released
// (Arrow's reference counts), so code that uses it must keep Arrow's
// rule: never touch an array after releasing it, and Retain what is kept.
// A program of its own may use it too (the dataset sample's one-goroutine
// baselines do, so both sides run the same kernels on the same memory).
//
// Setting ATOLL_DATA_CHECK_FREED=1 (EnvCheckFreed) in the environment of
// the driver and its workers makes it fill freed buffers with 0xDB and
// panic on a buffer freed twice, so that a use after release shows as
// wrong values in tests rather than going unseen.
func Allocator() memory.Allocator { return arrowPool }

var arrowPool = &poolAllocator{}

// EnvCheckFreed names the environment variable that turns the pool's
// checks on ("1"); it is read when the pool is first used.
const EnvCheckFreed = "ATOLL_DATA_CHECK_FREED"

// poolAllocator keeps freed buffers of 4 KiB to 4 MiB in power-of-two
// size classes, at most poolBytes of them in all: a buffer freed past
// that is left to the collector. A smaller buffer takes one of 4 KiB; a
// larger one comes from Go's allocator and is left to the collector too
// (it would waste up to half its class). The bound is what the pool can add to a
// process's memory: about one task's buffers of a read-filter-aggregate
// pipeline over 256K-row batches (2 MiB per int64 column), which the
// next task reuses, while a join's one-off tables pass through.
type poolAllocator struct {
	mu   sync.Mutex
	free [maxClass - minClass + 1][]unsafe.Pointer
	held int // bytes in free
	// limit bounds held (poolBytes; tests make it smaller).
	limit int
	// check: poison freed buffers and catch double frees (freed holds
	// the address of every buffer in a pool); read from the environment
	// on first use.
	once  sync.Once
	check bool
	freed sync.Map
}

// poolBytes bounds the freed buffers a process's pool keeps.
const poolBytes = 64 << 20

const (
	minClass = 12 // 4 KiB
	maxClass = 22 // 4 MiB
	// poison fills freed buffers in check mode.
	poison = 0xDB
)

var goAlloc = memory.NewGoAllocator()

func (p *poolAllocator) checking() bool {
	p.once.Do(func() { p.check = p.check || os.Getenv(EnvCheckFreed) == "1" })
	return p.check
}

// ReleaseBuffers drops the freed buffers Allocator keeps for reuse in
// this process (up to 64 MiB), leaving them to the collector: a program
// that ran Datasets' kernels in its own process (a baseline, a one-off
// computation with Allocator) and moves on to other work calls it, with
// debug.FreeOSMemory after to give the memory back to the system at
// once. Buffers freed afterwards are kept again.
func ReleaseBuffers() { arrowPool.release() }

// release empties the free lists.
func (p *poolAllocator) release() {
	check := p.checking()
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.free {
		if check {
			for _, ptr := range p.free[c] {
				p.freed.Delete(ptr)
			}
		}
		clear(p.free[c])
		p.free[c] = nil
	}
	p.held = 0
}

// take pops a freed buffer of class c, or returns nil.
func (p *poolAllocator) take(c int) unsafe.Pointer {
	p.mu.Lock()
	defer p.mu.Unlock()
	l := p.free[c-minClass]
	if len(l) == 0 {
		return nil
	}
	ptr := l[len(l)-1]
	l[len(l)-1] = nil
	p.free[c-minClass] = l[:len(l)-1]
	p.held -= 1 << c
	return ptr
}

// keep pushes a freed buffer of class c, unless the pool is full.
func (p *poolAllocator) keep(c int, ptr unsafe.Pointer) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	limit := p.limit
	if limit == 0 {
		limit = poolBytes
	}
	if p.held+1<<c > limit {
		return false
	}
	p.free[c-minClass] = append(p.free[c-minClass], ptr)
	p.held += 1 << c
	return true
}

// classOf returns the size class (log2 of the buffer's capacity) of size.
func classOf(size int) int {
	if size <= 1<<minClass {
		return minClass
	}
	return bits.Len(uint(size - 1))
}

// Allocate returns size zeroed bytes, 64-byte aligned as Arrow wants.
// Their capacity is their length, as Go's allocator gives them (some of
// arrow-go's kernels take a new buffer's capacity as its usable size);
// a buffer's capacity stays in its size class (Reallocate), and Free
// and Reallocate read the class from it (classOf): a capacity of 1 byte
// to 4 MiB is one of the pool's, backed by its whole class.
func (p *poolAllocator) Allocate(size int) []byte {
	c := classOf(size)
	if size <= 0 || c > maxClass {
		return goAlloc.Allocate(size)
	}
	if ptr := p.take(c); ptr != nil {
		if p.checking() {
			p.freed.Delete(ptr)
		}
		b := unsafe.Slice((*byte)(ptr), size)
		clear(b)
		return b
	}
	// Go allocates objects of 4 KiB and more at least 4 KiB aligned (a
	// size class of their own, or whole pages); should one not be, the
	// class's bytes start at the first 64-byte boundary of a larger one.
	b := make([]byte, 1<<c)
	if uintptr(unsafe.Pointer(&b[0]))%64 != 0 {
		b = make([]byte, 1<<c+64)
		b = b[64-uintptr(unsafe.Pointer(&b[0]))%64:]
	}
	return b[:size:size]
}

// whole is b, one of the pool's (ours), at its class's capacity.
func whole(b []byte) []byte { return unsafe.Slice(unsafe.SliceData(b), 1<<classOf(cap(b))) }

// ours reports whether b is one of the pool's buffers: Allocate gives
// any other size from Go's allocator, at a capacity of 0 or past the
// largest class.
func ours(b []byte) bool { return cap(b) > 0 && cap(b) <= 1<<maxClass }

// Reallocate grows or shrinks b to size, in place when b's class holds
// size (a shrunk buffer keeps its capacity, so its class, as Go's
// allocator's do); else it copies b into a new buffer and frees b.
func (p *poolAllocator) Reallocate(size int, b []byte) []byte {
	if ours(b) && size > 0 && size <= 1<<classOf(cap(b)) {
		old := len(b)
		if size <= cap(b) {
			b = b[:size]
		} else {
			b = whole(b)[:size:size] // past its capacity: the capacity grows with it
		}
		if size > old {
			clear(b[old:])
		}
		return b
	}
	nb := p.Allocate(size)
	copy(nb, b)
	p.Free(b)
	return nb
}

// Free keeps b for reuse if it is one of the pool's; anything else is
// left to the collector.
func (p *poolAllocator) Free(b []byte) {
	if !ours(b) {
		return
	}
	b = whole(b)
	c := len(b)
	ptr := unsafe.Pointer(&b[0])
	if uintptr(ptr)%64 != 0 {
		return
	}
	check := p.checking()
	if check {
		// marked freed before another goroutine can take it from the
		// free list (take unmarks it): marked after, a buffer taken in
		// between would stay marked while in use, and its next Free
		// would look like a second one
		if _, twice := p.freed.LoadOrStore(ptr, true); twice {
			panic(fmt.Sprintf("data: an Arrow buffer of %d bytes at %p freed twice", c, ptr))
		}
		for i := range b {
			b[i] = poison
		}
	}
	if !p.keep(bits.Len(uint(c))-1, ptr) && check {
		p.freed.Delete(ptr) // left to the collector
	}
}
