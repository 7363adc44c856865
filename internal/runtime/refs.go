package runtime

import (
	"bytes"
	"sync"
	"sync/atomic"

	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/ids"
	"github.com/atoll-runtime/atoll/internal/owner"
)

// Ref is one reference to an object, the heap object behind an SDK ref
// (atoll.ObjectRef): its lifetime is the reference's. Copies of the SDK
// ref share it; when it is released, or found unreachable by the garbage
// collector, its runtime's owner table drops the reference.
type Ref struct {
	// state is everything but err: what the sweep that finds the ref
	// dead (refwatch.go) reads once the ref is gone.
	state *refState
	// err is set on detached refs: a call that failed before it could
	// register anything (atoll not initialised).
	err error
}

// refState is a ref's id, runtime and release, kept beside the ref's weak
// pointer in refWatch so that the sweep sees an explicit release.
type refState struct {
	id       ids.ObjectID
	released atomic.Bool
	rt       *Runtime
	// rec is id's record in rt's owner table when the ref was made with
	// it (a task's return): Get reads it without a lookup by id.
	rec owner.Record
}

// newRef wraps an already counted reference to id.
func (rt *Runtime) newRef(id ids.ObjectID) *Ref { return rt.newRefAt(id, owner.Record{}) }

// newRefAt is newRef of a reference that came with id's record.
func (rt *Runtime) newRefAt(id ids.ObjectID, rec owner.Record) *Ref { return rt.newRefIn(nil, id, rec) }

// newRefIn is newRefAt with the ref's state in st, zero storage of the
// caller's (a submitted task's, submitBlock); nil st makes one.
func (rt *Runtime) newRefIn(st *refState, id ids.ObjectID, rec owner.Record) *Ref {
	if st == nil {
		st = new(refState)
	}
	st.id, st.rt, st.rec = id, rt, rec
	h := refRecords.get()
	h.state = st
	if rt.sim != nil {
		rt.simTrack(h) // not watched: when it dies depends on the collector (sim.go)
		return h
	}
	refWatch.add(h)
	return h
}

// refRecords hands out the Ref records of newRef: allocated ahead in
// batches, handed out last first.
//
// The Go runtime keeps an object's weak pointer record (as it does a
// cleanup) in a list per span of memory, sorted by address, and finds a
// new record's place by walking that list from its start. Refs allocated
// one at a time take ascending addresses in their span, so each ref's
// record walked past every ref already there (up to ~340 of these
// 24-byte records in an 8 KiB span): 4% of a driver's CPU per pipelined
// task. Handed out in descending address order, each ref's place is at
// its list's start (TestRefRecordsDescend).
var refRecords refAllocator

type refAllocator struct {
	mu   sync.Mutex
	free []*Ref
}

// refBatch is how many records refAllocator makes at once: several spans'
// worth, so that few spans are shared between two batches (96 KiB).
const refBatch = 4096

func (a *refAllocator) get() *Ref {
	a.mu.Lock()
	if len(a.free) == 0 {
		if cap(a.free) < refBatch {
			a.free = make([]*Ref, 0, refBatch)
		}
		for range refBatch {
			a.free = append(a.free, new(Ref))
		}
	}
	n := len(a.free) - 1
	h := a.free[n]
	a.free[n] = nil
	a.free = a.free[:n]
	a.mu.Unlock()
	return h
}

// FailedRef returns a detached ref that reports err: a call that could
// not be submitted at all.
func FailedRef(err error) *Ref { return &Ref{err: err, state: &refState{}} }

// FailedRefs returns n detached refs that report err.
func FailedRefs(n int, err error) []*Ref {
	hs := make([]*Ref, n)
	for i := range hs {
		hs[i] = FailedRef(err)
	}
	return hs
}

// Runtime is the runtime the ref belongs to (nil for a detached ref).
func (h *Ref) Runtime() *Runtime { return h.state.rt }

// ID is the object's id (zero for a detached ref).
func (h *Ref) ID() ids.ObjectID { return h.state.id }

// Err is the error of a detached ref, else nil.
func (h *Ref) Err() error { return h.err }

// Released reports whether the ref was released.
func (h *Ref) Released() bool { return h.state.released.Load() }

// Check returns why the ref cannot be read: a detached ref's error, or
// its release.
func (h *Ref) Check() error {
	if h.err != nil {
		return h.err
	}
	if h.state.released.Load() {
		return errs.Invalidf("ObjectRef %s used after Release", h.ID().Short())
	}
	return nil
}

// Release drops the ref's reference now, exactly once (the SDK's
// Release).
func (h *Ref) Release() {
	rt := h.state.rt
	if rt == nil || !h.state.released.CompareAndSwap(false, true) || rt.closed.Load() {
		return
	}
	rt.owner.dropRef(h.ID())
}

// refMarker prefixes a serialised ref, so that the refs contained in an
// encoded value can be found and kept alive with it.
var refMarker = []byte("\x00atoll-objectref\x00")

// Encode is the ref's gob encoding: a reference of its own, held by
// whatever holds the bytes (an object, a task's arguments) until it is
// freed.
func (h *Ref) Encode() ([]byte, error) {
	if h.state.rt == nil {
		return nil, errs.Invalidf("cannot encode a zero ObjectRef")
	}
	if !h.state.rt.owner.addRef(h.ID()) {
		return nil, &errs.ObjectLostError{ObjectID: h.ID().String(), Message: "encoding a reference to a freed object"}
	}
	return append(append([]byte(nil), refMarker...), h.state.id[:]...), nil
}

// DecodeRef restores a ref Encode made, in the runtime of the decode scope
// (decode.go), else the process's current one; it takes a new reference
// to the object.
func DecodeRef(b []byte) (*Ref, error) {
	if !bytes.HasPrefix(b, refMarker) {
		return nil, errs.Invalidf("malformed ObjectRef encoding")
	}
	id, err := ids.ObjectIDFromBytes(b[len(refMarker):])
	if err != nil {
		return nil, err
	}
	rt := decodeRuntime()
	if rt == nil {
		return nil, errs.ErrNotInitialized
	}
	if !rt.owner.addRef(id) {
		return nil, &errs.ObjectLostError{ObjectID: id.String(), Message: "decoded a reference to an object that no longer exists"}
	}
	h := rt.newRef(id)
	rt.role.refDecoded(h) // a worker process drops it at its task's end if unreachable (borrow.go)
	return h, nil
}

// containedRefs finds the refs serialised in an encoded value.
func containedRefs(data []byte) []ids.ObjectID {
	var out []ids.ObjectID
	for {
		i := bytes.Index(data, refMarker)
		if i < 0 || len(data) < i+len(refMarker)+ids.ObjectIDLen {
			return out
		}
		data = data[i+len(refMarker):]
		out = append(out, ids.MustObjectID(data[:ids.ObjectIDLen]))
		data = data[ids.ObjectIDLen:]
	}
}
