package atoll

import (
	"context"
	"runtime"
	"sync/atomic"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/codec"
	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/ids"
	"github.com/atoll-runtime/atoll/internal/objectstore"
)

// View is a zero-copy, read-only view of a flat numeric slice object in
// the node's shared-memory object store, from GetView. While the View is
// reachable and not released, it pins its object: the memory under
// Slice cannot be freed, spilled or reused, whatever happens to the refs.
//
// Keep the View (not only the slice) while you read: Slice's memory is
// valid until Release, or until the View itself is garbage. Release
// unpins at once; otherwise a cleanup unpins once the View is collected.
// Small objects (kept inline by their owner) are copied into the View.
// The zero View is empty.
type View[E Elem] struct {
	v *viewData[E]
}

type viewData[E Elem] struct {
	data []E
	pin  *viewPin // nil: data is a copy, nothing pinned
}

// viewPin is a View's pin on its object, released once.
type viewPin struct {
	rt       *core
	id       ids.ObjectID
	released atomic.Bool
}

// liveViews counts the pinned Views of this process not yet released: a
// worker process collects garbage after a task that left some, so the
// pins of views the task dropped end with it (viewsAfterTask).
var liveViews atomic.Int64

func (p *viewPin) release() {
	if p == nil || !p.released.CompareAndSwap(false, true) {
		return
	}
	liveViews.Add(-1)
	if !p.rt.closed.Load() {
		p.rt.store.Release(p.id)
	}
}

// Slice returns the view's elements. They alias shared memory: do not
// modify them, and do not use them after Release or once the View is
// unreachable (copy what must outlive it). After Release it returns nil.
func (v View[E]) Slice() []E {
	if v.v == nil || v.v.pin != nil && v.v.pin.released.Load() {
		return nil
	}
	return v.v.data
}

// Len is the number of elements (0 after Release).
func (v View[E]) Len() int { return len(v.Slice()) }

// Release unpins the object now. Slice returns nil afterwards. Releasing
// twice, or a copy of a released View, is a no-op.
func (v View[E]) Release() {
	if v.v != nil {
		v.v.pin.release()
	}
}

// newView wraps data read from id's pinned object (pinned false: data is
// the View's own copy).
func newView[E Elem](rt *core, id ids.ObjectID, data []E, pinned bool) View[E] {
	d := &viewData[E]{data: data}
	if pinned {
		d.pin = &viewPin{rt: rt, id: id}
		liveViews.Add(1)
		// The cleanup runs on the runtime's cleanup goroutine, which must
		// not block: a worker's Release is a frame to its raylet.
		runtime.AddCleanup(d, func(p *viewPin) { go p.release() }, d.pin)
	}
	return View[E]{v: d}
}

// GetView waits for ref's object like Get and returns a zero-copy view of
// it that pins it until Release (or until the View is garbage), where Get
// returns a copy. Use it for large arrays read once, or read by many
// goroutines, where the copy costs (see BENCHMARKS.md).
func GetView[E Elem](ctx context.Context, ref ObjectRef[[]E]) (View[E], error) {
	return getWith(ctx, ref, func(value *atollpb.Value) (View[E], error) {
		return decodeView[E](ctx, ref.h.rt, ref.h, value)
	})
}

// GetViews is GetView for many refs, with one fetch for all (as GetAll).
// On an error, the views already taken are released.
func GetViews[E Elem](ctx context.Context, refs []ObjectRef[[]E]) ([]View[E], error) {
	hs, err := refHandles("GetViews", refs)
	if err != nil {
		return nil, err
	}
	out := make([]View[E], len(refs))
	err = getMany(ctx, "GetViews", hs, func(i int, v *atollpb.Value) (err error) {
		if v == nil {
			out[i], err = GetView(ctx, refs[i])
		} else {
			out[i], err = decodeView[E](ctx, hs[i].rt, hs[i], v)
		}
		return err
	})
	if err != nil {
		for _, v := range out {
			v.Release()
		}
		return nil, err
	}
	return out, nil
}

// decodeView makes a View of a value: a stored one pinned in this node's
// store (fetched from another node first), an inline one copied.
func decodeView[E Elem](ctx context.Context, rt *core, h *refHandle, value *atollpb.Value) (View[E], error) {
	switch {
	case value.GetError() != nil:
		return View[E]{}, errs.FromProto(value.GetError())
	case value.GetStored() != nil:
		if rt.isRemote(value) {
			if err := rt.link.fetch(ctx, []*atollpb.ObjectRef{rt.ownedRef(h.id, value)}); err != nil {
				return View[E]{}, err
			}
		}
		objs, err := rt.store.GetWithPriority(ctx, []ids.ObjectID{h.id}, 0, objectstore.PriorityGet)
		if err != nil {
			return View[E]{}, err
		}
		if len(objs) == 0 || objs[0].Data == nil && objs[0].ID.IsZero() {
			return View[E]{}, &errs.ObjectLostError{ObjectID: h.id.String(), Message: "not in the object store"}
		}
		xs, err := codec.Decode[[]E](objs[0].Codec, objs[0].Data)
		if err != nil {
			rt.store.Release(h.id)
			return View[E]{}, err
		}
		return newView(rt, h.id, xs, true), nil
	default:
		xs, err := decodeCopy[[]E](value.Codec, value.GetInline())
		if err != nil {
			return View[E]{}, err
		}
		return newView(rt, h.id, xs, false), nil
	}
}

// viewsAfterTask runs in a worker process when a task ends: if pinned
// Views are still live, some may be garbage the task dropped without
// Release, so collect now (once at a time) rather than at the next
// periodic GC, minutes later on an idle worker. A View the task kept
// (in a global, or an actor's state) stays pinned.
func viewsAfterTask() {
	if liveViews.Load() > 0 && gcRunning.CompareAndSwap(false, true) {
		go func() {
			defer gcRunning.Store(false)
			runtime.GC()
		}()
	}
}

var gcRunning atomic.Bool
