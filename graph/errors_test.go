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

// overBudget is a registered error type a graph function returns.
type overBudget struct{ Cents int }

func (e *overBudget) Error() string { return fmt.Sprintf("over budget by %d cents", e.Cents) }

// panicky is a task callback whose PostTask panics.
type panicky struct{}

func (panicky) PreTask(context.Context, graph.TaskInfo) any { return nil }
func (panicky) PostTask(_ context.Context, t graph.TaskInfo, _, _ any) {
	panic("no post-task for " + string(t.Key))
}

func init() {
	atoll.RegisterError[*overBudget]()
	graph.RegisterTaskCallback("t.panicky", panicky{})
}

var (
	_ = graph.Register("t.spend", func(_ context.Context, cents int) (int, error) {
		return 0, fmt.Errorf("spending: %w", &overBudget{Cents: cents})
	})
	_ = graph.Register("t.panic", func(_ context.Context, x int) (int, error) {
		panic(fmt.Sprintf("kaboom %d", x))
	})
)

// registerLate registers a function in the driver only, as a program
// that registers after atoll.Init does: worker processes never know it.
var registerLate = sync.OnceFunc(func() {
	graph.Register("t.late", func(_ context.Context, x int) (int, error) { return x, nil })
})

// The errors of tasks that ran in worker processes are typed in the
// driver: errors.As and errors.Is see through the TaskError.
func TestErrorsFromWorkers(t *testing.T) {
	ctx := start(t)
	registerLate()
	g := graph.Graph{
		"a":     graph.Call("t.inc", graph.Lit(1)),
		"spend": graph.Call("t.spend", graph.Ref("a")),
		"panic": graph.Call("t.panic", graph.Ref("a")),
		"r":     graph.Call("t.range", graph.Lit(0), graph.Lit(3)),
		"past":  graph.Item(graph.Ref("r"), 5),
		"late":  graph.Call("t.late", graph.Ref("a")),
	}
	compute := func(k graph.Key) error {
		_, err := graph.Compute(ctx, g, []graph.Key{k})
		if !errors.Is(err, atoll.ErrTask) {
			t.Fatalf("%s: %v, want a TaskError", k, err)
		}
		return err
	}

	err := compute("spend")
	var fe *graph.FunctionError
	if !errors.As(err, &fe) || fe.Func != "t.spend" || fe.Key != "spend" || fe.Panicked || !strings.Contains(fe.Message, "over budget by 2 cents") {
		t.Fatalf("spend: %v, FunctionError %+v", err, fe)
	}
	var ob *overBudget
	if !errors.As(err, &ob) || ob.Cents != 2 || !errors.Is(err, graph.ErrFunctionFailed) {
		t.Fatalf("spend: the function's own error is lost: %v", err)
	}

	err = compute("panic")
	var te *atoll.TaskError
	if !errors.As(err, &fe) || fe.Func != "t.panic" || !fe.Panicked || fe.Message != "kaboom 2" {
		t.Fatalf("panic: %v, FunctionError %+v", err, fe)
	}
	if !errors.As(err, &te) || te.TaskName != "panic" || !strings.Contains(te.RemoteStack, "graph_test") {
		t.Fatalf("panic: the TaskError does not show where the function panicked: %+v", te)
	}

	err = compute("past")
	if !errors.Is(err, atoll.ErrInvalidArgument) || !strings.Contains(err.Error(), "Item 5 of a []int64 of 3 elements") {
		t.Fatalf("past: %v, want ErrInvalidArgument", err)
	}

	_, err = graph.Compute(ctx, g, []graph.Key{"a"}, graph.WithTaskCallback("t.panicky", ""))
	if !errors.As(err, &fe) || fe.Func != "t.panicky" || fe.Op != "task callback" || fe.Key != "a" || !fe.Panicked || fe.Message != "no post-task for a" {
		t.Fatalf("task callback: %v, FunctionError %+v", err, fe)
	}

	err = compute("late")
	var nr *graph.NotRegisteredError
	if !errors.As(err, &nr) || nr.Name != "t.late" || nr.Kind != "graph function" || !errors.Is(err, atoll.ErrNotFound) {
		t.Fatalf("late: %v, want a NotRegisteredError", err)
	}
}
