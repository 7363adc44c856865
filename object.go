package atoll

import (
	"context"
	"errors"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/codec"
	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/ids"
	"github.com/atoll-runtime/atoll/internal/telemetry"
	"github.com/atoll-runtime/atoll/objectstore"
	"github.com/atoll-runtime/atoll/owner"
)

// Put stores v as an object owned by this process and returns a reference
// to it. Values up to the inline threshold live in the owner's memory;
// larger ones are copied once into the node's shared-memory object store.
// Flat numeric slices ([]byte, []float64, []float32, []int64, []int32)
// are stored raw and read back as zero-copy views; protobuf messages use
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
// first, Get fails with a GetTimeoutError (errors.Is(err, ErrGetTimeout)).
//
// Flat numeric slices are returned as views into shared memory, with no
// copy: the view stays valid while ref is reachable and not released, and
// must not be modified.
func Get[T any](ctx context.Context, ref ObjectRef[T]) (T, error) {
	var zero T
	if err := ref.check(); err != nil {
		return zero, err
	}
	rt := ref.h.rt
	if rt.closed.Load() {
		return zero, errs.ErrNotInitialized
	}
	for attempt := 0; ; attempt++ {
		value, err := rt.await(ctx, ref.h.id)
		if err != nil {
			return zero, err
		}
		v, err := decodeValue[T](ctx, rt, ref.h, value)
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

// GetAll gets every ref in order; it fails with the first error. Objects
// in the store are fetched with one request, so spilled ones are restored
// together rather than one round trip at a time.
func GetAll[T any](ctx context.Context, refs []ObjectRef[T]) ([]T, error) {
	out := make([]T, len(refs))
	values := make([]*atollpb.Value, len(refs))
	var stored []ids.ObjectID
	var storedValues []*atollpb.Value
	for i, r := range refs {
		if err := r.check(); err != nil {
			return nil, err
		}
		if r.h.rt.closed.Load() {
			return nil, errs.ErrNotInitialized
		}
		v, err := r.h.rt.await(ctx, r.h.id)
		if err != nil {
			return nil, err
		}
		values[i] = v
		if v.GetStored() != nil && v.GetError() == nil {
			stored = append(stored, r.h.id)
			storedValues = append(storedValues, v)
		}
	}
	if len(stored) > 0 {
		if err := refs[0].h.rt.fetchRemote(ctx, stored, storedValues); err != nil {
			if !errors.Is(err, errs.ErrObjectLost) {
				return nil, err
			}
			// Some object's copies are all gone: Get each, which has
			// lost objects rebuilt.
			for i, r := range refs {
				if out[i], err = Get(ctx, r); err != nil {
					return nil, err
				}
			}
			return out, nil
		}
	}
	if len(stored) > 1 {
		// Pin them all at once; each Get below then finds its object in
		// memory and takes its own pin.
		rt := refs[0].h.rt
		if _, err := rt.store.GetWithPriority(ctx, stored, 0, objectstore.PriorityGet); err != nil {
			return nil, err
		}
		defer rt.store.Release(stored...)
	}
	for i, r := range refs {
		v, err := decodeValue[T](ctx, r.h.rt, r.h, values[i])
		if err != nil {
			return nil, err
		}
		out[i] = v
	}
	return out, nil
}

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
		return nil, ctxError(ctx, id)
	}
	value, _, _, ok = rt.owner.lookup(id)
	if !ok || value == nil {
		return nil, &errs.ObjectLostError{ObjectID: id.String(), Message: "object freed while waiting"}
	}
	return value, nil
}

func ctxError(ctx context.Context, id ids.ObjectID) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return &errs.GetTimeoutError{ObjectID: id.String()}
	}
	return ctx.Err()
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
		v, err := codec.Decode[T](objs[0].Codec, objs[0].Data)
		// A view keeps the object pinned while its handle lives; anything
		// decoded by copy releases the pin at once.
		if err != nil || !codec.IsView[T]() || !h.state.pinned.CompareAndSwap(false, true) {
			rt.store.Release(h.id)
		}
		return v, err
	default:
		return codec.Decode[T](value.Codec, value.GetInline())
	}
}

// Wait waits until numReady of refs are ready (have a value or an error),
// or timeout passes (a negative timeout waits without limit), or ctx ends.
// It returns the ready refs, at most numReady, in input order, and the
// rest. It does not fail on a timeout: fewer refs are ready.
func Wait(ctx context.Context, refs []Ref, numReady int, timeout time.Duration) (ready, notReady []Ref, err error) {
	rt, err := running()
	if err != nil {
		return nil, refs, err
	}
	if numReady < 0 || numReady > len(refs) {
		return nil, refs, errs.Invalidf("Wait: numReady %d out of range [0, %d]", numReady, len(refs))
	}
	// A zero or foreign ref counts as ready: Get reports its error.
	idl := make([]ids.ObjectID, len(refs))
	local := make([]bool, len(refs))
	for i, r := range refs {
		if h := r.handle(); h != nil && h.rt == rt {
			idl[i], local[i] = h.id, true
		}
	}
	isReady := make([]bool, len(refs))
	count := func() int { return rt.owner.readiness(idl, local, isReady) }
	if count() < numReady {
		signal := make(chan struct{}, len(refs))
		w := &owner.Waiter{C: signal}
		rt.owner.do(func(t *owner.Table) {
			for i, id := range idl {
				if local[i] {
					t.Watch(id, w)
				}
			}
		})
		defer rt.owner.do(func(t *owner.Table) { t.Unwatch(w) })
		var expire <-chan time.Time
		if timeout >= 0 {
			timer := time.NewTimer(timeout)
			defer timer.Stop()
			expire = timer.C
		}
		unblock := rt.blocked(ctx)
	loop:
		for count() < numReady {
			select {
			case <-signal:
				for len(signal) > 0 { // count once for a burst of results
					<-signal
				}
			case <-expire:
				break loop
			case <-ctx.Done():
				unblock()
				return nil, refs, ctx.Err()
			}
		}
		unblock()
	}
	for i, r := range refs {
		if len(ready) < numReady && isReady[i] {
			ready = append(ready, r)
		} else {
			notReady = append(notReady, r)
		}
	}
	return ready, notReady, nil
}

// Cancel cancels the task that produces ref: a task not yet running never
// runs; a running one sees its context cancelled. Get on its results then
// fails with a CancelledError. Calls already sent to an actor are not
// cancelled. Cancelling a finished task or a Put object does nothing.
func Cancel(ref Ref) error {
	h := ref.handle()
	if h == nil || h.rt == nil {
		return errs.Invalidf("Cancel: zero ref")
	}
	if h.id.IsPut() {
		return nil
	}
	h.rt.cancelTask(h.id.TaskID())
	return nil
}
