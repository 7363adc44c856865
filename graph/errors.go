package graph

import (
	"fmt"
	"reflect"
	"strings"

	"github.com/atoll-runtime/atoll"
	"github.com/atoll-runtime/atoll/internal/errs"
)

// Errors. Validate, Compute and Persist check a graph in the driver before
// they submit anything: what is wrong with it is a CycleError,
// MissingKeyError, UnregisteredFuncError or ArgTypeError, each matching
// atoll.ErrInvalidArgument. What fails while a task runs comes back as
// the task's atoll.TaskError, and errors.As and errors.Is see through it
// to the errors below, wherever the task ran: FunctionError when a
// registered function returned an error or panicked (with the function's
// own registered errors, see atoll.RegisterError), MalformedError when a
// task spec did not decode, NotRegisteredError when the worker's binary
// lacks a function, and errors matching atoll.ErrInvalidArgument when a
// value does not fit (an Item past the end of a slice, say).

type (
	// FunctionError: a registered function returned an error or panicked
	// (Panicked), or a task callback's method panicked (Op is then "task
	// callback"). Func is its name, Key the graph key of the task that
	// called it, Message its error's text or the panic's value. It
	// matches ErrFunctionFailed.
	FunctionError = errs.FunctionError
	// MalformedError: a task spec did not decode in the worker (corrupt,
	// or from a binary of another version). It matches ErrMalformed and
	// atoll.ErrInvalidArgument.
	MalformedError = errs.MalformedError
	// NotRegisteredError: the process running a task has no function
	// (Kind "graph function") or task callback ("graph task callback")
	// of the name the task calls: it was registered after atoll.Init, or
	// the worker runs another binary. In the driver, Compute reports an
	// unknown task callback as one (matching atoll.ErrInvalidArgument
	// too), and an unknown function as an UnregisteredFuncError wrapping
	// one. It matches atoll.ErrNotFound.
	NotRegisteredError = errs.NotRegisteredError
)

var (
	// ErrFunctionFailed matches every FunctionError.
	ErrFunctionFailed = errs.ErrFunctionFailed
	// ErrMalformed matches every MalformedError.
	ErrMalformed = errs.ErrMalformed
)

// CycleError: the graph has a cycle. Keys are the keys on it, in
// dependency order: each depends on the next, and the last on the first.
type CycleError struct{ Keys []Key }

func (e *CycleError) Error() string {
	parts := make([]string, len(e.Keys))
	for i, k := range e.Keys {
		parts[i] = string(k)
	}
	return "graph: cycle: " + strings.Join(parts, " -> ") + " -> " + string(e.Keys[0])
}

// Is matches atoll.ErrInvalidArgument.
func (e *CycleError) Is(target error) bool { return target == atoll.ErrInvalidArgument }

// MissingKeyError: a key is referred to (From, or requested when From is
// empty) but not in the graph.
type MissingKeyError struct {
	Key  Key
	From Key
}

func (e *MissingKeyError) Error() string {
	if e.From == "" {
		return fmt.Sprintf("graph: key %q is not in the graph", e.Key)
	}
	return fmt.Sprintf("graph: key %q refers to %q, which is not in the graph", e.From, e.Key)
}

// Is matches atoll.ErrInvalidArgument.
func (e *MissingKeyError) Is(target error) bool { return target == atoll.ErrInvalidArgument }

// UnregisteredFuncError: a task (in key Key) calls a function no Register
// call registered. It matches atoll.ErrInvalidArgument (the graph is
// invalid) and atoll.ErrNotFound, and wraps the NotRegisteredError of the
// lookup, so errors.As finds a NotRegisteredError (Kind "graph function")
// whether the driver or a worker did not know the function.
type UnregisteredFuncError struct {
	Func string
	Key  Key
}

func (e *UnregisteredFuncError) Error() string {
	return fmt.Sprintf("graph: key %q calls %q, which is not registered (graph.Register)", e.Key, e.Func)
}

// Is matches atoll.ErrInvalidArgument and atoll.ErrNotFound.
func (e *UnregisteredFuncError) Is(target error) bool {
	return target == atoll.ErrInvalidArgument || target == atoll.ErrNotFound
}

// Unwrap returns the NotRegisteredError of the lookup.
func (e *UnregisteredFuncError) Unwrap() error {
	return &NotRegisteredError{Kind: funcs.Name(), Name: e.Func}
}

// ArgTypeError: an argument does not fit its parameter, or an expression
// does not fit where it is (Reason says how). Index is the argument's
// index in the call of Func (-1 for the call as a whole: its arity); Want
// is the parameter's type and Got the argument's (either may be nil).
type ArgTypeError struct {
	Key    Key
	Func   string
	Index  int
	Want   reflect.Type
	Got    reflect.Type
	Reason string
}

func (e *ArgTypeError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "graph: key %q", e.Key)
	if e.Func != "" {
		fmt.Fprintf(&b, ": %s", e.Func)
		if e.Index >= 0 {
			fmt.Fprintf(&b, " argument %d", e.Index)
		}
	}
	if e.Want != nil || e.Got != nil {
		fmt.Fprintf(&b, ": want %v, got %v", typeName(e.Want), typeName(e.Got))
	}
	if e.Reason != "" {
		fmt.Fprintf(&b, ": %s", e.Reason)
	}
	return b.String()
}

// Is matches atoll.ErrInvalidArgument.
func (e *ArgTypeError) Is(target error) bool { return target == atoll.ErrInvalidArgument }
