package util_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/atoll-runtime/atoll"
	"github.com/atoll-runtime/atoll/util"
)

// Doubler is the example pool's actor.
type Doubler struct{}

var (
	doublerType = atoll.NewActorType("example.Doubler", func(context.Context) (*Doubler, error) { return &Doubler{}, nil })
	double      = atoll.NewMethod1(doublerType, "Double", func(_ *Doubler, _ context.Context, x int) (int, error) { return 2 * x, nil })

	// produceSquares runs as a task: it puts n squares into the queue it
	// is given.
	produceSquares = atoll.NewFunc2("example.produceSquares", func(ctx context.Context, q *util.Queue[int], n int) (int, error) {
		for i := range n {
			if err := q.Put(ctx, i*i); err != nil {
				return i, err
			}
		}
		return n, nil
	})
)

func ExampleActorPool() {
	ctx := context.Background()
	if err := atoll.Init(ctx, atoll.WithNumCPUs(2), atoll.WithObjectStoreMemory(64<<20)); err != nil {
		panic(err)
	}
	defer atoll.Shutdown(ctx)

	a, _ := doublerType.New(ctx)
	b, _ := doublerType.New(ctx)
	pool := util.NewActorPool[*Doubler, int, int](a, b)
	doubleOn := func(ctx context.Context, h atoll.ActorHandle[*Doubler], x int) atoll.ObjectRef[int] {
		return double.Remote(ctx, h, atoll.Value(x))
	}
	for v, err := range pool.Map(ctx, doubleOn, []int{1, 2, 3, 4}) {
		fmt.Println(v, err)
	}

	// One piece at a time: Submit, then GetNext in submission order.
	pool.Submit(ctx, doubleOn, 10)
	pool.Submit(ctx, doubleOn, 20)
	for pool.HasNext() {
		fmt.Println(pool.GetNext(ctx))
	}
	// Output:
	// 2 <nil>
	// 4 <nil>
	// 6 <nil>
	// 8 <nil>
	// 20 <nil>
	// 40 <nil>
}

func ExampleQueue() {
	ctx := context.Background()
	if err := atoll.Init(ctx, atoll.WithNumCPUs(2), atoll.WithObjectStoreMemory(64<<20)); err != nil {
		panic(err)
	}
	defer atoll.Shutdown(ctx)

	// A queue of at most 2 items: the producer task waits while it is
	// full.
	q, err := util.NewQueue[int](ctx, 2)
	if err != nil {
		panic(err)
	}
	done := produceSquares.Remote(ctx, atoll.Value(q), atoll.Value(5))
	for range 5 {
		v, err := q.Get(ctx)
		fmt.Println(v, err)
	}
	fmt.Println(atoll.Get(ctx, done))
	_, err = q.TryGet(ctx) // empty now: TryGet does not wait
	fmt.Println(errors.Is(err, util.ErrQueueEmpty))
	// Output:
	// 0 <nil>
	// 1 <nil>
	// 4 <nil>
	// 9 <nil>
	// 16 <nil>
	// 5 <nil>
	// true
}
