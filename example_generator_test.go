package atoll_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/atoll-runtime/atoll"
)

// countdown is a streaming generator: each yield stores one item and
// hands it to the caller while the task goes on.
var countdown = atoll.NewGenFunc1("example.countdown", func(ctx context.Context, from int, yield func(int) error) error {
	for i := from; i > 0; i-- {
		if err := yield(i); err != nil {
			return err // the task was cancelled, or the item could not be stored
		}
	}
	return nil
})

func ExampleNewGenFunc1() {
	ctx := context.Background()
	if err := atoll.Init(ctx, atoll.WithNumCPUs(2), atoll.WithObjectStoreMemory(64<<20)); err != nil {
		panic(err)
	}
	defer atoll.Shutdown(ctx)

	// At most 2 items ahead of this loop: the task's yield waits for it.
	gen := countdown.Remote(ctx, atoll.Value(3), atoll.GeneratorBackpressure(2))
	for ref, err := range gen.All(ctx) {
		if err != nil {
			panic(err) // the task's error, after the items it yielded
		}
		v, err := atoll.Get(ctx, ref)
		fmt.Println(v, err)
	}
	// Output:
	// 3 <nil>
	// 2 <nil>
	// 1 <nil>
}

func ExampleObjectRefGenerator_Next() {
	ctx := context.Background()
	if err := atoll.Init(ctx, atoll.WithNumCPUs(2), atoll.WithObjectStoreMemory(64<<20)); err != nil {
		panic(err)
	}
	defer atoll.Shutdown(ctx)

	gen := countdown.Remote(ctx, atoll.Value(2))
	for {
		ref, err := gen.Next(ctx)
		if errors.Is(err, atoll.ErrEndOfStream) {
			fmt.Println("end")
			break
		}
		if err != nil {
			panic(err)
		}
		// Each item is an ObjectRef: pass it to other tasks as it comes.
		v, _ := atoll.Get(ctx, ref)
		fmt.Println(v)
	}
	// Output:
	// 2
	// 1
	// end
}
