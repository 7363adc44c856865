package data

import (
	"bytes"
	"runtime"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

func TestPoolAllocatorReusesFreedBuffers(t *testing.T) {
	p := &poolAllocator{}
	p.once.Do(func() {}) // checks off whatever the environment says
	b := p.Allocate(5000)
	if len(b) != 5000 || cap(b) != 5000 || uintptr(unsafe.Pointer(&b[0]))%64 != 0 {
		t.Fatalf("Allocate(5000): len %d cap %d at %p; want 5000, 5000 (arrow-go's kernels read the capacity), 64-byte aligned",
			len(b), cap(b), &b[0])
	}
	for i := range b {
		b[i] = 7
	}
	p.Free(b)
	c := p.Allocate(8000) // the same class: the freed buffer, zeroed
	if !bytes.Equal(c, make([]byte, 8000)) {
		t.Fatal("a reused buffer is not zeroed")
	}
	// Growing within the class keeps the buffer and zeroes what it adds.
	c[0] = 1
	d := p.Reallocate(8192, c)
	if &d[0] != &c[0] || d[0] != 1 || d[8191] != 0 || cap(d) != 8192 {
		t.Fatal("Reallocate within the class did not grow in place")
	}
	// Past it: copied into a larger class, the old one freed.
	e := p.Reallocate(10000, d)
	if cap(e) != 10000 || len(whole(e)) != 16384 || e[0] != 1 || !bytes.Equal(e[8192:], make([]byte, 10000-8192)) {
		t.Fatalf("Reallocate past the class: cap %d, first %d", cap(e), e[0])
	}
	if f := p.Allocate(8000); &f[0] != &d[0] {
		t.Fatal("the buffer grown out of its class was not freed")
	}
	// Shrunk, it stays in place with its capacity, so its class; grown
	// again within the class, in place.
	e[0] = 2
	g := p.Reallocate(100, e)
	if &g[0] != &e[0] || g[0] != 2 || len(g) != 100 || cap(g) != 10000 {
		t.Fatalf("Reallocate into a smaller size: len %d cap %d", len(g), cap(g))
	}
	g = p.Reallocate(12000, g)
	if &g[0] != &e[0] || len(g) != 12000 || cap(g) != 12000 || g[100] != 0 {
		t.Fatalf("Reallocate of a shrunk buffer within its class: len %d cap %d", len(g), cap(g))
	}
	p.Free(g)
	if h := p.Allocate(16000); &h[0] != &e[0] {
		t.Fatal("the shrunk buffer was not freed as its class")
	}
	// Too small or too large for the classes: Go's allocator, and Free
	// leaves them alone.
	for _, n := range []int{0, 100, 1<<maxClass + 1} {
		b := p.Allocate(n)
		if len(b) != n {
			t.Fatalf("Allocate(%d): len %d", n, len(b))
		}
		p.Free(b)
	}
}

func TestPoolAllocatorChecks(t *testing.T) {
	p := &poolAllocator{check: true}
	b := p.Allocate(4096)
	b[0] = 1
	p.Free(b)
	if b[0] != poison || b[4095] != poison {
		t.Fatal("a freed buffer is not poisoned")
	}
	func() {
		defer func() {
			if recover() == nil {
				t.Fatal("a double free did not panic")
			}
		}()
		p.Free(b)
	}()
	// Taken out of the pool, it may be freed again.
	c := p.Allocate(4096)
	p.Free(c)
}

// Goroutines allocating and freeing at once (a worker's tasks, in-process
// workers) never trip the double-free check: a buffer is marked freed
// before another goroutine can take it.
func TestPoolAllocatorChecksConcurrently(t *testing.T) {
	p := &poolAllocator{check: true, limit: 1 << 16}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 20_000 {
				b := p.Allocate(4096)
				b[0] = 1
				p.Free(b)
			}
		})
	}
	wg.Wait()
}

// The pool keeps at most its limit in freed buffers; past it a freed
// buffer is left to the collector, and taking one makes room again.
func TestPoolAllocatorIsBounded(t *testing.T) {
	p := &poolAllocator{limit: 8192}
	p.once.Do(func() {})
	a, b, c := p.Allocate(4096), p.Allocate(4096), p.Allocate(4096)
	p.Free(a)
	p.Free(b)
	p.Free(c) // over the limit: dropped
	if p.held != 8192 || len(p.free[0]) != 2 {
		t.Fatalf("held %d bytes in %d buffers; want 8192 in 2", p.held, len(p.free[0]))
	}
	if d := p.Allocate(100); &d[:1][0] != &b[0] || p.held != 4096 {
		t.Fatalf("Allocate did not take the last buffer freed (held %d)", p.held)
	}
}

// release drops every freed buffer; buffers freed afterwards are kept
// again, and a released buffer (checks on) is no more known as freed.
func TestPoolAllocatorRelease(t *testing.T) {
	p := &poolAllocator{check: true}
	a, b := p.Allocate(4096), p.Allocate(1<<20)
	p.Free(a)
	p.Free(b)
	if p.held != 4096+1<<20 {
		t.Fatalf("held %d bytes", p.held)
	}
	p.release()
	if p.held != 0 || len(p.free[0]) != 0 || len(p.free[20-minClass]) != 0 {
		t.Fatalf("after release: held %d bytes", p.held)
	}
	if _, ok := p.freed.Load(unsafe.Pointer(&a[0])); ok {
		t.Fatal("a released buffer is still known as freed")
	}
	c := p.Allocate(4096)
	if &c[0] == &a[0] {
		t.Fatal("a released buffer was handed out again")
	}
	p.Free(c)
	if p.held != 4096 {
		t.Fatalf("a buffer freed after release: held %d bytes", p.held)
	}
}

// A time column's integer view, which its users do not release, gives
// its hold on the column's buffers back once it is unreachable: the
// buffers are freed when the column is released too.
func TestIntKeyViewLetsBuffersGo(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	b := array.NewTimestampBuilder(mem, &arrow.TimestampType{Unit: arrow.Microsecond})
	for i := range 1000 {
		if i%10 == 3 {
			b.AppendNull()
			continue
		}
		b.Append(arrow.Timestamp(i))
	}
	col := b.NewArray()
	b.Release()
	func() {
		view := intKey(col).(*array.Int64)
		if view.Len() != 1000 || view.Value(999) != 999 || view.IsValid(3) {
			t.Fatalf("view: %d values, last %d", view.Len(), view.Value(999))
		}
	}()
	col.Release()
	for deadline := time.Now().Add(10 * time.Second); mem.CurrentAlloc() != 0; {
		if time.Now().After(deadline) {
			t.Fatalf("%d bytes still allocated: the view kept the buffers", mem.CurrentAlloc())
		}
		runtime.GC()
		runtime.Gosched()
	}
}
