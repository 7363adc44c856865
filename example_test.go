package atoll_test

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/atoll-runtime/atoll"
)

// Remote functions and actor types are registered at package init, so
// every process of the binary knows them by name.
var (
	exSquare = atoll.NewFunc1("example.square", func(_ context.Context, x int) (int, error) { return x * x, nil })
	exJoin   = atoll.NewFunc3("example.join", func(_ context.Context, sep string, a, b []string) (string, error) {
		return strings.Join(append(a, b...), sep), nil
	})
	exSplit = atoll.NewMultiFunc1("example.split", func(_ context.Context, xs []int) ([]int, error) {
		return xs, nil // one result per element: the caller asks for len(xs)
	})
	exFail = atoll.NewFunc1("example.fail", func(_ context.Context, msg string) (int, error) { return 0, errors.New(msg) })
)

type exCounter struct{ n int }

var (
	exCounterType = atoll.NewActorType1("example.Counter", func(_ context.Context, start int) (*exCounter, error) {
		return &exCounter{n: start}, nil
	})
	exAdd = atoll.NewMethod1(exCounterType, "Add", func(c *exCounter, _ context.Context, d int) (int, error) {
		c.n += d
		return c.n, nil
	})
	exGet = atoll.NewMethod0(exCounterType, "Get", func(c *exCounter, _ context.Context) (int, error) { return c.n, nil })
)

// exInit starts atoll for an example: in-process workers and a small
// store, so that examples run anywhere.
func exInit(ctx context.Context) {
	if err := atoll.Init(ctx, atoll.WithWorkerMode(atoll.InProcessWorkers), atoll.WithNumCPUs(2),
		atoll.WithObjectStoreMemory(64<<20)); err != nil {
		panic(err)
	}
}

// Tasks: Remote returns a reference at once; Get waits for the value.
// Arguments are values or references to objects, of the declared types.
func ExampleNewFunc1() {
	ctx := context.Background()
	exInit(ctx)
	defer atoll.Shutdown(ctx)

	sq := exSquare.Remote(ctx, atoll.Value(7))
	v, err := atoll.Get(ctx, exSquare.Remote(ctx, sq)) // a ref as the argument: (7²)²
	fmt.Println(v, err)

	words, _ := atoll.Put(ctx, []string{"b", "c"})
	s, err := atoll.Get(ctx, exJoin.Remote(ctx, atoll.Value("-"), atoll.Value([]string{"a"}), words))
	fmt.Println(s, err)

	// A MultiFunc's caller says how many results it returns.
	parts := exSplit.Remote(ctx, 3, atoll.Value([]int{10, 20, 30}))
	last, err := atoll.Get(ctx, parts[2])
	fmt.Println(len(parts), last, err)
	// Output:
	// 2401 <nil>
	// a-b-c <nil>
	// 3 30 <nil>
}

// Options bind defaults on a function (Ray's .options()); a call's own
// options override them, and the function itself is unchanged.
func ExampleFunc1_Options() {
	ctx := context.Background()
	exInit(ctx)
	defer atoll.Shutdown(ctx)

	named := exFail.Options(atoll.Name("validate"), atoll.MaxRetries(0))
	_, err := atoll.Get(ctx, named.Remote(ctx, atoll.Value("bad input")))
	var te *atoll.TaskError
	if errors.As(err, &te) {
		fmt.Println(te.TaskName, te.Message)
	}
	_, err = atoll.Get(ctx, named.Remote(ctx, atoll.Value("bad row"), atoll.Name("validate-row")))
	if errors.As(err, &te) {
		fmt.Println(te.TaskName, te.Message)
	}
	_, err = atoll.Get(ctx, exFail.Remote(ctx, atoll.Value("plain")))
	if errors.As(err, &te) {
		fmt.Println(te.TaskName, te.Message)
	}
	// Output:
	// validate bad input
	// validate-row bad row
	// example.fail plain
}

// Actors: New creates one and returns its handle at once; calls from one
// caller run in order. Actor options (ActorName, MaxRestarts, ...) go to
// New or to the type's Options; a task's or a method's options do not
// compile there.
func ExampleNewActorType1() {
	ctx := context.Background()
	exInit(ctx)
	defer atoll.Shutdown(ctx)

	counters := exCounterType.Options(atoll.MaxRestarts(2))
	c, err := counters.New(ctx, atoll.Value(10), atoll.ActorName("hits"))
	if err != nil {
		panic(err)
	}
	exAdd.Remote(ctx, c, atoll.Value(5))
	exAdd.Remote(ctx, c, atoll.Value(1))
	n, err := atoll.Get(ctx, exGet.Remote(ctx, c))
	fmt.Println(n, err)

	same, err := atoll.GetActor[*exCounter](ctx, "hits")
	if err != nil {
		panic(err)
	}
	n, err = atoll.Get(ctx, exAdd.Remote(ctx, same, atoll.Value(4), atoll.Name("add-four")))
	fmt.Println(n, err)
	// Output:
	// 16 <nil>
	// 20 <nil>
}
