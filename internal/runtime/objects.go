package runtime

import (
	"context"
	"errors"
	goruntime "runtime"

	"go.opentelemetry.io/otel/attribute"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/codec"
	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/ids"
	"github.com/atoll-runtime/atoll/internal/objectstore"
	"github.com/atoll-runtime/atoll/internal/owner"
	"github.com/atoll-runtime/atoll/internal/telemetry"
)

// Put stores v as an object owned by this process (atoll.Put) and returns
// a ref to it.
func (rt *Runtime) Put(ctx context.Context, v any) (*Ref, error) {
	span := noSpan
	if rt.spanning(ctx) {
		ctx, span = rt.tracer.Start(ctx, "put")
		defer span.End()
	}
	enc, err := codec.Encode(v)
	if err != nil {
		return nil, err
	}
	id, rec, err := rt.putEncoded(ctx, enc, true)
	if err != nil {
		return nil, err
	}
	span.SetAttributes(attribute.String("atoll.object_id", id.String()), attribute.Int("atoll.size_bytes", len(enc.Data)))
	return rt.newRefAt(id, rec), nil
}

// Creation is an object being written in place (atoll.PutWith): Data is
// its memory, inline or in the node's store, until Seal or Abort.
type Creation struct {
	rt     *Runtime
	ctx    context.Context
	id     ids.ObjectID
	codec  atollpb.Codec
	stored bool
	// Data is where the object's bytes go: fill it before Seal (a stored
	// object's is a view of the store, with the arena's alignment).
	Data []byte
}

// Inline reports whether a value of n bytes stays inline in the owner.
func (rt *Runtime) Inline(n int) bool { return rt.inline(n) }

// Create starts an object of size bytes with codec c, stored in the
// node's store unless inline says it stays in the owner's memory.
func (rt *Runtime) Create(ctx context.Context, size int, c atollpb.Codec, inline bool) (*Creation, error) {
	cr := &Creation{rt: rt, ctx: ctx, id: rt.newPutID(), codec: c, stored: !inline}
	if inline {
		return cr, nil // the SDK fills Data with the encoded value
	}
	buf, err := rt.store.CreateOwned(ctx, cr.id, uint64(size), c, rt.workerID)
	if err != nil {
		return nil, err
	}
	cr.Data = buf
	return cr, nil
}

// ID is the new object's id.
func (c *Creation) ID() ids.ObjectID { return c.id }

// Abort drops a stored creation that will not be sealed.
func (c *Creation) Abort() {
	if c.stored {
		_ = c.rt.store.Abort(c.ctx, c.id)
	}
}

// Seal makes the object readable and returns a ref to it.
func (c *Creation) Seal() (*Ref, error) {
	rt := c.rt
	if !c.stored {
		rec := rt.owner.put(c.id, &atollpb.Value{Codec: c.codec, Kind: &atollpb.Value_Inline{Inline: c.Data}}, telemetry.Inject(c.ctx), nil)
		return rt.newRefAt(c.id, rec), nil
	}
	if err := rt.store.Seal(c.ctx, c.id); err != nil {
		return nil, err
	}
	rec := rt.owner.put(c.id, rt.storedValue(c.id, c.codec, len(c.Data)), telemetry.Inject(c.ctx), nil)
	return rt.newRefAt(c.id, rec), nil
}

func (rt *Runtime) newPutID() ids.ObjectID { return ids.PutObjectID(rt.putTask, rt.putSeq.Add(1)) }

// storedValue is the value of an object stored in this node's store.
func (rt *Runtime) storedValue(id ids.ObjectID, c atollpb.Codec, size int) *atollpb.Value {
	return &atollpb.Value{Codec: c, Kind: &atollpb.Value_Stored{Stored: &atollpb.ObjectLocation{ObjectId: id.Bytes(), Length: uint64(size), Codec: c, NodeId: rt.nodeID.Bytes()}}}
}

// refOf is the reference to a stored object with its location and its
// owner's node (ownerNode, hex; "" if unknown), for a fetch.
func refOf(id ids.ObjectID, v *atollpb.Value, ownerNode string) *atollpb.ObjectRef {
	st := v.GetStored()
	return &atollpb.ObjectRef{ObjectId: id.Bytes(), NodeId: st.GetNodeId(), Codec: st.GetCodec(), Size: st.GetLength(), OwnerAddress: ownerNode}
}

// ownedRef is refOf for an object this process owns.
func (rt *Runtime) ownedRef(id ids.ObjectID, v *atollpb.Value) *atollpb.ObjectRef {
	r := refOf(id, v, rt.owner.ownerNode(id))
	if r.OwnerAddress != "" {
		r.OwnerId = rt.workerID.Bytes()
	}
	return r
}

// isRemote reports whether a stored value lives on another node.
func (rt *Runtime) isRemote(v *atollpb.Value) bool {
	n := v.GetStored().GetNodeId()
	return len(n) > 0 && ids.MustFromBytes(n) != rt.nodeID
}

// fetchRemote pulls the stored values among values that live on other
// nodes into this node's store.
func (rt *Runtime) fetchRemote(ctx context.Context, idList []ids.ObjectID, values []*atollpb.Value) error {
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
// allows it, else in the object store. It returns the object's id and its
// record in the owner table, for the ref made with that reference.
func (rt *Runtime) putEncoded(ctx context.Context, enc codec.Encoded, inline bool) (ids.ObjectID, owner.Record, error) {
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
		rec := rt.owner.put(id, &atollpb.Value{Codec: enc.Codec, Kind: &atollpb.Value_Inline{Inline: data}}, producer, contained)
		return id, rec, nil
	}
	if err := rt.store.PutOwned(ctx, id, enc.Codec, enc.Data, rt.workerID); err != nil {
		rt.owner.dropRef(contained...)
		return id, owner.Record{}, err
	}
	rec := rt.owner.put(id, rt.storedValue(id, enc.Codec, len(enc.Data)), producer, contained)
	return id, rec, nil
}

// Get waits for h's object and calls decode with its value, having the
// object rebuilt from its lineage when every copy is gone (decode's error
// says so) and decoding again, at most maxReconstructions times.
func Get(ctx context.Context, h *Ref, decode func(*atollpb.Value) error) (err error) {
	defer func() {
		if err != nil {
			signalDeath.hold(ctx)
		}
	}()
	if err := h.Check(); err != nil {
		return err
	}
	rt := h.state.rt
	if rt.closed.Load() {
		return errs.ErrShutDown
	}
	for attempt := 0; ; attempt++ {
		value, err := rt.await(ctx, h)
		if err != nil {
			return err
		}
		err = decode(value)
		if err == nil || attempt == maxReconstructions || !lostFromStore(err, value) {
			return err
		}
		// Every copy is gone: have its task run again (lineage), and
		// wait for the new value.
		if rerr := rt.owner.reconstruct(h.ID(), err); rerr != nil {
			return rerr
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

// GetMany waits for the objects of hs (checked with op's name), fetches
// the stored ones to this node with one request and pins them together,
// then calls decode for each in order with its value. If some object's
// every copy is gone it calls decode with a nil value for each instead
// (the SDK then Gets it, which has lost objects rebuilt).
func (rt *Runtime) GetMany(ctx context.Context, op string, hs []*Ref, decode func(i int, v *atollpb.Value) error) (err error) {
	defer func() {
		if err != nil {
			signalDeath.hold(ctx)
		}
	}()
	if len(hs) == 0 {
		return nil
	}
	values := make([]*atollpb.Value, len(hs))
	var stored []ids.ObjectID
	var storedValues []*atollpb.Value
	for i, h := range hs {
		if err := rt.CheckRef(h, op, i); err != nil {
			return err
		}
		v, err := rt.await(ctx, h)
		if err != nil {
			return err
		}
		values[i] = v
		if v.GetStored() != nil && v.GetError() == nil {
			stored = append(stored, h.ID())
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

// await waits until h's object has a value.
func (rt *Runtime) await(ctx context.Context, h *Ref) (*atollpb.Value, error) {
	id, rec := h.state.id, h.state.rec
	value, ok := rt.owner.valueOf(id, rec)
	if !ok {
		return nil, &errs.ObjectLostError{ObjectID: id.String(), Message: "no such object (freed?)"}
	}
	if value != nil {
		return value, nil
	}
	defer rt.blocked(ctx)()
	if lone := rt.loneOf(); lone != nil {
		// A task or actor call written alone to an idle worker: its
		// result is read by this goroutine if the connection's reader
		// paused (no hand-off), and then no done channel is made. Waiting
		// otherwise, this goroutine has any connection claimed meanwhile
		// woken.
		has := func() bool { v, _ := rt.owner.valueOf(id, rec); return v != nil }
		if !id.IsPut() && lone.Await(ctx, id.TaskID(), has) {
			if value, ok = rt.owner.valueOf(id, rec); ok && value != nil {
				return value, nil
			}
		}
		lone.Park()
		defer lone.Unpark()
	}
	value, _, done, ok := rt.owner.lookupRecord(id, rec)
	if !ok {
		return nil, &errs.ObjectLostError{ObjectID: id.String(), Message: "object freed while waiting"}
	}
	if value != nil {
		return value, nil
	}
	if rt.sim != nil { // the closure only where it is used
		rt.park(func() bool { return isDone(done) || ctx.Err() != nil })
	}
	select {
	case <-done:
	case <-ctx.Done():
		return nil, rt.ctxError(ctx, id)
	}
	value, _, _, ok = rt.owner.lookupRecord(id, rec)
	if !ok || value == nil {
		return nil, &errs.ObjectLostError{ObjectID: id.String(), Message: "object freed while waiting"}
	}
	return value, nil
}

// Pin pins the stored object h's value names in this node's store,
// fetched from another node first, and returns it; the caller releases
// the pin with Unpin.
func (h *Ref) Pin(ctx context.Context, value *atollpb.Value) (objectstore.Object, error) {
	rt := h.state.rt
	if rt.isRemote(value) {
		if err := rt.link.fetch(ctx, []*atollpb.ObjectRef{rt.ownedRef(h.ID(), value)}); err != nil {
			return objectstore.Object{}, err
		}
	}
	objs, err := rt.store.GetWithPriority(ctx, []ids.ObjectID{h.ID()}, 0, objectstore.PriorityGet)
	if err != nil {
		return objectstore.Object{}, err
	}
	if len(objs) == 0 || objs[0].Data == nil && objs[0].ID.IsZero() {
		return objectstore.Object{}, &errs.ObjectLostError{ObjectID: h.ID().String(), Message: "not in the object store"}
	}
	return objs[0], nil
}

// Unpin releases a pin Pin took.
func (h *Ref) Unpin() { h.state.rt.store.Release(h.ID()) }

// ctxError is the error of a wait for id that ctx ended: a timeout names
// the task that makes id and where it is.
func (rt *Runtime) ctxError(ctx context.Context, id ids.ObjectID) error {
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
func (rt *Runtime) blocked(ctx context.Context) func() {
	ti, ok := ctx.Value(taskKey{}).(*taskInfo)
	if !ok || ti.actor {
		return func() {}
	}
	rt.link.setBlocked(ti.id, true)
	return func() { rt.link.setBlocked(ti.id, false) }
}

// SetReplicas asks the head's Active Memory Manager to keep n copies of
// h's object (atoll.SetReplicas).
func (d *Driver) SetReplicas(ctx context.Context, h *Ref, n int) error {
	defer goruntime.KeepAlive(h) // the object lives while the AMM is asked
	g, err := d.clusterGateway("SetReplicas")
	if err != nil {
		return err
	}
	return g.SetReplicas(ctx, h.ID(), n)
}
