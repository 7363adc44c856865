package errs

import (
	"errors"
	"fmt"
	"reflect"
	"runtime"

	"github.com/atoll-runtime/atoll/internal/registry"
)

// Errors of the libraries built on the SDK (graph, data, util), in the
// same table as the core's: each type has a code (atollpb.ErrorCode) and
// a sentinel. They arise in the process running a library's task and
// reach the caller inside the task's TaskError (TASK_ERROR), as any
// task's own error does: the types below and the sentinels of the codes
// INVALID_ARGUMENT, NOT_FOUND, FUNCTION_FAILED and MALFORMED are
// registered in every process (see init), so errors.As and errors.Is find
// them through the TaskError wherever the task ran. The libraries export
// them under their own names (graph.FunctionError, data.FunctionError,
// ...).

var (
	// ErrFunctionFailed matches every FunctionError: a function a library
	// called for the program returned an error or panicked.
	ErrFunctionFailed = errors.New("atoll: function failed")
	// ErrMalformed matches every MalformedError: bytes from another
	// process did not decode. It matches ErrInvalidArgument too.
	ErrMalformed = errors.New("atoll: malformed message")
)

// maxFunctionMessage bounds a FunctionError's message, so that the error
// travels whole (registered values are bounded by MaxRegisteredValue).
const maxFunctionMessage = 8 << 10

// FunctionError: a function that a library calls for the program — a
// task graph's function, a dataset's Map, Filter, FlatMap, MapBatches or
// AddColumn function, a BatchClass's setup — returned an error or
// panicked. Func is the name it was registered under; Op is the dataset
// operation that called it (map, filter, flat_map, map_batches,
// add_column, setup), or in a task graph "task callback" for a task
// callback's method and empty for a graph function; Key is the graph key
// of the task that called it. Message is the function's error text or,
// when Panicked, the panic's value; the TaskError around it holds the
// stack.
//
// In the process that ran the function, Unwrap returns the function's
// error. In the caller, which gets the FunctionError inside the task's
// TaskError, errors.As and errors.Is find the registered error types and
// sentinels (atoll.RegisterError) of that error as for any task's error.
type FunctionError struct {
	Func     string
	Op       string
	Key      string
	Message  string
	Panicked bool
	err      error
	pcs      []uintptr
}

// FunctionFailed wraps err, the error a program's function returned to
// a library. op and key say what called it (see FunctionError).
func FunctionFailed(op, fn, key string, err error) *FunctionError {
	return &FunctionError{Func: fn, Op: op, Key: key, Message: clip(err.Error(), maxFunctionMessage), err: err}
}

// RecoverFunction, deferred by a library around its call of a program's
// function, turns a panic of that function into a FunctionError in *err,
// with the panic's stack (the TaskError's RemoteStack, via StackTrace):
//
//	defer errs.RecoverFunction(&err, "map", name, "")
//
// A library's task thus fails with the function's name, not only with
// the task's.
func RecoverFunction(err *error, op, fn, key string) {
	r := recover()
	if r == nil {
		return
	}
	pcs := make([]uintptr, maxFrames)
	n := runtime.Callers(2, pcs) // from runtime.gopanic down to the panic
	fe := &FunctionError{Func: fn, Op: op, Key: key, Message: clip(fmt.Sprint(r), maxFunctionMessage), Panicked: true, pcs: pcs[:n:n]}
	if e, ok := r.(error); ok {
		fe.err = e
	}
	*err = fe
}

func (e *FunctionError) Error() string {
	what := e.Func
	if e.Op != "" {
		what = e.Op + " " + e.Func
	}
	if e.Panicked {
		return what + " panicked: " + e.Message
	}
	return what + ": " + e.Message
}

// Is matches ErrFunctionFailed.
func (e *FunctionError) Is(target error) bool { return target == ErrFunctionFailed }

// Unwrap returns the function's error (or a panic's value that is an
// error), in the process that ran the function.
func (e *FunctionError) Unwrap() error { return e.err }

// StackTrace is the stack of a panic (nil for a returned error): the
// TaskError around the FunctionError reports it as its RemoteStack.
func (e *FunctionError) StackTrace() []uintptr { return e.pcs }

// MalformedError: bytes that came from another process did not decode or
// broke a bound — What names them: a graph task spec, a dataset task spec,
// a dataset task's metadata, a block — corrupt, or written by a binary of
// another version. It matches ErrMalformed and ErrInvalidArgument.
type MalformedError struct {
	What    string
	Message string
}

// Malformedf returns a MalformedError about what.
func Malformedf(what, format string, args ...any) *MalformedError {
	return &MalformedError{What: what, Message: fmt.Sprintf(format, args...)}
}

func (e *MalformedError) Error() string {
	return "atoll: malformed " + e.What + ": " + e.Message
}

// Is matches ErrMalformed and ErrInvalidArgument.
func (e *MalformedError) Is(target error) bool {
	return target == ErrMalformed || target == ErrInvalidArgument
}

// NotRegisteredError: a library's task names a function (Kind is the
// name of the library's registry kind: "graph function", "graph task
// callback", "data row function"...) that is not registered in the
// binary running the task: it was registered after atoll.Init (worker
// processes run only the package initialisation of the same binary), or
// the worker runs another binary. It matches ErrNotFound. Lookup makes
// it.
type NotRegisteredError struct {
	Kind string
	Name string
}

func (e *NotRegisteredError) Error() string {
	return fmt.Sprintf("atoll: %s %q is not registered in this binary: register it at package level (in a var declaration or an init function), so that every process of the binary knows it", e.Kind, e.Name)
}

// Is matches ErrNotFound.
func (e *NotRegisteredError) Is(target error) bool { return target == ErrNotFound }

// Lookup returns the entry of the library's kind k registered under
// name, or a NotRegisteredError whose Kind is the kind's name.
func Lookup[E any](k *registry.Kind[E], name string) (E, error) {
	e, ok := k.Lookup(name)
	if !ok {
		return e, &NotRegisteredError{Kind: k.Name(), Name: name}
	}
	return e, nil
}

// The libraries' errors and the sentinels of the codes they use travel
// inside task errors in every process of every binary.
func init() {
	for _, t := range []reflect.Type{reflect.TypeFor[*FunctionError](), reflect.TypeFor[*MalformedError](), reflect.TypeFor[*NotRegisteredError]()} {
		if err := RegisterType(t); err != nil {
			panic(err)
		}
	}
	for _, s := range []error{ErrInvalidArgument, ErrNotFound, ErrFunctionFailed, ErrMalformed} {
		if err := RegisterSentinel(s); err != nil {
			panic(err)
		}
	}
}
