package graph

import (
	"context"
	"fmt"
	"reflect"

	"github.com/atoll-runtime/atoll/internal/registry"
)

// Func is a function registered with Register: graph tasks name it.
type Func struct {
	name     string
	fn       reflect.Value
	params   []reflect.Type // without the context
	variadic bool
	ret      reflect.Type
}

// Name returns the name the function was registered under.
func (f *Func) Name() string { return f.name }

// Type returns the function's Go type.
func (f *Func) Type() reflect.Type { return f.fn.Type() }

var (
	ctxType   = reflect.TypeFor[context.Context]()
	errorType = reflect.TypeFor[error]()
)

// The graph's kinds of the program's registry (internal/registry), one
// namespace each: the functions graph tasks call, and the task callbacks.
var (
	funcs         = registry.NewKind[*Func]("graph function")
	taskCallbacks = registry.NewKind[TaskCallback]("graph task callback")
)

// Register registers fn under name for use in graph tasks. fn must be a
// func(context.Context, A1, ..., An) (R, error), variadic allowed, with a
// concrete (non-interface) R. Register at package init (in a var
// declaration), so every process of the binary knows it; a bad signature,
// an empty name or a duplicate name panics, as atoll.NewFunc1 does
// ("atoll: graph function %q registered twice").
func Register(name string, fn any) *Func {
	f, err := newFunc(name, fn)
	if err != nil {
		panic("graph: " + err.Error())
	}
	funcs.MustAdd(name, f)
	return f
}

func newFunc(name string, fn any) (*Func, error) {
	v := reflect.ValueOf(fn)
	if v.Kind() != reflect.Func || v.IsNil() {
		return nil, fmt.Errorf("Register(%q): %T is not a function", name, fn)
	}
	t := v.Type()
	if t.NumIn() < 1 || t.In(0) != ctxType {
		return nil, fmt.Errorf("Register(%q): %v: the first parameter must be a context.Context", name, t)
	}
	if t.NumOut() != 2 || t.Out(1) != errorType {
		return nil, fmt.Errorf("Register(%q): %v: must return (R, error)", name, t)
	}
	if t.Out(0).Kind() == reflect.Interface {
		return nil, fmt.Errorf("Register(%q): %v: the result type must be concrete, not an interface", name, t)
	}
	f := &Func{name: name, fn: v, variadic: t.IsVariadic(), ret: t.Out(0)}
	for i := 1; i < t.NumIn(); i++ {
		f.params = append(f.params, t.In(i))
	}
	return f, nil
}

// TaskInfo describes the graph task a TaskCallback runs around.
type TaskInfo struct {
	// Key is the key of the submitted task (of the outermost task, when
	// fusion folded a chain into it).
	Key Key
	// Hash identifies the task's computation by content: its expression
	// and, recursively, those of its dependencies. Equal hashes mean equal
	// results for deterministic functions.
	Hash string
	// Param is the string given with WithTaskCallback.
	Param string
}

// TaskCallback runs in the process that executes a graph task — a worker
// process, usually — around the task's function (Dask-on-Ray's
// ray_pretask and ray_posttask). Register it by name with
// RegisterTaskCallback at package init and name it in WithTaskCallback.
type TaskCallback interface {
	// PreTask runs before the task; what it returns is passed to PostTask.
	PreTask(ctx context.Context, t TaskInfo) any
	// PostTask runs after the task succeeded, with its result (argument
	// views of the object store are still valid here).
	PostTask(ctx context.Context, t TaskInfo, result any, state any)
}

// RegisterTaskCallback registers cb under name (at package init, like
// Register); an empty name or a duplicate one panics ("atoll: graph task
// callback %q registered twice").
func RegisterTaskCallback(name string, cb TaskCallback) {
	if cb == nil {
		panic(fmt.Sprintf("graph: RegisterTaskCallback(%q): a nil callback", name))
	}
	taskCallbacks.MustAdd(name, cb)
}
