// Command quickstart is a tour of atoll on the embedded local cluster:
// remote functions, object refs passed between tasks, a stateful actor,
// and a large array shared through the object store without copies.
//
//	go run ./samples/quickstart
package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"runtime"
	"time"

	"gonum.org/v1/gonum/floats"

	"github.com/atoll-runtime/atoll"
	"github.com/atoll-runtime/atoll/atolltest"
	"github.com/atoll-runtime/atoll/internal/clusterclient"
	"github.com/atoll-runtime/atoll/internal/nodeconfig"
)

// Remote functions and actor types are registered by name at package
// init, so every process of this binary can run them.
var (
	square = atoll.NewFunc1("quickstart.square", func(_ context.Context, x int) (int, error) {
		return x * x, nil
	})
	total = atoll.NewFunc1("quickstart.total", func(_ context.Context, xs []int) (int, error) {
		s := 0
		for _, x := range xs {
			s += x
		}
		return s, nil
	})
	sum = atoll.NewFunc1("quickstart.sum", func(_ context.Context, xs []float64) (float64, error) {
		return floats.Sum(xs), nil // xs is a zero-copy view of shared memory
	})
	divide = atoll.NewFunc2("quickstart.divide", func(_ context.Context, a, b int) (int, error) {
		if b == 0 {
			return 0, errors.New("division by zero")
		}
		return a / b, nil
	})
)

// Counter is a stateful actor: its methods run one at a time, in the
// order each caller made them.
type Counter struct{ n int }

var (
	counterType = atoll.NewActorType1("quickstart.Counter", func(_ context.Context, start int) (*Counter, error) {
		return &Counter{n: start}, nil
	})
	add = atoll.NewMethod1(counterType, "Add", func(c *Counter, _ context.Context, d int) (int, error) {
		c.n += d
		return c.n, nil
	})
)

func main() {
	if err := run(context.Background()); err != nil {
		log.Fatal(err)
	}
}

func run(ctx context.Context) error {
	start := time.Now()
	if err := atoll.Init(ctx, atoll.WithObjectStoreMemory(1<<30)); err != nil {
		return err
	}
	defer atoll.Shutdown(ctx)
	if addr := atoll.ClusterAddress(); addr != "" {
		st, err := clusterclient.GetStatus(ctx, addr, nodeconfig.Credentials{})
		if err != nil {
			return err
		}
		alive := 0
		for _, n := range st.Nodes {
			if n.Alive && !n.Driver {
				alive++
			}
		}
		fmt.Printf("atoll connected to the cluster at %s: %d nodes (%v)\n", addr, alive, time.Since(start).Round(time.Millisecond))
	} else {
		fmt.Printf("atoll started an embedded cluster: 1 node, %d worker processes, 1 GiB object store (%v)\n",
			runtime.NumCPU(), time.Since(start).Round(time.Millisecond))
	}

	// Tasks: ten squares in parallel, then a task that consumes a value
	// computed from their results.
	refs := make([]atoll.ObjectRef[int], 10)
	for i := range refs {
		refs[i] = square.Remote(ctx, atoll.Value(i))
	}
	squares, err := atoll.GetAll(ctx, refs)
	if err != nil {
		return err
	}
	sumRef := total.Remote(ctx, atoll.Value(squares))
	s, err := atoll.Get(ctx, sumRef)
	if err != nil {
		return err
	}
	fmt.Printf("tasks:   squares of 0..9 = %v, their sum computed remotely = %d\n", squares, s)

	// Errors are typed and carry the task's name.
	_, err = atoll.Get(ctx, divide.Remote(ctx, atoll.Value(1), atoll.Value(0)))
	var te *atoll.TaskError
	if errors.As(err, &te) {
		fmt.Printf("errors:  task %s failed: %s\n", te.TaskName, te.Message)
	}

	// An actor keeps state between calls.
	c, err := counterType.New(ctx, atoll.Value(100), atoll.ActorName("counter"))
	if err != nil {
		return err
	}
	var last atoll.ObjectRef[int]
	for i := 1; i <= 5; i++ {
		last = add.Remote(ctx, c, atoll.Value(i))
	}
	n, err := atoll.Get(ctx, last)
	if err != nil {
		return err
	}
	fmt.Printf("actor:   counter started at 100, after adding 1..5 it holds %d\n", n)

	// A large array is written once into shared memory; every task reads
	// the same pages.
	const elems = 32 << 20 // 256 MiB of float64
	arr, err := atoll.PutWith(ctx, elems, func(xs []float64) {
		for i := range xs {
			xs[i] = 1
		}
	})
	if err != nil {
		return err
	}
	sums := make([]atoll.ObjectRef[float64], 8)
	for i := range sums {
		sums[i] = sum.Remote(ctx, arr)
	}
	got, err := atoll.GetAll(ctx, sums)
	if err != nil {
		return err
	}
	m, err := atolltest.Memory(ctx)
	if err != nil {
		return err
	}
	fmt.Printf("objects: 8 tasks summed one shared 256 MiB array: %v each; store holds %d object(s), %d MiB of %d MiB\n",
		got[0], m.StoreObjects, m.StoreUsed>>20, m.StoreCapacity>>20)
	fmt.Fprintf(os.Stderr, "done in %v\n", time.Since(start).Round(time.Millisecond))
	return nil
}
