package runtime

import (
	goruntime "runtime"
	"testing"
	"unsafe"
)

// The records refRecords hands out come in descending address order (but
// where a batch moves to another span), which is what keeps each ref's
// AddCleanup at the start of its span's list. If the Go runtime ever
// allocates otherwise, this fails and the allocator no longer helps.
func TestRefRecordsDescend(t *testing.T) {
	var a refAllocator
	const n = 2 * refBatch
	hs := make([]*Ref, n)
	for i := range hs {
		hs[i] = a.get()
	}
	down := 0
	for i := 1; i < n; i++ {
		if uintptr(unsafe.Pointer(hs[i])) < uintptr(unsafe.Pointer(hs[i-1])) {
			down++
		}
	}
	if down < n*95/100 {
		t.Fatalf("%d of %d records handed out below the one before, want at least 95%%", down, n-1)
	}
}

// BenchmarkRefCleanup is what registering a ref's cleanup costs with the
// records made one at a time (ascending addresses) and from refRecords,
// refBatch refs kept alive at once (a batch of submitted tasks).
func BenchmarkRefCleanup(b *testing.B) {
	run := func(b *testing.B, get func() *Ref) {
		live := make([]*Ref, refBatch)
		for i := 0; b.Loop(); i++ {
			h := get()
			h.state = &refState{}
			goruntime.AddCleanup(h, func(*refState) {}, h.state)
			live[i%refBatch] = h
		}
	}
	b.Run("one_at_a_time", func(b *testing.B) { run(b, func() *Ref { return new(Ref) }) })
	var a refAllocator
	b.Run("descending", func(b *testing.B) { run(b, a.get) })
}
