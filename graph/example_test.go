package graph_test

import (
	"context"
	"fmt"

	"github.com/atoll-runtime/atoll"
	"github.com/atoll-runtime/atoll/graph"
)

var (
	_     = graph.Register("ex.inc", func(_ context.Context, x int) (int, error) { return x + 1, nil })
	exAdd = graph.Register2("ex.add", func(_ context.Context, a, b int) (int, error) { return a + b, nil })
)

func Example() {
	ctx := context.Background()
	if err := atoll.Init(ctx, atoll.WithNumCPUs(2), atoll.WithObjectStoreMemory(64<<20),
		atoll.WithWorkerMode(atoll.InProcessWorkers)); err != nil {
		panic(err)
	}
	defer atoll.Shutdown(ctx)

	// Dask's {'x': 1, 'y': (inc, 'x'), 'z': (add, 'y', 10)}.
	g := graph.Graph{
		"x": graph.Lit(1),
		"y": graph.Call("ex.inc", graph.Ref("x")),
		"z": graph.Call("ex.add", graph.Ref("y"), graph.Lit(10)),
	}
	vals, err := graph.Compute(ctx, g, []graph.Key{"z", "y"})
	fmt.Println(vals, err)

	// The same kind of graph, built with typed calls.
	b := graph.NewBuilder()
	x := graph.Const(b, 3)
	sum, err := graph.Apply2(b, exAdd, x, x).Compute(ctx)
	fmt.Println(sum, err)
	// Output:
	// [12 2] <nil>
	// 6 <nil>
}
