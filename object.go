package atoll

import (
	"bytes"
	"context"
	"errors"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/codec"
	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/ids"
	"github.com/atoll-runtime/atoll/internal/objectstore"
	"github.com/atoll-runtime/atoll/internal/telemetry"
)

// Put stores v as an object owned by this process and returns a reference
// to it. Values up to the inline threshold live in the owner's memory;
// larger ones are copied once into the node's shared-memory object store.
// Flat numeric slices ([]byte, []float64, []float32, []int64, []int32)
// are stored raw, read in place by GetView and by tasks (Get copies them);
// protobuf messages use
// their wire format; other values use encoding/gob.
func Put[T any](ctx context.Context, v T) (ObjectRef[T], error) {
	rt, err := running()
	if err != nil {
		return ObjectRef[T]{}, err
	}
	ctx, span := rt.tracer.Start(ctx, "put", trace.WithAttributes())
	defer span.End()
	enc, err := codec.Encode(v)
	if err != nil {
		return ObjectRef[T]{}, err
	}
	id, err := rt.putEncoded(ctx, enc, true)
	if err != nil {
		return ObjectRef[T]{}, err
	}
	span.SetAttributes(attribute.String("atoll.object_id", id.String()), attribute.Int("atoll.size_bytes", len(enc.Data)))
	return ObjectRef[T]{h: newHandle(rt, id)}, nil
}

// Elem is the element type of a slice that PutWith can build in place.
type Elem interface {
	byte | float64 | float32 | int64 | int32
}

// PutWith creates an object of n elements directly in the shared-memory
// object store and calls fill to write it, with no intermediate copy
// (plasma's create-write-seal). fill must not keep the slice.
func PutWith[E Elem](ctx context.Context, n int, fill func([]E)) (ObjectRef[[]E], error) {
	rt, err := running()
	if err != nil {
		return ObjectRef[[]E]{}, err
	}
	if n < 0 {
		return ObjectRef[[]E]{}, errs.Invalidf("PutWith: negative length %d", n)
	}
	ctx, span := rt.tracer.Start(ctx, "put")
	defer span.End()
	c, _ := codec.RawCodec[[]E]()
	size := n * codec.ElemSize(c)
	id := rt.newPutID()
	span.SetAttributes(attribute.String("atoll.object_id", id.String()), attribute.Int("atoll.size_bytes", size))
	if rt.inline(size) {
		xs := make([]E, n)
		fill(xs)
		enc, _ := codec.Encode(xs)
		rt.owner.put(id, &atollpb.Value{Codec: c, Kind: &atollpb.Value_Inline{Inline: enc.Data}}, telemetry.Inject(ctx), nil)
		return ObjectRef[[]E]{h: newHandle(rt, id)}, nil
	}
	buf, err := rt.store.CreateOwned(ctx, id, uint64(size), c, rt.workerID)
	if err != nil {
		return ObjectRef[[]E]{}, err
	}
	view, err := codec.Decode[[]E](c, buf)
	if err != nil {
		_ = rt.store.Abort(ctx, id)
		return ObjectRef[[]E]{}, err
	}
	fill(view)
	if err := rt.store.Seal(ctx, id); err != nil {
		return ObjectRef[[]E]{}, err
	}
	rt.owner.put(id, rt.storedValue(id, c, size), telemetry.Inject(ctx), nil)
	return ObjectRef[[]E]{h: newHandle(rt, id)}, nil
}

func (rt *core) newPutID() ids.ObjectID { return ids.PutObjectID(rt.putTask, rt.putSeq.Add(1)) }

// storedValue is the value of an object stored in this node's store.
func (rt *core) storedValue(id ids.ObjectID, c atollpb.Codec, size int) *atollpb.Value {
	return &atollpb.Value{Codec: c, Kind: &atollpb.Value_Stored{Stored: &atollpb.ObjectLocation{ObjectId: id.Bytes(), Length: uint64(size), Codec: c, NodeId: rt.nodeID.Bytes()}}}
}

// refOf is the reference to a stored object with its location and its
// owner's node (ownerNode, hex; "" if unknown), for a fetch.
func refOf(id ids.ObjectID, v *atollpb.Value, ownerNode string) *atollpb.ObjectRef {
	st := v.GetStored()
	return &atollpb.ObjectRef{ObjectId: id.Bytes(), NodeId: st.GetNodeId(), Codec: st.GetCodec(), Size: st.GetLength(), OwnerAddress: ownerNode}
}

// ownedRef is refOf for an object this process owns.
func (rt *core) ownedRef(id ids.ObjectID, v *atollpb.Value) *atollpb.ObjectRef {
	r := refOf(id, v, rt.ownerNode(id))
	if r.OwnerAddress != "" {
		r.OwnerId = rt.workerID.Bytes()
	}
	return r
}

// ownerNode is the node of id's owner to name in a fetch ("" for a
// borrowed object).
func (rt *core) ownerNode(id ids.ObjectID) string { return rt.owner.ownerNode(id) }

// isRemote reports whether a stored value lives on another node.
func (rt *core) isRemote(v *atollpb.Value) bool {
	n := v.GetStored().GetNodeId()
	return len(n) > 0 && ids.MustFromBytes(n) != rt.nodeID
}

// fetchRemote pulls the stored values among values that live on other
// nodes into this node's store.
func (rt *core) fetchRemote(ctx context.Context, idList []ids.ObjectID, values []*atollpb.Value) error {
	var refs []*atollpb.ObjectRef
	for i, v := range values {
		if rt.isRemote(v) {
			refs = append(refs, rt.ownedRef(idList[i], v))
		}
	}
	if len(refs) == 0 {
		return nil
	}
	return rt.link.fetch(ctx, refs)
}

// putEncoded stores an encoded value as a new object with one reference:
// in the owner's memory if it is small enough to inline and inline
// allows it, else in the object store.
func (rt *core) putEncoded(ctx context.Context, enc codec.Encoded, inline bool) (ids.ObjectID, error) {
	id := rt.newPutID()
	var contained []ids.ObjectID
	if enc.Codec == atollpb.Codec_CODEC_GOB {
		contained = containedRefs(enc.Data)
	}
	producer := telemetry.Inject(ctx)
	if inline && rt.inline(len(enc.Data)) {
		data := enc.Data
		if codec.ElemSize(enc.Codec) != 0 {
			data = append([]byte(nil), data...)
		}
		rt.owner.put(id, &atollpb.Value{Codec: enc.Codec, Kind: &atollpb.Value_Inline{Inline: data}}, producer, contained)
		return id, nil
	}
	if err := rt.store.PutOwned(ctx, id, enc.Codec, enc.Data, rt.workerID); err != nil {
		rt.owner.dropRef(contained...)
		return id, err
	}
	rt.owner.put(id, rt.storedValue(id, enc.Codec, len(enc.Data)), producer, contained)
	return id, nil
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
	return getWith(ctx, ref, func(value *atollpb.Value) (T, error) {
		return decodeValue[T](ctx, ref.h.rt, ref.h, value)
	})
}

// getWith waits for ref's object and decodes its value with decode,
// having the object rebuilt from its lineage when every copy is gone.
func getWith[T, V any](ctx context.Context, ref ObjectRef[T], decode func(*atollpb.Value) (V, error)) (V, error) {
	var zero V
	if ref.h == nil {
		return zero, errs.ZeroRef("Get", -1)
	}
	if err := ref.check(); err != nil {
		return zero, err
	}
	rt := ref.h.rt
	if rt.closed.Load() {
		return zero, errs.ErrShutDown
	}
	for attempt := 0; ; attempt++ {
		value, err := rt.await(ctx, ref.h.id)
		if err != nil {
			return zero, err
		}
		v, err := decode(value)
		if err == nil || attempt == maxReconstructions || !lostFromStore(err, value) {
			return v, err
		}
		// Every copy is gone: have its task run again (lineage), and
		// wait for the new value.
		if rerr := rt.owner.reconstruct(ref.h.id, err); rerr != nil {
			return zero, rerr
		}
	}
}

// maxReconstructions bounds the times one Get has an object rebuilt.
const maxReconstructions = 3

// lostFromStore reports whether err says a stored value's every copy is
// gone (not a task's error that happens to be ObjectLost).
func lostFromStore(err error, value *atollpb.Value) bool {
	return errors.Is(err, errs.ErrObjectLost) && value.GetStored() != nil && value.GetError() == nil &&
		!errors.Is(err, errs.ErrObjectReconstructionFailed)
}

// refHandles returns the handles of refs, or an error naming the first
// zero ref (argument of op).
func refHandles[T any](op string, refs []ObjectRef[T]) ([]*refHandle, error) {
	hs := make([]*refHandle, len(refs))
	for i, r := range refs {
		if r.h == nil {
			return nil, errs.ZeroRef(op, i)
		}
		hs[i] = r.h
	}
	return hs, nil
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
			out[i], err = decodeValue[T](ctx, hs[i].rt, hs[i], v)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// getMany waits for the objects of hs, fetches the stored ones to this
// node with one request and pins them together, then calls decode for
// each in order with its value. If some object's every copy is gone it
// calls decode with a nil value for each instead (a Get, which has lost
// objects rebuilt).
func getMany(ctx context.Context, op string, hs []*refHandle, decode func(i int, v *atollpb.Value) error) error {
	if len(hs) == 0 {
		return nil
	}
	rt, err := running()
	if err != nil {
		return err
	}
	values := make([]*atollpb.Value, len(hs))
	var stored []ids.ObjectID
	var storedValues []*atollpb.Value
	for i, h := range hs {
		if _, err := handleOf(rt, refOfHandle{h}, op, i); err != nil {
			return err
		}
		v, err := rt.await(ctx, h.id)
		if err != nil {
			return err
		}
		values[i] = v
		if v.GetStored() != nil && v.GetError() == nil {
			stored = append(stored, h.id)
			storedValues = append(storedValues, v)
		}
	}
	if len(stored) > 0 {
		if err := rt.fetchRemote(ctx, stored, storedValues); err != nil {
			if !errors.Is(err, errs.ErrObjectLost) {
				return err
			}
			for i := range hs {
				if err := decode(i, nil); err != nil {
					return err
				}
			}
			return nil
		}
	}
	if len(stored) > 1 {
		// Pin them all at once; each decode below then finds its object
		// in memory and takes its own pin.
		if _, err := rt.store.GetWithPriority(ctx, stored, 0, objectstore.PriorityGet); err != nil {
			return err
		}
		defer rt.store.Release(stored...)
	}
	for i := range hs {
		if err := decode(i, values[i]); err != nil {
			return err
		}
	}
	return nil
}

// refOfHandle presents a bare handle as a Ref.
type refOfHandle struct{ h *refHandle }

func (r refOfHandle) ID() string         { return r.h.id.String() }
func (r refOfHandle) handle() *refHandle { return r.h }

// await waits until id has a value.
func (rt *core) await(ctx context.Context, id ids.ObjectID) (*atollpb.Value, error) {
	value, _, done, ok := rt.owner.lookup(id)
	if !ok {
		return nil, &errs.ObjectLostError{ObjectID: id.String(), Message: "no such object (freed?)"}
	}
	if value != nil {
		return value, nil
	}
	defer rt.blocked(ctx)()
	select {
	case <-done:
	case <-ctx.Done():
		return nil, rt.ctxError(ctx, id)
	}
	value, _, _, ok = rt.owner.lookup(id)
	if !ok || value == nil {
		return nil, &errs.ObjectLostError{ObjectID: id.String(), Message: "object freed while waiting"}
	}
	return value, nil
}

// decodeCopy decodes data into a T that does not alias data: flat slices
// and Raw values, which decode as views, get a copy of the bytes first.
func decodeCopy[T any](c atollpb.Codec, data []byte) (T, error) {
	if codec.IsView[T]() {
		data = bytes.Clone(data)
	}
	return codec.Decode[T](c, data)
}

// ctxError is the error of a wait for id that ctx ended: a timeout names
// the task that makes id and where it is.
func (rt *core) ctxError(ctx context.Context, id ids.ObjectID) error {
	if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return ctx.Err()
	}
	e := &errs.GetTimeoutError{ObjectID: id.String()}
	if !id.IsPut() {
		if st, ok := rt.owner.taskState(id.TaskID()); ok {
			e.TaskName, e.TaskID, e.TaskState = st.Name, id.TaskID().String(), st.Describe()
		}
	}
	return e
}

// blocked tells the raylet that the task running under ctx waits, so its
// CPU can run other tasks (a task waiting on its children cannot starve
// them); the returned function says it resumed.
func (rt *core) blocked(ctx context.Context) func() {
	ti, ok := ctx.Value(taskKey{}).(*taskInfo)
	if !ok || ti.actor {
		return func() {}
	}
	rt.link.setBlocked(ti.id, true)
	return func() { rt.link.setBlocked(ti.id, false) }
}

func decodeValue[T any](ctx context.Context, rt *core, h *refHandle, value *atollpb.Value) (T, error) {
	var zero T
	switch {
	case value.GetError() != nil:
		return zero, errs.FromProto(value.GetError())
	case value.GetStored() != nil:
		if rt.isRemote(value) {
			if err := rt.link.fetch(ctx, []*atollpb.ObjectRef{rt.ownedRef(h.id, value)}); err != nil {
				return zero, err
			}
		}
		objs, err := rt.store.GetWithPriority(ctx, []ids.ObjectID{h.id}, 0, objectstore.PriorityGet)
		if err != nil {
			return zero, err
		}
		if len(objs) == 0 || objs[0].Data == nil && objs[0].ID.IsZero() {
			return zero, &errs.ObjectLostError{ObjectID: h.id.String(), Message: "not in the object store"}
		}
		// The value is decoded by copy, so the pin ends here (GetView
		// keeps one for as long as its view lives).
		defer rt.store.Release(h.id)
		return decodeCopy[T](objs[0].Codec, objs[0].Data)
	default:
		return decodeCopy[T](value.Codec, value.GetInline())
	}
}
