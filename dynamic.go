package atoll

import (
	"context"

	"github.com/atoll-runtime/atoll/internal/codec"
	"github.com/atoll-runtime/atoll/internal/errs"
)

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

// FuncN is a registered remote function of any number of arguments of one
// type, chosen at each call.
type FuncN[A, R any] struct {
	name string
	opts []TaskOption
}

// NewFuncN registers fn under name (see NewFunc0).
func NewFuncN[A, R any](name string, fn func(context.Context, []A) (R, error)) *FuncN[A, R] {
	register(&funcEntry{name: name, nargs: -1, call: func(ctx context.Context, args []argData) ([]any, error) {
		as, err := argsOf[A](args)
		if err != nil {
			return nil, err
		}
		r, err := fn(ctx, as)
		return []any{r}, err
	}})
	return &FuncN[A, R]{name: name}
}

// Remote submits a call with args and returns a reference to its result.
func (f *FuncN[A, R]) Remote(ctx context.Context, args []Arg[A], opts ...TaskOption) ObjectRef[R] {
	srcs, err := argSources(args)
	if err != nil {
		return ObjectRef[R]{h: failedHandles(1, err)[0]}
	}
	return ObjectRef[R]{h: call(ctx, f.name, 1, f.opts, opts, srcs...)[0]}
}

// Options returns the function with opts bound (see Func1.Options).
func (f *FuncN[A, R]) Options(opts ...TaskOption) *FuncN[A, R] {
	return &FuncN[A, R]{name: f.name, opts: bind(f.opts, opts)}
}

// MultiFuncN is FuncN with a number of return values chosen at each call,
// each its own object (see MultiFunc1).
type MultiFuncN[A, R any] struct {
	name string
	opts []TaskOption
}

// NewMultiFuncN registers fn under name (see NewMultiFunc1).
func NewMultiFuncN[A, R any](name string, fn func(context.Context, []A) ([]R, error)) *MultiFuncN[A, R] {
	register(&funcEntry{name: name, nargs: -1, call: func(ctx context.Context, args []argData) ([]any, error) {
		as, err := argsOf[A](args)
		if err != nil {
			return nil, err
		}
		rs, err := fn(ctx, as)
		return anySlice(rs), err
	}})
	return &MultiFuncN[A, R]{name: name}
}

// Remote submits a call with args and n return values.
func (f *MultiFuncN[A, R]) Remote(ctx context.Context, n int, args []Arg[A], opts ...TaskOption) []ObjectRef[R] {
	srcs, err := argSources(args)
	if err != nil {
		return typedRefs[R](failedHandles(n, err))
	}
	return typedRefs[R](call(ctx, f.name, n, f.opts, opts, srcs...))
}

// Options returns the function with opts bound (see Func1.Options).
func (f *MultiFuncN[A, R]) Options(opts ...TaskOption) *MultiFuncN[A, R] {
	return &MultiFuncN[A, R]{name: f.name, opts: bind(f.opts, opts)}
}

// MultiMethodN is an actor method of any number of arguments of one
// type with a number of return values chosen at each call, each its own
// object: MultiFuncN's counterpart on actors.
type MultiMethodN[T, A, R any] struct {
	name string
	opts []MethodOption
}

// NewMultiMethodN registers fn as method name of actor type t.
func NewMultiMethodN[T, A, R any](t ActorClass[T], name string, fn func(T, context.Context, []A) ([]R, error)) *MultiMethodN[T, A, R] {
	registerMethod(t.actorType().entry, name, func(ctx context.Context, instance any, args []argData) ([]any, error) {
		self, err := instanceOf[T](instance)
		if err != nil {
			return nil, err
		}
		as, err := argsOf[A](args)
		if err != nil {
			return nil, err
		}
		rs, err := fn(self, ctx, as)
		return anySlice(rs), err
	})
	return &MultiMethodN[T, A, R]{name: name}
}

// Remote calls the method on the actor h with args and n return values
// (see Method0.Remote).
func (m *MultiMethodN[T, A, R]) Remote(ctx context.Context, h ActorHandle[T], n int, args []Arg[A], opts ...MethodOption) []ObjectRef[R] {
	srcs, err := argSources(args)
	if err != nil {
		return typedRefs[R](failedHandles(n, err))
	}
	return typedRefs[R](callActor(ctx, h.st, m.name, n, m.opts, opts, srcs...))
}

// Options returns the method with opts bound (see Method1.Options).
func (m *MultiMethodN[T, A, R]) Options(opts ...MethodOption) *MultiMethodN[T, A, R] {
	return &MultiMethodN[T, A, R]{name: m.name, opts: bind(m.opts, opts)}
}

func argsOf[A any](args []argData) ([]A, error) {
	as := make([]A, len(args))
	for i := range args {
		a, err := arg[A](args, i)
		if err != nil {
			return nil, err
		}
		as[i] = a
	}
	return as, nil
}

func argSources[A any](args []Arg[A]) ([]argSource, error) {
	out := make([]argSource, len(args))
	for i, a := range args {
		if a == nil {
			return nil, errs.Invalidf("argument %d is nil: use atoll.Value or an ObjectRef", i)
		}
		out[i] = a.taskArg()
	}
	return out, nil
}
