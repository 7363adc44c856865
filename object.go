package atoll

import (
	"bytes"
	"context"

	"go.opentelemetry.io/otel/attribute"

	"github.com/atoll-runtime/atoll/amm"
	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/codec"
	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/runtime"
)

// Put stores v as an object owned by this process and returns a reference
// to it. Values up to the inline threshold live in the owner's memory;
// larger ones are copied once into the node's shared-memory object store.
// Flat numeric slices ([]byte, []float64, []float32, []int64, []int32)
// are stored raw, read in place by GetView and by tasks (Get copies them);
// protobuf messages use
// their wire format; other values use encoding/gob.
func Put[T any](ctx context.Context, v T) (ObjectRef[T], error) {
	rt, err := runtime.Running(ctx)
	if err != nil {
		return ObjectRef[T]{}, err
	}
	h, err := rt.Put(ctx, v)
	if err != nil {
		return ObjectRef[T]{}, err
	}
	return ObjectRef[T]{h: h}, nil
}

// Elem is the element type of a slice that PutWith can build in place.
type Elem interface {
	byte | float64 | float32 | int64 | int32
}

// PutWith creates an object of n elements directly in the shared-memory
// object store and calls fill to write it, with no intermediate copy
// (plasma's create-write-seal). fill must not keep the slice.
func PutWith[E Elem](ctx context.Context, n int, fill func([]E)) (ObjectRef[[]E], error) {
	rt, err := runtime.Running(ctx)
	if err != nil {
		return ObjectRef[[]E]{}, err
	}
	if n < 0 {
		return ObjectRef[[]E]{}, errs.Invalidf("PutWith: negative length %d", n)
	}
	ctx, span := rt.Tracer().Start(ctx, "put")
	defer span.End()
	c, _ := codec.RawCodec[[]E]()
	size := n * codec.ElemSize(c)
	inline := rt.Inline(size)
	cr, err := rt.Create(ctx, size, c, inline)
	if err != nil {
		return ObjectRef[[]E]{}, err
	}
	span.SetAttributes(attribute.String("atoll.object_id", cr.ID().String()), attribute.Int("atoll.size_bytes", size))
	if inline {
		xs := make([]E, n)
		fill(xs)
		enc, _ := codec.Encode(xs)
		cr.Data = enc.Data
	} else {
		view, err := codec.Decode[[]E](c, cr.Data)
		if err != nil {
			cr.Abort()
			return ObjectRef[[]E]{}, err
		}
		fill(view)
	}
	h, err := cr.Seal()
	if err != nil {
		return ObjectRef[[]E]{}, err
	}
	return ObjectRef[[]E]{h: h}, nil
}

// Get waits for the object ref refers to and returns its value. A task's
// failure comes back as its typed error (TaskError, WorkerCrashedError,
// ActorDiedError, CancelledError, ...). When ctx has a deadline that passes
// first, Get fails with a GetTimeoutError (errors.Is(err, ErrGetTimeout))
// that names the task making the object and its state.
//
// The value is the caller's own: flat numeric slices ([]byte, []float64,
// ...) and Raw values are copied out of shared memory. GetView returns a
// zero-copy view instead.
func Get[T any](ctx context.Context, ref ObjectRef[T]) (T, error) {
	var out T
	if ref.h == nil {
		return out, errs.ZeroRef("Get", -1)
	}
	err := runtime.Get(ctx, ref.h, func(value *atollpb.Value) (err error) {
		out, err = decodeValue[T](ctx, ref.h, value)
		return err
	})
	return out, err
}

// GetAll gets every ref in order; it fails with the first error. Objects
// in the store are fetched with one request, so spilled ones are restored
// together rather than one round trip at a time. Like Get, it returns
// copies; GetViews returns zero-copy views.
func GetAll[T any](ctx context.Context, refs []ObjectRef[T]) ([]T, error) {
	hs, err := refHandles("GetAll", refs)
	if err != nil {
		return nil, err
	}
	out := make([]T, len(refs))
	err = getMany(ctx, "GetAll", hs, func(i int, v *atollpb.Value) (err error) {
		if v == nil {
			out[i], err = Get(ctx, refs[i])
		} else {
			out[i], err = decodeValue[T](ctx, hs[i], v)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// GetValues gets refs of any types, in order, as GetAll does for refs of
// one type: the i-th value is the T of refs[i] (an ObjectRef[T]), boxed
// in an any; assert it back (v.(int)). It fails with the first error.
// Like Get, slices are copies.
func GetValues(ctx context.Context, refs []Ref) ([]any, error) {
	rt, err := runtime.Running(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]any, len(refs))
	hs := make([]*runtime.Ref, len(refs))
	ds := make([]anyDecoder, len(refs))
	for i, r := range refs {
		if r == nil {
			return nil, errs.ZeroRef("GetValues", i)
		}
		if err := rt.CheckRef(r.handle(), "GetValues", i); err != nil {
			return nil, err
		}
		d, ok := r.(anyDecoder)
		if !ok {
			return nil, errs.Invalidf("GetValues: refs[%d] is a %T, not an ObjectRef", i, r)
		}
		hs[i], ds[i] = r.handle(), d
	}
	err = rt.GetMany(ctx, "GetValues", hs, func(i int, v *atollpb.Value) (err error) {
		out[i], err = ds[i].decodeAny(ctx, v)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// anyDecoder is an ObjectRef[T] seen without its T.
type anyDecoder interface {
	// decodeAny decodes value as a T (nil value: Get it, rebuilding a
	// lost object).
	decodeAny(ctx context.Context, value *atollpb.Value) (any, error)
}

func (r ObjectRef[T]) decodeAny(ctx context.Context, value *atollpb.Value) (any, error) {
	if value == nil {
		return Get(ctx, r)
	}
	return decodeValue[T](ctx, r.h, value)
}

// refHandles returns the handles of refs, or an error naming the first
// zero ref (argument of op).
func refHandles[T any](op string, refs []ObjectRef[T]) ([]*runtime.Ref, error) {
	hs := make([]*runtime.Ref, len(refs))
	for i, r := range refs {
		if r.h == nil {
			return nil, errs.ZeroRef(op, i)
		}
		hs[i] = r.h
	}
	return hs, nil
}

// getMany has the running runtime wait for hs and decode each (see
// runtime.GetMany).
func getMany(ctx context.Context, op string, hs []*runtime.Ref, decode func(i int, v *atollpb.Value) error) error {
	if len(hs) == 0 {
		return nil
	}
	rt, err := runtime.Running(ctx)
	if err != nil {
		return err
	}
	return rt.GetMany(ctx, op, hs, decode)
}

// decodeValue decodes an object's value as a T: a stored one read from
// this node's store (fetched from another node first), by copy.
func decodeValue[T any](ctx context.Context, h *runtime.Ref, value *atollpb.Value) (T, error) {
	var zero T
	switch {
	case value.GetError() != nil:
		return zero, errs.FromProto(value.GetError())
	case value.GetStored() != nil:
		obj, err := h.Pin(ctx, value)
		if err != nil {
			return zero, err
		}
		// The value is decoded by copy, so the pin ends here (GetView
		// keeps one for as long as its view lives).
		defer h.Unpin()
		return decodeCopy[T](h.Runtime(), obj.Codec, obj.Data)
	default:
		return decodeCopy[T](h.Runtime(), value.Codec, value.GetInline())
	}
}

// decodeCopy decodes data into a T that does not alias data: flat slices
// and Raw values, which decode as views, get a copy of the bytes first.
// Refs and actor handles inside the value register with rt, the runtime
// of the ref read (its decode scope).
func decodeCopy[T any](rt *runtime.Runtime, c atollpb.Codec, data []byte) (T, error) {
	if codec.IsView[T]() {
		data = bytes.Clone(data)
	}
	var v T
	err := runtime.DecodeIn(rt, c, data, func() (err error) {
		v, err = codec.Decode[T](c, data)
		return err
	})
	return v, err
}

// ReplicasAllNodes as SetReplicas's count asks for a copy on every node
// that runs tasks (nodes that join later included).
const ReplicasAllNodes = amm.AllNodes

// SetReplicas asks the head's Active Memory Manager to keep n copies of ref's object in the
// cluster's stores, its primary included: its Replicate policy has nodes
// pull the missing copies, least loaded first, and restores the count
// when a node holding one dies, as long as one copy lives. n is
// ReplicasAllNodes for a copy on every node, 0 to stop tracking. The
// count lasts as long as the object (or until the head restarts: it is
// not persisted). Objects small enough to be inlined in their owner live
// in no store and are not replicated. The count is applied while the
// AMM's policies run (ATOLL_AMM=1 on the head, or atolltest.StartAMM). It
// fails with ErrUnavailable when no AMM answers (a head older than this
// one), and ErrInvalidArgument outside a cluster or in a worker process.
func SetReplicas[T any](ctx context.Context, ref ObjectRef[T], n int) error {
	if err := ref.check(); err != nil {
		return err
	}
	d, err := runtime.DriverOf(ctx, "SetReplicas")
	if err != nil {
		return err
	}
	return d.SetReplicas(ctx, ref.h, n)
}
