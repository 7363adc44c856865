// Package registry is the program's table of everything it registers by
// name: remote functions, actor types and their methods, error types and
// sentinels, and whatever kinds the libraries built on the SDK declare
// (a task graph's functions, a dataset's). Every process of a binary runs
// the same package initialisation, so a name registered at init means the
// same thing in the driver and in every worker process: that is how a
// task spec names the code to run.
//
// A Kind is one namespace of names, holding entries of one Go type:
//
//	var Functions = registry.NewKind[*registry.Func]("remote function")
//
//	registry.Functions.MustAdd("square", &registry.Func{...}) // at package init
//	f, ok := registry.Functions.Lookup("square")             // in the executor
//
// Entries are not generic: an invoker takes its arguments as they come off
// the wire ([]Arg, a codec and bytes each) and returns its results as
// []any, so the executor runs any of them without knowing their Go types;
// the typed wrappers (atoll.NewFunc1 and the like) decode and encode around
// it. Registration is meant for package init: a name taken twice in a
// kind is a programming error, and MustAdd panics, as http.Handle does.
// Lookups take a read lock; registration after init is allowed but rare.
//
// The kinds, each its own namespace: the SDK's Functions, ActorTypes,
// Methods, ErrorTypes and Sentinels (below); package graph's "graph
// function" and "graph task callback"; package data's "data batch
// function", "data row function", "data predicate", "data column
// function", "data flat-map function" and "data batch class" (package
// util registers only into the SDK's). A library keeps its kinds
// unexported behind its Register functions and looks names up with
// errs.Lookup, whose miss is the errs.NotRegisteredError naming the
// kind. No other package keeps a table of names of its own (the
// repository rule internal/lint TestOneRegistry).
package registry

import (
	"context"
	"fmt"
	"os"
	"reflect"
	"slices"
	"sync"

	"github.com/atoll-runtime/atoll/atollpb"
)

// Kind is one namespace of registered names, with entries of type E.
// Declare kinds as package variables (NewKind); the zero Kind is not
// usable.
type Kind[E any] struct {
	name string

	mu     sync.RWMutex
	byName map[string]E
	// sorted holds the entries in name order. It is replaced, never
	// changed, by Add, so All can hand it out without copying.
	sorted []named[E]
}

type named[E any] struct {
	name  string
	entry E
}

// NewKind returns an empty kind; name says what its entries are, in
// messages ("remote function", "graph function").
func NewKind[E any](name string) *Kind[E] {
	return &Kind[E]{name: name, byName: map[string]E{}}
}

// Name is what the kind's entries are.
func (k *Kind[E]) Name() string { return k.name }

// DuplicateError is Add's error for a name the kind holds already.
type DuplicateError struct {
	Kind string
	Name string
	// Existing is the entry registered first (an E).
	Existing any
}

func (e *DuplicateError) Error() string {
	return fmt.Sprintf("atoll: %s %q registered twice", e.Kind, e.Name)
}

// Add registers e under name. An empty name, or one the kind holds
// already, is refused (*DuplicateError for the latter).
func (k *Kind[E]) Add(name string, e E) error {
	if name == "" {
		return fmt.Errorf("atoll: every %s needs a name", k.name)
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if prev, dup := k.byName[name]; dup {
		return &DuplicateError{Kind: k.name, Name: name, Existing: prev}
	}
	k.byName[name] = e
	i, _ := slices.BinarySearchFunc(k.sorted, name, func(n named[E], name string) int {
		switch {
		case n.name < name:
			return -1
		case n.name > name:
			return 1
		}
		return 0
	})
	k.sorted = slices.Insert(slices.Clip(k.sorted), i, named[E]{name, e})
	return nil
}

// MustAdd is Add for registrations at package init: it panics on a name
// that is empty or taken.
func (k *Kind[E]) MustAdd(name string, e E) {
	if err := k.Add(name, e); err != nil {
		panic(err.Error())
	}
}

// Lookup returns the entry registered under name.
func (k *Kind[E]) Lookup(name string) (E, bool) {
	k.mu.RLock()
	defer k.mu.RUnlock()
	e, ok := k.byName[name]
	return e, ok
}

// All calls yield with each entry in name order until it returns false.
// Entries registered meanwhile may or may not be seen.
func (k *Kind[E]) All(yield func(name string, e E) bool) {
	k.mu.RLock()
	sorted := k.sorted
	k.mu.RUnlock()
	for _, n := range sorted {
		if !yield(n.name, n.entry) {
			return
		}
	}
}

// Len is the number of entries.
func (k *Kind[E]) Len() int {
	k.mu.RLock()
	defer k.mu.RUnlock()
	return len(k.byName)
}

// NotRegistered says that the process running a task does not know
// name, a what ("remote function", "method of actor type T"), and the
// usual cause: a registration that runs only in the driver, after Init
// (inside main or a function it calls), which worker processes re-executing
// the binary never reach.
func NotRegistered(what, name string) string {
	return fmt.Sprintf("%s %q is not registered in the worker binary (%s): register it at package level "+
		"(var f = atoll.NewFunc1(...), or in an init function), not after atoll.Init: worker processes run the same binary "+
		"but only its package initialisation, so registrations made later in main exist only in the driver", what, name, binaryName())
}

// binaryName is this program's path, as the process runs it.
func binaryName() string {
	p, err := os.Executable()
	if err != nil {
		return os.Args[0]
	}
	return p
}

// Arg is one argument of a call as the executor resolved it: its codec
// and its bytes (a view of the object store for a stored object, valid
// while the call runs).
type Arg struct {
	Codec atollpb.Codec
	Data  []byte
	// Scope is the decode scope of the runtime running the task: the
	// refs and actor handles the value holds register with it
	// (internal/runtime.DecodeIn); nil: the process's current runtime.
	Scope any
}

// Invoker calls a registered function with its arguments and returns its
// results appended to out (room its caller keeps, so that a call of one
// result needs no slice of its own).
type Invoker func(ctx context.Context, args []Arg, out []any) ([]any, error)

// Func is a remote function (atoll.NewFunc0..6, MultiFunc, FuncN,
// GenFunc).
type Func struct {
	// NumArgs is the arguments it takes; -1 for any number (FuncN).
	NumArgs int
	Invoke  Invoker
}

// ActorType is an actor type: its Go type and its constructor.
type ActorType struct {
	Name   string
	GoType reflect.Type
	New    func(ctx context.Context, args []Arg) (any, error)
}

// Method is a method of an actor type, registered under the name
// "Type.Method" (MethodName).
type Method struct {
	Invoke func(ctx context.Context, instance any, args []Arg, out []any) ([]any, error)
}

// MethodName is the name a method is registered under, and the function
// an actor call's spec names: the actor type's name, a dot, the method's.
func MethodName(actorType, method string) string { return actorType + "." + method }

// SplitMethod splits a MethodName at its last dot (actor type names may
// hold dots; method names do not).
func SplitMethod(fn string) (actorType, method string) {
	for i := len(fn) - 1; i >= 0; i-- {
		if fn[i] == '.' {
			return fn[:i], fn[i+1:]
		}
	}
	return fn, ""
}

// ErrorType is an error type registered with atoll.RegisterError: its
// values travel gob-encoded inside task errors (see internal/errs).
type ErrorType struct {
	Type reflect.Type
	// Empty: a struct with no fields (gob cannot encode it; its value
	// carries nothing).
	Empty bool
}

// The kinds of the SDK. Libraries declare their own with NewKind.
var (
	// Functions are the remote functions, by name.
	Functions = NewKind[*Func]("remote function")
	// ActorTypes are the actor types, by name.
	ActorTypes = NewKind[*ActorType]("actor type")
	// Methods are the actor types' methods, by MethodName.
	Methods = NewKind[*Method]("actor method")
	// ErrorTypes are the error types RegisterError registered, by the
	// name they travel under (errs.TypeName).
	ErrorTypes = NewKind[*ErrorType]("error type")
	// Sentinels are the sentinel errors RegisterError registered, by
	// their message.
	Sentinels = NewKind[error]("error sentinel")
)
