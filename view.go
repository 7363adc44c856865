package atoll

import (
	"context"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/codec"
	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/runtime"
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
	pin  *runtime.ViewPin // nil: data is a copy, nothing pinned
}

// Slice returns the view's elements. They alias shared memory: do not
// modify them, and do not use them after Release or once the View is
// unreachable (copy what must outlive it). After Release it returns nil.
func (v View[E]) Slice() []E {
	if v.v == nil || v.v.pin != nil && v.v.pin.Released() {
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
		v.v.pin.Release()
	}
}

// newView wraps data read from h's object, pinned (pinned false: data is
// the View's own copy).
func newView[E Elem](h *runtime.Ref, data []E, pinned bool) View[E] {
	d := &viewData[E]{data: data}
	if pinned {
		d.pin = runtime.PinView(d, h)
	}
	return View[E]{v: d}
}

// GetView waits for ref's object like Get and returns a zero-copy view of
// it that pins it until Release (or until the View is garbage), where Get
// returns a copy. Use it for large arrays read once, or read by many
// goroutines, where the copy costs (see BENCHMARKS.md).
func GetView[E Elem](ctx context.Context, ref ObjectRef[[]E]) (View[E], error) {
	var out View[E]
	if ref.h == nil {
		return out, errs.ZeroRef("Get", -1)
	}
	err := runtime.Get(ctx, ref.h, func(value *atollpb.Value) (err error) {
		out, err = decodeView[E](ctx, ref.h, value)
		return err
	})
	return out, err
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
			out[i], err = decodeView[E](ctx, hs[i], v)
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
func decodeView[E Elem](ctx context.Context, h *runtime.Ref, value *atollpb.Value) (View[E], error) {
	switch {
	case value.GetError() != nil:
		return View[E]{}, errs.FromProto(value.GetError())
	case value.GetStored() != nil:
		obj, err := h.Pin(ctx, value)
		if err != nil {
			return View[E]{}, err
		}
		xs, err := codec.Decode[[]E](obj.Codec, obj.Data)
		if err != nil {
			h.Unpin()
			return View[E]{}, err
		}
		return newView(h, xs, true), nil
	default:
		xs, err := decodeCopy[[]E](h.Runtime(), value.Codec, value.GetInline())
		if err != nil {
			return View[E]{}, err
		}
		return newView(h, xs, false), nil
	}
}
