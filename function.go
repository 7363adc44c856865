package atoll

import (
	"context"
	"fmt"
	"sync"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/codec"
	"github.com/atoll-runtime/atoll/internal/errs"
)

// Arg is an argument of type T to a remote function or method: either a
// plain value (Value(x)) or an ObjectRef[T], whose value is resolved
// before the function runs.
type Arg[T any] interface {
	taskArg() argSource
	isArg(T)
}

type valueArg[T any] struct{ v T }

func (a valueArg[T]) taskArg() argSource { return argSource{val: a.v} }
func (a valueArg[T]) isArg(T)            {}

// Value passes v by value. Small values travel inside the task message;
// large ones are put in the object store once.
func Value[T any](v T) Arg[T] { return valueArg[T]{v} }

// argData is one resolved argument: its encoding and bytes (a view into
// the object store for stored objects, valid while the task runs).
type argData struct {
	codec atollpb.Codec
	data  []byte
}

// invoker calls a registered function with decoded arguments.
type invoker func(ctx context.Context, args []argData) ([]any, error)

type funcEntry struct {
	name  string
	nargs int
	call  invoker
}

var registry = struct {
	sync.RWMutex
	funcs  map[string]*funcEntry
	actors map[string]*actorTypeEntry
}{funcs: map[string]*funcEntry{}, actors: map[string]*actorTypeEntry{}}

// register adds a function under a unique name. Registration happens at
// package init, so a duplicate is a programming error and panics, as
// http.Handle does.
func register(e *funcEntry) {
	registry.Lock()
	defer registry.Unlock()
	if e.name == "" {
		panic("atoll: a remote function needs a name")
	}
	if _, dup := registry.funcs[e.name]; dup {
		panic(fmt.Sprintf("atoll: remote function %q registered twice", e.name))
	}
	registry.funcs[e.name] = e
}

func lookupFunc(name string) *funcEntry {
	registry.RLock()
	defer registry.RUnlock()
	return registry.funcs[name]
}

func arg[A any](args []argData, i int) (A, error) {
	if i >= len(args) {
		var zero A
		return zero, errs.Invalidf("missing argument %d", i)
	}
	return codec.Decode[A](args[i].codec, args[i].data)
}

func checkArgs(args []argData, n int) error {
	if len(args) != n {
		return errs.Invalidf("got %d arguments, want %d", len(args), n)
	}
	return nil
}

// call submits a normal task and returns its return handles.
func call(ctx context.Context, name string, numReturns int, opts []CallOption, args ...argSource) []*refHandle {
	rt, err := running()
	if err != nil {
		return failedHandles(numReturns, err)
	}
	cc := newCallConfig(opts)
	spec := &atollpb.TaskSpec{
		Type: atollpb.TaskType_NORMAL_TASK, Function: name, Name: cc.name, NumReturns: int32(numReturns),
		MaxRetries: int32(cc.maxRetries), RetryExceptions: cc.retryExceptions,
	}
	spec.Scheduling = cc.scheduling
	if cc.resources != nil {
		spec.Resources = cc.resources.toMap()
	} else {
		spec.Resources = map[string]float64{"CPU": 1}
	}
	return rt.submit(ctx, spec, args, cc, nil)
}

// failedHandles returns n detached handles that report err: a call that
// could not be submitted at all.
func failedHandles(n int, err error) []*refHandle {
	hs := make([]*refHandle, n)
	for i := range hs {
		hs[i] = &refHandle{err: err, state: &handleState{}}
	}
	return hs
}

// Func0 is a registered remote function with no arguments.
type Func0[R any] struct{ name string }

// NewFunc0 registers fn under name. Register at package init (in a var
// declaration) so every process of the binary knows it.
func NewFunc0[R any](name string, fn func(context.Context) (R, error)) *Func0[R] {
	register(&funcEntry{name: name, call: func(ctx context.Context, args []argData) ([]any, error) {
		if err := checkArgs(args, 0); err != nil {
			return nil, err
		}
		r, err := fn(ctx)
		return []any{r}, err
	}})
	return &Func0[R]{name: name}
}

// Remote submits a call and returns a reference to its result.
func (f *Func0[R]) Remote(ctx context.Context, opts ...CallOption) ObjectRef[R] {
	return ObjectRef[R]{h: call(ctx, f.name, 1, opts)[0]}
}

// Func1 is a registered remote function of one argument.
type Func1[A, R any] struct{ name string }

// NewFunc1 registers fn under name (see NewFunc0).
func NewFunc1[A, R any](name string, fn func(context.Context, A) (R, error)) *Func1[A, R] {
	register(&funcEntry{name: name, nargs: 1, call: func(ctx context.Context, args []argData) ([]any, error) {
		if err := checkArgs(args, 1); err != nil {
			return nil, err
		}
		a, err := arg[A](args, 0)
		if err != nil {
			return nil, err
		}
		r, err := fn(ctx, a)
		return []any{r}, err
	}})
	return &Func1[A, R]{name: name}
}

// Remote submits a call and returns a reference to its result.
func (f *Func1[A, R]) Remote(ctx context.Context, a Arg[A], opts ...CallOption) ObjectRef[R] {
	return ObjectRef[R]{h: call(ctx, f.name, 1, opts, a.taskArg())[0]}
}

// Func2 is a registered remote function of two arguments.
type Func2[A, B, R any] struct{ name string }

// NewFunc2 registers fn under name (see NewFunc0).
func NewFunc2[A, B, R any](name string, fn func(context.Context, A, B) (R, error)) *Func2[A, B, R] {
	register(&funcEntry{name: name, nargs: 2, call: func(ctx context.Context, args []argData) ([]any, error) {
		if err := checkArgs(args, 2); err != nil {
			return nil, err
		}
		a, err := arg[A](args, 0)
		if err != nil {
			return nil, err
		}
		b, err := arg[B](args, 1)
		if err != nil {
			return nil, err
		}
		r, err := fn(ctx, a, b)
		return []any{r}, err
	}})
	return &Func2[A, B, R]{name: name}
}

// Remote submits a call and returns a reference to its result.
func (f *Func2[A, B, R]) Remote(ctx context.Context, a Arg[A], b Arg[B], opts ...CallOption) ObjectRef[R] {
	return ObjectRef[R]{h: call(ctx, f.name, 1, opts, a.taskArg(), b.taskArg())[0]}
}

// Func3 is a registered remote function of three arguments.
type Func3[A, B, C, R any] struct{ name string }

// NewFunc3 registers fn under name (see NewFunc0).
func NewFunc3[A, B, C, R any](name string, fn func(context.Context, A, B, C) (R, error)) *Func3[A, B, C, R] {
	register(&funcEntry{name: name, nargs: 3, call: func(ctx context.Context, args []argData) ([]any, error) {
		if err := checkArgs(args, 3); err != nil {
			return nil, err
		}
		a, err := arg[A](args, 0)
		if err != nil {
			return nil, err
		}
		b, err := arg[B](args, 1)
		if err != nil {
			return nil, err
		}
		c, err := arg[C](args, 2)
		if err != nil {
			return nil, err
		}
		r, err := fn(ctx, a, b, c)
		return []any{r}, err
	}})
	return &Func3[A, B, C, R]{name: name}
}

// Remote submits a call and returns a reference to its result.
func (f *Func3[A, B, C, R]) Remote(ctx context.Context, a Arg[A], b Arg[B], c Arg[C], opts ...CallOption) ObjectRef[R] {
	return ObjectRef[R]{h: call(ctx, f.name, 1, opts, a.taskArg(), b.taskArg(), c.taskArg())[0]}
}

// MultiFunc1 is a remote function of one argument with a number of return
// values chosen at each call, each its own object (a shuffle's map task
// returns one partition per reducer).
type MultiFunc1[A, R any] struct{ name string }

// NewMultiFunc1 registers fn under name (see NewFunc0). fn must return
// exactly as many values as the call asked for.
func NewMultiFunc1[A, R any](name string, fn func(context.Context, A) ([]R, error)) *MultiFunc1[A, R] {
	register(&funcEntry{name: name, nargs: 1, call: func(ctx context.Context, args []argData) ([]any, error) {
		if err := checkArgs(args, 1); err != nil {
			return nil, err
		}
		a, err := arg[A](args, 0)
		if err != nil {
			return nil, err
		}
		rs, err := fn(ctx, a)
		return anySlice(rs), err
	}})
	return &MultiFunc1[A, R]{name: name}
}

// Remote submits a call with n return values.
func (f *MultiFunc1[A, R]) Remote(ctx context.Context, n int, a Arg[A], opts ...CallOption) []ObjectRef[R] {
	return typedRefs[R](call(ctx, f.name, n, opts, a.taskArg()))
}

// MultiFunc2 is MultiFunc1 with two arguments.
type MultiFunc2[A, B, R any] struct{ name string }

// NewMultiFunc2 registers fn under name (see NewMultiFunc1).
func NewMultiFunc2[A, B, R any](name string, fn func(context.Context, A, B) ([]R, error)) *MultiFunc2[A, B, R] {
	register(&funcEntry{name: name, nargs: 2, call: func(ctx context.Context, args []argData) ([]any, error) {
		if err := checkArgs(args, 2); err != nil {
			return nil, err
		}
		a, err := arg[A](args, 0)
		if err != nil {
			return nil, err
		}
		b, err := arg[B](args, 1)
		if err != nil {
			return nil, err
		}
		rs, err := fn(ctx, a, b)
		return anySlice(rs), err
	}})
	return &MultiFunc2[A, B, R]{name: name}
}

// Remote submits a call with n return values.
func (f *MultiFunc2[A, B, R]) Remote(ctx context.Context, n int, a Arg[A], b Arg[B], opts ...CallOption) []ObjectRef[R] {
	return typedRefs[R](call(ctx, f.name, n, opts, a.taskArg(), b.taskArg()))
}

func anySlice[R any](rs []R) []any {
	out := make([]any, len(rs))
	for i, r := range rs {
		out[i] = r
	}
	return out
}

func typedRefs[R any](hs []*refHandle) []ObjectRef[R] {
	out := make([]ObjectRef[R], len(hs))
	for i, h := range hs {
		out[i] = ObjectRef[R]{h: h}
	}
	return out
}
