package atoll

import (
	"context"
	"fmt"

	"github.com/atoll-runtime/atoll/internal/codec"
	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/runtime"
)

// Ref is an untyped object reference, as Wait takes and returns.
type Ref interface {
	// ID returns the object id in hex.
	ID() string
	handle() *runtime.Ref
}

// ObjectRef is a typed reference to an object in the cluster: the future
// result of a task, or a value put with Put. Copies of an ObjectRef share
// one reference; the object is freed when every reference to it is gone:
// released with Release, or dropped and collected by the Go garbage
// collector (as Python's refcount frees Ray objects).
//
// The zero ObjectRef refers to nothing; using it returns an error.
type ObjectRef[T any] struct {
	h *runtime.Ref
}

// ID returns the object id in hex.
func (r ObjectRef[T]) ID() string {
	if r.h == nil {
		return ""
	}
	return r.h.ID().String()
}

// String renders the reference for logs.
func (r ObjectRef[T]) String() string { return fmt.Sprintf("ObjectRef(%s)", r.ID()) }

// IsZero reports whether r refers to nothing.
func (r ObjectRef[T]) IsZero() bool { return r.h == nil }

// Release drops this reference now instead of waiting for the garbage
// collector. Views returned by Get through it become invalid. Releasing
// twice, or releasing a copy, is a no-op.
func (r ObjectRef[T]) Release() {
	if r.h != nil {
		r.h.Release()
	}
}

func (r ObjectRef[T]) handle() *runtime.Ref { return r.h }

func (r ObjectRef[T]) taskArg() runtime.ArgSource { return runtime.ArgSource{Ref: r.h} }

// ArgOfType makes an ObjectRef[T] an Arg[T]: a reference passes as an
// argument of its type. It does nothing and is not for callers.
func (r ObjectRef[T]) ArgOfType(T) {}

func (r ObjectRef[T]) check() error {
	if r.h == nil {
		return errs.ZeroRef("this call", -1)
	}
	return r.h.Check()
}

// GobEncode lets ObjectRefs travel inside values (a list of refs, a struct
// holding refs). The contained objects stay alive as long as the object
// or task argument holding them does. Encoding a ref yourself with gob
// (outside atoll) keeps its object alive until Shutdown.
func (r ObjectRef[T]) GobEncode() ([]byte, error) {
	if r.h == nil {
		return nil, errs.Invalidf("cannot encode a zero ObjectRef")
	}
	return r.h.Encode()
}

// GobDecode restores a reference; it takes a new reference to the object.
func (r *ObjectRef[T]) GobDecode(b []byte) error {
	h, err := runtime.DecodeRef(b)
	if err != nil {
		return err
	}
	r.h = h
	return nil
}

// Raw is a value as the object store holds it: its codec and its bytes,
// not decoded. A function that takes Raw arguments gets views of the
// stored bytes (valid while the task runs); a Raw it returns is stored as
// it is. Libraries that learn types at run time, such as task graphs
// (package graph), pass values through the SDK this way.
type Raw = codec.Raw

// Retype returns a reference to the same object as r, typed as T: Raw to
// pass it through a function that takes Raw arguments, or the type a Raw
// result holds. Both share one reference: the object lives while either
// is reachable. A T that does not match the object fails at Get, as a
// decode error.
func Retype[T any](r Ref) ObjectRef[T] {
	if r == nil {
		return ObjectRef[T]{}
	}
	return ObjectRef[T]{h: r.handle()}
}

// DecodeRaw decodes r as a T, as a task's typed arguments are decoded:
// refs and actor handles inside it register with the runtime running
// ctx (the task's), and each ref is the caller's to Release. A function
// taking Raw arguments uses it for an argument that carries refs (a gob
// value); the refs inside are lent to the task as a typed argument's
// would be.
func DecodeRaw[T any](ctx context.Context, r Raw) (T, error) {
	rt, err := runtime.Running(ctx)
	if err != nil {
		var zero T
		return zero, err
	}
	return decodeCopy[T](rt, r.Codec, r.Data)
}
