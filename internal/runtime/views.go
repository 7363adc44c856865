package runtime

import (
	goruntime "runtime"
	"sync/atomic"

	"github.com/atoll-runtime/atoll/internal/ids"
)

// ViewPin is a View's pin on its stored object (atoll.View), released
// once: by Release, or by a cleanup once the View that holds it is
// garbage.
type ViewPin struct {
	rt       *Runtime
	id       ids.ObjectID
	released atomic.Bool
}

// PinView makes the pin of a view of h's object, which Pin pinned, and
// has it released when holder (the View's data) is garbage.
func PinView[T any](holder *T, h *Ref) *ViewPin {
	p := &ViewPin{rt: h.state.rt, id: h.ID()}
	h.state.rt.liveViews.Add(1)
	if h.state.rt.sim != nil {
		return p // released by Release, or with its process (sim.go)
	}
	// The cleanup runs on the runtime's cleanup goroutine, which must
	// not block: a worker's Release is a frame to its raylet.
	goruntime.AddCleanup(holder, func(p *ViewPin) { go p.Release() }, p)
	return p
}

// Release unpins the object, once.
func (p *ViewPin) Release() {
	if p == nil || !p.released.CompareAndSwap(false, true) {
		return
	}
	p.rt.liveViews.Add(-1)
	if !p.rt.closed.Load() {
		p.rt.store.Release(p.id)
	}
}

// Released reports whether the pin was released.
func (p *ViewPin) Released() bool { return p.released.Load() }

// viewsAfterTask runs in a worker process when a task's argument views
// are released: if pinned Views are still live, some may be garbage the
// task dropped without Release, so collect now (once at a time) rather
// than at the next periodic GC, minutes later on an idle worker. A View
// the task kept (in a global, or an actor's state) stays pinned.
func (rt *Runtime) viewsAfterTask() {
	if rt.sim == nil && rt.liveViews.Load() > 0 && rt.gcRunning.CompareAndSwap(false, true) {
		go func() {
			defer rt.gcRunning.Store(false)
			goruntime.GC()
		}()
	}
}
