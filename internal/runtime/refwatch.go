package runtime

import (
	goruntime "runtime"
	"sync"
	"weak"
)

// refWatch finds the refs of this process that the garbage collector found
// unreachable, and drops their references: every ref a runtime makes
// (newRef) is watched through a weak pointer, and after each collection a
// sweep finds the ones that died.
//
// It replaces a runtime.AddCleanup per ref. The Go runtime keeps a 56-byte
// record per live cleanup, and when a burst of refs dies at once it queues
// their calls in blocks of its own; both are kept on its free lists once
// made, never given back to the system. A weak pointer's record is 32
// bytes and nothing is queued when its object dies, so a process that once
// held a million refs keeps ~30 MB less once they are gone. The sweep
// costs a weak pointer's check per live ref per collection, on a goroutine
// of its own, and the list is held in chunks so that making a ref never
// waits for a sweep.
var refWatch refWatcher

// refWatcher is the list refWatch sweeps.
type refWatcher struct {
	mu sync.Mutex
	// chunks hold the watched refs; a sweep takes them all (and tail)
	// and puts back the survivors, packed. Only a sweep writes into a
	// chunk once it is here.
	chunks [][]watchedRef
	// tail is the chunk add appends to.
	tail []watchedRef
	// armed: a sentinel is waiting for the next collection (arm).
	armed bool
	// sweeping: a sweep goroutine runs; again: a collection ended while
	// it ran, so it sweeps once more before it exits.
	sweeping, again bool
}

// watchedRef is one watched ref: a weak pointer to it, and its state,
// which outlives it.
type watchedRef struct {
	h  weak.Pointer[Ref]
	st *refState
}

// watchChunk is how many watched refs a chunk holds (64 KiB).
const watchChunk = 4096

// add watches h.
func (w *refWatcher) add(h *Ref) {
	e := watchedRef{h: weak.Make(h), st: h.state}
	w.mu.Lock()
	if len(w.tail) == cap(w.tail) {
		if w.tail != nil {
			w.chunks = append(w.chunks, w.tail)
		}
		w.tail = make([]watchedRef, 0, watchChunk)
	}
	w.tail = append(w.tail, e)
	arm := !w.armed
	w.armed = true
	w.mu.Unlock()
	if arm {
		w.arm()
	}
}

// collectionSentinel is a heap object nothing points to: the Go runtime
// runs its cleanup after the first collection that starts once it is
// made. It holds pointers so that it is never packed with other tiny
// objects (whose block would have to die with it).
type collectionSentinel struct{ _, _ *byte }

// arm asks to be told of the next collection.
func (w *refWatcher) arm() {
	goruntime.AddCleanup(new(collectionSentinel), (*refWatcher).collection, w)
}

// collection runs on the Go runtime's cleanup goroutine after a
// collection: it starts a sweep (or asks the running one for another) and
// waits for the next collection while anything is watched.
func (w *refWatcher) collection() {
	w.mu.Lock()
	watching := len(w.tail) > 0 || len(w.chunks) > 0
	start := watching && !w.sweeping
	if start {
		w.sweeping = true
	} else if w.sweeping {
		w.again = true
	}
	w.armed = watching
	w.mu.Unlock()
	if watching {
		w.arm()
	}
	if start {
		go w.sweep()
	}
}

// sweep drops the references of the watched refs that died, and forgets
// those released and those of a closed runtime.
func (w *refWatcher) sweep() {
	for {
		w.mu.Lock()
		chunks := w.chunks
		if w.tail != nil {
			chunks = append(chunks, w.tail)
		}
		w.chunks, w.tail, w.again = nil, nil, false
		w.mu.Unlock()

		kept, dead := sweepChunks(chunks)
		collectDead(dead)

		w.mu.Lock()
		w.chunks = append(kept, w.chunks...)
		again := w.again
		w.sweeping = again
		w.mu.Unlock()
		if !again {
			return
		}
	}
}

// sweepChunks packs the live entries of chunks into their first chunks,
// which it returns, with the states of the refs that died.
func sweepChunks(chunks [][]watchedRef) (kept [][]watchedRef, dead []*refState) {
	wc, wi := 0, 0 // where the next live entry goes
	for _, c := range chunks {
		for _, e := range c {
			switch {
			case e.st.released.Load() || e.st.rt.closed.Load():
				continue
			case e.h.Value() == nil:
				dead = append(dead, e.st)
				continue
			}
			if wi == watchChunk {
				wc, wi = wc+1, 0
			}
			out := chunks[wc][:wi+1] // never past the entry being read
			out[wi] = e
			chunks[wc] = out
			wi++
		}
	}
	if wi == 0 { // nothing lived
		wc = -1
	}
	for i, c := range chunks {
		switch {
		case i < wc: // full
		case i == wc: // ends at its last live entry
			clear(c[wi:cap(c)])
		default:
			clear(c[:cap(c)])
			chunks[i] = nil
		}
	}
	return chunks[:wc+1], dead
}

// collectDead drops the references of dead refs: one queue step and one
// message per runtime.
func collectDead(dead []*refState) {
	for len(dead) > 0 {
		rt := dead[0].rt
		n := 1
		for n < len(dead) && dead[n].rt == rt {
			n++
		}
		if !rt.closed.Load() && rt.collected.addAll(dead[:n]) {
			rt.post(&drainCollected{})
		}
		dead = dead[n:]
	}
}
