package atoll

import (
	"context"
	"slices"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/codec"
	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/registry"
	"github.com/atoll-runtime/atoll/internal/runtime"
	"github.com/atoll-runtime/atoll/internal/specpack"
)

//go:generate go run ./internal/gen/funcs

// Arg is an argument of type T to a remote function, method or actor
// constructor: either a plain value, Value(x), or an ObjectRef[T], whose
// value is resolved before the function runs. The compiler checks the
// type: an ObjectRef[int] where an Arg[string] is wanted fails with
//
//	ObjectRef[int] does not implement Arg[string] (wrong type for method ArgOfType)
//		have ArgOfType(int)
//		want ArgOfType(string)
//
// and a plain value (Remote(ctx, 7)) with "int does not implement
// Arg[int] (missing method ArgOfType)": wrap it, atoll.Value(7).
type Arg[T any] interface {
	// ArgOfType marks the implementation as an argument of type T. It
	// does nothing and is not for callers; it is named so that the
	// compiler's message for a wrong argument says which type was
	// wanted.
	ArgOfType(T)
	taskArg() runtime.ArgSource
}

type valueArg[T any] struct{ v T }

func (a valueArg[T]) taskArg() runtime.ArgSource { return runtime.ArgSource{Val: a.v} }

// ArgOfType implements Arg[T].
func (a valueArg[T]) ArgOfType(T) {}

// Value passes v by value. Small values travel inside the task message;
// large ones are put in the object store once.
func Value[T any](v T) Arg[T] { return valueArg[T]{v} }

// register registers a remote function of nargs arguments (-1: any
// number) under name; a duplicate name panics (registration happens at
// package init, so a duplicate is a programming error, as with
// http.Handle).
func register(name string, nargs int, call registry.Invoker) {
	registry.Functions.MustAdd(name, &registry.Func{NumArgs: nargs, Invoke: call})
}

func arg[A any](args []registry.Arg, i int) (A, error) {
	if i >= len(args) {
		var zero A
		return zero, errs.Invalidf("missing argument %d", i)
	}
	// Refs and actor handles inside the value register with the runtime
	// running the task (its decode scope).
	rt, _ := args[i].Scope.(*runtime.Runtime)
	var a A
	err := runtime.DecodeIn(rt, args[i].Codec, args[i].Data, func() (err error) {
		a, err = codec.Decode[A](args[i].Codec, args[i].Data)
		return err
	})
	return a, err
}

func checkArgs(args []registry.Arg, n int) error {
	if len(args) != n {
		return errs.Invalidf("got %d arguments, want %d", len(args), n)
	}
	return nil
}

// call submits a normal task and returns its return handles: bound are
// the function's options (Options), opts the call's.
func call(ctx context.Context, name string, numReturns int, bound, opts []TaskOption, args ...runtime.ArgSource) []*runtime.Ref {
	return callInto(nil, ctx, name, numReturns, bound, opts, args...)
}

// call1 is call of a function with one return, without a slice.
func call1(ctx context.Context, name string, bound, opts []TaskOption, args ...runtime.ArgSource) *runtime.Ref {
	var one [1]*runtime.Ref
	return callInto(one[:0], ctx, name, 1, bound, opts, args...)[0]
}

// callInto is call, its refs appended to dst.
func callInto(dst []*runtime.Ref, ctx context.Context, name string, numReturns int, bound, opts []TaskOption, args ...runtime.ArgSource) []*runtime.Ref {
	rt, err := runtime.Running(ctx)
	if err != nil {
		return runtime.FailedRefs(numReturns, err)
	}
	cc := taskConfig(bound, opts)
	if err := checkRetries(&cc); err != nil {
		return runtime.FailedRefs(numReturns, err)
	}
	spec := specpack.NewSpec() // Submit recycles it once the task is packed
	spec.Type, spec.Function, spec.Name, spec.NumReturns = atollpb.TaskType_NORMAL_TASK, name, cc.name, int32(numReturns)
	spec.MaxRetries, spec.RetryExceptions, spec.RetryErrors = int32(cc.maxRetries), cc.retryExceptions, cc.retryErrors
	spec.Scheduling = cc.scheduling
	if cc.resources != nil {
		spec.Resources = cc.resources.toMap()
	} else {
		spec.Resources = oneCPU
	}
	if err := cc.checkGroup(spec.Resources); err != nil {
		return runtime.FailedRefs(numReturns, err)
	}
	return rt.Submit(ctx, dst, spec, args, cc.release, nil)
}

// appendAll appends rs to out.
func appendAll[R any](out []any, rs []R) []any {
	out = slices.Grow(out, len(rs))
	for _, r := range rs {
		out = append(out, r)
	}
	return out
}

func typedRefs[R any](hs []*runtime.Ref) []ObjectRef[R] {
	out := make([]ObjectRef[R], len(hs))
	for i, h := range hs {
		out[i] = ObjectRef[R]{h: h}
	}
	return out
}

// FuncN is a registered remote function of any number of arguments of one
// type, chosen at each call.
type FuncN[A, R any] struct {
	name string
	opts []TaskOption
}

// NewFuncN registers fn under name (see NewFunc0).
func NewFuncN[A, R any](name string, fn func(context.Context, []A) (R, error)) *FuncN[A, R] {
	register(name, -1, func(ctx context.Context, args []registry.Arg, out []any) ([]any, error) {
		as, err := argsOf[A](args)
		if err != nil {
			return nil, err
		}
		r, err := fn(ctx, as)
		return append(out, r), err
	})
	return &FuncN[A, R]{name: name}
}

// Remote submits a call with args and returns a reference to its result.
func (f *FuncN[A, R]) Remote(ctx context.Context, args []Arg[A], opts ...TaskOption) ObjectRef[R] {
	srcs, err := argSources(args)
	if err != nil {
		return ObjectRef[R]{h: runtime.FailedRef(err)}
	}
	return ObjectRef[R]{h: call1(ctx, f.name, f.opts, opts, srcs...)}
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
	register(name, -1, func(ctx context.Context, args []registry.Arg, out []any) ([]any, error) {
		as, err := argsOf[A](args)
		if err != nil {
			return nil, err
		}
		rs, err := fn(ctx, as)
		return appendAll(out, rs), err
	})
	return &MultiFuncN[A, R]{name: name}
}

// Remote submits a call with args and n return values.
func (f *MultiFuncN[A, R]) Remote(ctx context.Context, n int, args []Arg[A], opts ...TaskOption) []ObjectRef[R] {
	srcs, err := argSources(args)
	if err != nil {
		return typedRefs[R](runtime.FailedRefs(n, err))
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
	registerMethod(t, name, func(ctx context.Context, instance any, args []registry.Arg, out []any) ([]any, error) {
		self, err := instanceOf[T](instance)
		if err != nil {
			return nil, err
		}
		as, err := argsOf[A](args)
		if err != nil {
			return nil, err
		}
		rs, err := fn(self, ctx, as)
		return appendAll(out, rs), err
	})
	return &MultiMethodN[T, A, R]{name: name}
}

// Remote calls the method on the actor h with args and n return values
// (see Method0.Remote).
func (m *MultiMethodN[T, A, R]) Remote(ctx context.Context, h ActorHandle[T], n int, args []Arg[A], opts ...MethodOption) []ObjectRef[R] {
	srcs, err := argSources(args)
	if err != nil {
		return typedRefs[R](runtime.FailedRefs(n, err))
	}
	return typedRefs[R](callActor(ctx, h.st, m.name, n, m.opts, opts, srcs...))
}

// Options returns the method with opts bound (see Method1.Options).
func (m *MultiMethodN[T, A, R]) Options(opts ...MethodOption) *MultiMethodN[T, A, R] {
	return &MultiMethodN[T, A, R]{name: m.name, opts: bind(m.opts, opts)}
}

func argsOf[A any](args []registry.Arg) ([]A, error) {
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

func argSources[A any](args []Arg[A]) ([]runtime.ArgSource, error) {
	out := make([]runtime.ArgSource, len(args))
	for i, a := range args {
		if a == nil {
			return nil, errs.Invalidf("argument %d is nil: use atoll.Value or an ObjectRef", i)
		}
		out[i] = a.taskArg()
	}
	return out, nil
}
