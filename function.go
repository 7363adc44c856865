package atoll

import (
	"context"
	"fmt"
	"sync"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/codec"
	"github.com/atoll-runtime/atoll/internal/errs"
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
	taskArg() argSource
}

type valueArg[T any] struct{ v T }

func (a valueArg[T]) taskArg() argSource { return argSource{val: a.v} }

// ArgOfType implements Arg[T].
func (a valueArg[T]) ArgOfType(T) {}

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

// call submits a normal task and returns its return handles: bound are
// the function's options (Options), opts the call's.
func call(ctx context.Context, name string, numReturns int, bound, opts []TaskOption, args ...argSource) []*refHandle {
	rt, err := running()
	if err != nil {
		return failedHandles(numReturns, err)
	}
	cc := taskConfig(bound, opts)
	if err := checkRetries(cc); err != nil {
		return failedHandles(numReturns, err)
	}
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
