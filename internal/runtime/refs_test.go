package runtime

import (
	goruntime "runtime"
	"testing"
	"unsafe"
	"weak"
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

// BenchmarkRefWatch is what watching a ref for the garbage collector
// costs (refWatch.add, a weak pointer) against the runtime.AddCleanup it
// replaced, with records from refRecords and refBatch refs kept alive at
// once (a batch of submitted tasks); and one sweep's cost per live ref.
func BenchmarkRefWatch(b *testing.B) {
	rt := &Runtime{} // closed: a sweep forgets its refs as they die
	rt.closed.Store(true)
	var a refAllocator
	run := func(b *testing.B, watch func(*Ref)) {
		live := make([]*Ref, refBatch)
		for i := 0; b.Loop(); i++ {
			h := a.get()
			h.state = &refState{rt: rt}
			watch(h)
			live[i%refBatch] = h
		}
	}
	b.Run("cleanup", func(b *testing.B) {
		run(b, func(h *Ref) { goruntime.AddCleanup(h, func(*refState) {}, h.state) })
	})
	var w refWatcher
	b.Run("watch", func(b *testing.B) { run(b, w.add) })
	b.Run("sweep_per_live_ref", func(b *testing.B) {
		live := make([]*Ref, 64*watchChunk)
		var chunks [][]watchedRef
		open := &Runtime{}
		for i := range live {
			live[i] = &Ref{state: &refState{rt: open}}
			if i%watchChunk == 0 {
				chunks = append(chunks, make([]watchedRef, 0, watchChunk))
			}
			chunks[len(chunks)-1] = append(chunks[len(chunks)-1], watchedRef{weak.Make(live[i]), live[i].state})
		}
		b.ResetTimer()
		for b.Loop() {
			chunks, _ = sweepChunks(chunks)
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(live)), "ns/ref")
	})
}
