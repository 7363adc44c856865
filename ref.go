package atoll

import (
	"bytes"
	"fmt"
	"runtime"
	"sync/atomic"

	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/ids"
)

// Ref is an untyped object reference, as Wait takes and returns.
type Ref interface {
	// ID returns the object id in hex.
	ID() string
	handle() *refHandle
}

// ObjectRef is a typed reference to an object in the cluster: the future
// result of a task, or a value put with Put. Copies of an ObjectRef share
// one reference; the object is freed when every reference to it is gone:
// released with Release, or dropped and collected by the Go garbage
// collector (as Python's refcount frees Ray objects).
//
// The zero ObjectRef refers to nothing; using it returns an error.
type ObjectRef[T any] struct {
	h *refHandle
}

// refHandle is the heap object whose lifetime is the reference's lifetime.
type refHandle struct {
	id ids.ObjectID
	rt *core
	// err is set on detached handles: a call that failed before it could
	// register anything (atoll not initialised).
	err error
	// state is shared with the cleanup so it can see an explicit release
	// and drop a pin held for zero-copy views.
	state *handleState
}

type handleState struct {
	released atomic.Bool
}

type cleanupArg struct {
	id    ids.ObjectID
	rt    *core
	state *handleState
}

// newHandle wraps an already counted reference to id.
func newHandle(rt *core, id ids.ObjectID) *refHandle {
	h := &refHandle{id: id, rt: rt, state: &handleState{}}
	runtime.AddCleanup(h, func(a cleanupArg) { a.rt.refCollected(a.id, a.state) }, cleanupArg{id, rt, h.state})
	return h
}

// refCollected runs on the Go runtime's cleanup goroutine when a handle is
// garbage: it only queues the drop and posts a message to the owner actor,
// which drops the reference (see collected).
func (rt *core) refCollected(id ids.ObjectID, st *handleState) {
	if rt.closed.Load() {
		return
	}
	if rt.collected.add(id, st) {
		rt.system.Root.Send(rt.ownerPID, &drainCollected{})
	}
}

// dropRef releases one handle's reference exactly once, now (Release).
func (rt *core) dropRef(id ids.ObjectID, st *handleState) {
	if !st.released.CompareAndSwap(false, true) || rt.closed.Load() {
		return
	}
	rt.owner.dropRef(id)
}

// ID returns the object id in hex.
func (r ObjectRef[T]) ID() string {
	if r.h == nil {
		return ""
	}
	return r.h.id.String()
}

// String renders the reference for logs.
func (r ObjectRef[T]) String() string { return fmt.Sprintf("ObjectRef(%s)", r.ID()) }

// IsZero reports whether r refers to nothing.
func (r ObjectRef[T]) IsZero() bool { return r.h == nil }

// Release drops this reference now instead of waiting for the garbage
// collector. Views returned by Get through it become invalid. Releasing
// twice, or releasing a copy, is a no-op.
func (r ObjectRef[T]) Release() {
	if r.h != nil && r.h.rt != nil {
		r.h.rt.dropRef(r.h.id, r.h.state)
	}
}

func (r ObjectRef[T]) handle() *refHandle { return r.h }

func (r ObjectRef[T]) taskArg() argSource { return argSource{ref: r.h} }

// ArgOfType makes an ObjectRef[T] an Arg[T]: a reference passes as an
// argument of its type. It does nothing and is not for callers.
func (r ObjectRef[T]) ArgOfType(T) {}

func (r ObjectRef[T]) check() error {
	if r.h == nil {
		return errs.ZeroRef("this call", -1)
	}
	if r.h.err != nil {
		return r.h.err
	}
	if r.h.state.released.Load() {
		return errs.Invalidf("ObjectRef %s used after Release", r.h.id.Short())
	}
	return nil
}

// refMarker prefixes a serialised ObjectRef, so that the refs contained in
// an encoded value can be found and kept alive with it.
var refMarker = []byte("\x00atoll-objectref\x00")

// GobEncode lets ObjectRefs travel inside values (a list of refs, a struct
// holding refs). The contained objects stay alive as long as the object
// or task argument holding them does. Encoding a ref yourself with gob
// (outside atoll) keeps its object alive until Shutdown.
func (r ObjectRef[T]) GobEncode() ([]byte, error) {
	if r.h == nil || r.h.rt == nil {
		return nil, errs.Invalidf("cannot encode a zero ObjectRef")
	}
	// The encoded form is a reference of its own, held by whatever holds
	// the bytes (an object, a task's arguments) until it is freed.
	if !r.h.rt.owner.addRef(r.h.id) {
		return nil, &errs.ObjectLostError{ObjectID: r.h.id.String(), Message: "encoding a reference to a freed object"}
	}
	return append(append([]byte(nil), refMarker...), r.h.id[:]...), nil
}

// GobDecode restores a reference; it takes a new reference to the object.
func (r *ObjectRef[T]) GobDecode(b []byte) error {
	if !bytes.HasPrefix(b, refMarker) {
		return errs.Invalidf("malformed ObjectRef encoding")
	}
	id, err := ids.ObjectIDFromBytes(b[len(refMarker):])
	if err != nil {
		return err
	}
	rt := current()
	if rt == nil {
		return errs.ErrNotInitialized
	}
	if !rt.owner.addRef(id) {
		return &errs.ObjectLostError{ObjectID: id.String(), Message: "decoded a reference to an object that no longer exists"}
	}
	r.h = newHandle(rt, id)
	if rt.isWorker {
		rt.decoded.add(r.h) // dropped at its task's end if unreachable (borrow.go)
	}
	return nil
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
