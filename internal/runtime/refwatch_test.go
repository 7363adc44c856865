package runtime

import (
	"math/rand/v2"
	goruntime "runtime"
	"slices"
	"testing"
	"weak"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/atoll-runtime/atoll/internal/ids"
	"github.com/atoll-runtime/atoll/internal/testutil"
)

// deadRefs returns weak pointers to n refs nothing reaches once it
// returns.
//
//go:noinline
func deadRefs(n int) []weak.Pointer[Ref] {
	ws := make([]weak.Pointer[Ref], n)
	for i := range ws {
		ws[i] = weak.Make(&Ref{})
	}
	return ws
}

// TestSweepChunksPacks: a sweep keeps the live entries in their order,
// packed into full chunks but the last, whose tail it clears; it reports
// the dead in order and forgets the released and those of a closed
// runtime.
func TestSweepChunksPacks(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	open, closed := &Runtime{}, &Runtime{}
	closed.closed.Store(true)
	for _, n := range []int{0, 1, watchChunk - 1, watchChunk, 3*watchChunk + 17} {
		dead := deadRefs(n)
		goruntime.GC()
		var (
			chunks             [][]watchedRef
			live               []*Ref // held until the sweep is checked
			wantKept, wantDead []*refState
		)
		for i := range n {
			st := &refState{rt: open}
			e := watchedRef{st: st}
			switch rng.IntN(4) {
			case 0: // live
				h := &Ref{state: st}
				live = append(live, h)
				e.h = weak.Make(h)
				wantKept = append(wantKept, st)
			case 1: // died
				if dead[i].Value() != nil {
					t.Fatal("a ref nothing reaches survived a collection")
				}
				e.h = dead[i]
				wantDead = append(wantDead, st)
			case 2: // released, still reachable
				h := &Ref{state: st}
				live = append(live, h)
				st.released.Store(true)
				e.h = weak.Make(h)
			case 3: // its runtime closed
				h := &Ref{state: &refState{rt: closed}}
				live = append(live, h)
				e = watchedRef{h: weak.Make(h), st: h.state}
			}
			// Chunks as add and earlier sweeps leave them: full, or
			// partly filled.
			if len(chunks) == 0 || len(chunks[len(chunks)-1]) == cap(chunks[len(chunks)-1]) || rng.IntN(watchChunk) == 0 {
				chunks = append(chunks, make([]watchedRef, 0, watchChunk))
			}
			chunks[len(chunks)-1] = append(chunks[len(chunks)-1], e)
		}
		kept, gotDead := sweepChunks(chunks)
		var gotKept []*refState
		for i, c := range kept {
			if i < len(kept)-1 && len(c) != watchChunk {
				t.Errorf("n=%d: kept chunk %d of %d holds %d, want full", n, i, len(kept), len(c))
			}
			if len(c) == 0 {
				t.Errorf("n=%d: kept chunk %d is empty", n, i)
			}
			if slices.ContainsFunc(c[len(c):cap(c)], func(e watchedRef) bool { return e != watchedRef{} }) {
				t.Errorf("n=%d: kept chunk %d still holds entries past its end", n, i)
			}
			for _, e := range c {
				gotKept = append(gotKept, e.st)
			}
		}
		if !slices.Equal(gotKept, wantKept) {
			t.Errorf("n=%d: kept %d entries, want the %d live ones in order", n, len(gotKept), len(wantKept))
		}
		if !slices.Equal(gotDead, wantDead) {
			t.Errorf("n=%d: %d dead, want %d in order", n, len(gotDead), len(wantDead))
		}
		goruntime.KeepAlive(live)
	}
}

// TestRefWatchCollects: refs dropped without Release are queued for their
// runtime's owner after a collection, with one drain message; refs still
// held and refs released are not; and the watch forgets all but the held.
func TestRefWatchCollects(t *testing.T) {
	sys := actor.NewActorSystem()
	t.Cleanup(sys.Shutdown)
	drains := make(chan struct{}, 64)
	pid := sys.Root.Spawn(actor.PropsFromFunc(func(c actor.Context) {
		if _, ok := c.Message().(*drainCollected); ok {
			drains <- struct{}{}
		}
	}))
	rt := &Runtime{system: sys, ownerPID: pid}
	var w refWatcher
	const n = 3 * watchChunk
	var held []*Ref
	wantDropped := map[ids.ObjectID]bool{}
	for i := range n {
		h := &Ref{state: &refState{id: ids.PutObjectID(ids.NewTaskID(), uint32(i+1)), rt: rt}}
		w.add(h)
		switch i % 3 {
		case 0:
			held = append(held, h)
		case 1:
			h.state.released.Store(true) // as Release marks it
		case 2:
			wantDropped[h.ID()] = true
		}
	}
	testutil.Eventually(t, "the dropped refs to be queued", func() bool {
		goruntime.GC()
		rt.collected.mu.Lock()
		defer rt.collected.mu.Unlock()
		return len(rt.collected.drops) >= len(wantDropped)
	})
	<-drains
	got := rt.collected.take()
	if len(got) != len(wantDropped) {
		t.Fatalf("%d refs queued, want the %d dropped", len(got), len(wantDropped))
	}
	for _, id := range got {
		if !wantDropped[id] {
			t.Fatalf("ref %s queued, but it is held or was released", id.Short())
		}
	}
	testutil.Eventually(t, "the watch to hold the held refs only", func() bool {
		goruntime.GC()
		w.mu.Lock()
		defer w.mu.Unlock()
		m := len(w.tail)
		for _, c := range w.chunks {
			m += len(c)
		}
		return m == len(held) && !w.sweeping
	})
	select {
	case <-drains:
		t.Fatal("a second drain posted with nothing queued")
	default:
	}
	goruntime.KeepAlive(held)
}
