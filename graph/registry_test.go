package graph_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/atoll-runtime/atoll"
	"github.com/atoll-runtime/atoll/graph"
)

// mustPanic runs f and checks that it panics with a message holding want.
func mustPanic(t *testing.T, want string, f func()) {
	t.Helper()
	defer func() {
		t.Helper()
		if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), want) {
			t.Errorf("panic %v, want one saying %q", r, want)
		}
	}()
	f()
}

var (
	_ = graph.Register("t.dup", func(_ context.Context, x int) (int, error) { return x, nil })
	_ = graph.Register2("t.dup2", func(_ context.Context, a, b int) (int, error) { return a + b, nil })
)

func init() {
	graph.RegisterTaskCallback("t.dupCallback", recorder{})
	// A function and a task callback may share a name: two namespaces.
	graph.RegisterTaskCallback("t.dup", recorder{})
}

// A name taken twice in a kind panics, whatever its signature, through
// every registration function; the two kinds are separate namespaces
// (init registers t.dup in both).
func TestDuplicateRegistrationPanics(t *testing.T) {
	inc := func(_ context.Context, x int) (int, error) { return x + 1, nil }
	mustPanic(t, `atoll: graph function "t.dup" registered twice`, func() { graph.Register("t.dup", inc) })
	mustPanic(t, `atoll: graph function "t.dup" registered twice`, func() { graph.Register1("t.dup", inc) })
	mustPanic(t, `atoll: graph function "t.dup2" registered twice`, func() {
		graph.Register2("t.dup2", func(_ context.Context, a, b string) (string, error) { return a + b, nil })
	})
	mustPanic(t, `atoll: graph task callback "t.dupCallback" registered twice`, func() {
		graph.RegisterTaskCallback("t.dupCallback", panicky{})
	})
	mustPanic(t, `atoll: every graph function needs a name`, func() { graph.Register("", inc) })
	mustPanic(t, `atoll: every graph task callback needs a name`, func() { graph.RegisterTaskCallback("", recorder{}) })
	mustPanic(t, `graph: RegisterTaskCallback("t.nil"): a nil callback`, func() { graph.RegisterTaskCallback("t.nil", nil) })
}

// registerLateCallback registers a task callback in the driver only, as
// a program that registers after atoll.Init does.
var registerLateCallback = sync.OnceFunc(func() { graph.RegisterTaskCallback("t.lateCallback", recorder{}) })

// A name nobody registered is a NotRegisteredError in the driver (before
// anything is submitted); one registered in the driver only is a
// NotRegisteredError from the worker process that looked it up.
func TestNotRegistered(t *testing.T) {
	isNotRegistered := func(t *testing.T, err error, kind, name string) {
		t.Helper()
		var nr *graph.NotRegisteredError
		if !errors.As(err, &nr) || nr.Kind != kind || nr.Name != name || !errors.Is(err, atoll.ErrNotFound) {
			t.Fatalf("%v, want a NotRegisteredError for the %s %q", err, kind, name)
		}
	}

	// In the driver: Validate, and Compute's check of its task callbacks.
	err := graph.Validate(graph.Graph{"a": graph.Call("t.nobody", graph.Lit(1))}, "a")
	isNotRegistered(t, err, "graph function", "t.nobody")
	var ue *graph.UnregisteredFuncError
	if !errors.As(err, &ue) || !errors.Is(err, atoll.ErrInvalidArgument) {
		t.Fatalf("Validate: %v, want an UnregisteredFuncError too", err)
	}

	ctx := start(t)
	g := graph.Graph{"a": graph.Call("t.inc", graph.Lit(1))}
	_, err = graph.Compute(ctx, g, []graph.Key{"a"}, graph.WithTaskCallback("t.nobody", ""))
	isNotRegistered(t, err, "graph task callback", "t.nobody")
	if !errors.Is(err, atoll.ErrInvalidArgument) || errors.Is(err, atoll.ErrTask) {
		t.Fatalf("unknown task callback: %v, want an invalid argument and no task run", err)
	}

	// From a worker process.
	registerLateCallback()
	_, err = graph.Compute(ctx, g, []graph.Key{"a"}, graph.WithTaskCallback("t.lateCallback", ""))
	isNotRegistered(t, err, "graph task callback", "t.lateCallback")
	if !errors.Is(err, atoll.ErrTask) {
		t.Fatalf("late task callback: %v, want a TaskError from the worker", err)
	}
	registerLate() // t.late, as in TestErrorsFromWorkers
	_, err = graph.Compute(ctx, graph.Graph{"a": graph.Call("t.late", graph.Lit(1))}, []graph.Key{"a"})
	isNotRegistered(t, err, "graph function", "t.late")
	if !errors.Is(err, atoll.ErrTask) {
		t.Fatalf("late function: %v, want a TaskError from the worker", err)
	}
}
