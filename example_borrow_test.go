package atoll_test

import (
	"context"
	"fmt"

	"github.com/atoll-runtime/atoll"
)

// exParts carries refs inside a value.
type exParts struct{ Parts []atoll.ObjectRef[[]int] }

type exKeeper struct{ kept exParts }

var (
	// exSplitParts puts n partitions in a worker process and returns refs to
	// them inside a struct: the caller owns them from then on.
	exSplitParts = atoll.NewFunc1("ex.split", func(ctx context.Context, n int) (exParts, error) {
		var p exParts
		for i := 0; i < n; i++ {
			ref, err := atoll.Put(ctx, []int{i, i, i})
			if err != nil {
				return p, err
			}
			p.Parts = append(p.Parts, ref)
		}
		return p, nil
	})
	// exTotal is lent the refs inside its argument.
	exTotal = atoll.NewFunc1("ex.total", func(ctx context.Context, p exParts) (int, error) {
		parts, err := atoll.GetAll(ctx, p.Parts)
		total := 0
		for _, xs := range parts {
			for _, x := range xs {
				total += x
			}
		}
		return total, err
	})
	exKeeperType = atoll.NewActorType("ex.keeper", func(context.Context) (*exKeeper, error) { return &exKeeper{}, nil })
	exKeep       = atoll.NewMethod1(exKeeperType, "Keep", func(k *exKeeper, _ context.Context, p exParts) (int, error) {
		k.kept = p // the actor borrows them beyond this call
		return len(p.Parts), nil
	})
	exSumKept = atoll.NewMethod0(exKeeperType, "Sum", func(k *exKeeper, ctx context.Context) (int, error) {
		parts, err := atoll.GetAll(ctx, k.kept.Parts)
		return len(parts), err
	})
)

// Refs travel inside values between processes: a task returns refs to
// objects it created, another task is lent them, an actor keeps them
// after the driver dropped its own.
func Example_borrowing() {
	ctx := context.Background()
	if err := atoll.Init(ctx, atoll.WithNumCPUs(2), atoll.WithObjectStoreMemory(64<<20),
		atoll.WithWorkerMode(atoll.ProcessWorkers)); err != nil {
		panic(err)
	}
	defer atoll.Shutdown(ctx)

	parts, err := atoll.Get(ctx, exSplitParts.Remote(ctx, atoll.Value(4)))
	if err != nil {
		panic(err)
	}
	total, err := atoll.Get(ctx, exTotal.Remote(ctx, atoll.Value(parts)))
	fmt.Println("total:", total, err)

	k, err := exKeeperType.New(ctx)
	if err != nil {
		panic(err)
	}
	if _, err := atoll.Get(ctx, exKeep.Remote(ctx, k, atoll.Value(parts))); err != nil {
		panic(err)
	}
	for _, p := range parts.Parts {
		p.Release() // the actor's borrow keeps the objects alive
	}
	n, err := atoll.Get(ctx, exSumKept.Remote(ctx, k))
	fmt.Println("the actor still reads", n, "partitions:", err)
	// Output:
	// total: 18 <nil>
	// the actor still reads 4 partitions: <nil>
}
