package atoll_test

import (
	"context"
	"fmt"
	"time"

	"github.com/atoll-runtime/atoll"
)

// exWaitSlow returns x after a delay of x milliseconds.
var exWaitSlow = atoll.NewFunc1("example.wait.slow", func(ctx context.Context, x int) (int, error) {
	select {
	case <-time.After(time.Duration(x) * time.Millisecond):
		return x, nil
	case <-ctx.Done():
		return 0, ctx.Err()
	}
})

func ExampleWait() {
	ctx := context.Background()
	if err := atoll.Init(ctx, atoll.WithNumCPUs(2), atoll.WithObjectStoreMemory(64<<20),
		atoll.WithWorkerMode(atoll.InProcessWorkers)); err != nil {
		panic(err)
	}
	defer atoll.Shutdown(ctx)

	refs := []atoll.ObjectRef[int]{
		exWaitSlow.Remote(ctx, atoll.Value(1)),
		exWaitSlow.Remote(ctx, atoll.Value(60_000)), // a minute
	}
	// Ray's ray.wait(refs, num_returns=1, timeout=5): the context's
	// deadline is the timeout; ready and notReady are typed.
	wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	ready, notReady, err := atoll.Wait(wctx, refs, atoll.NumReady(1))
	fmt.Println(len(ready), len(notReady), err)
	v, err := atoll.Get(ctx, ready[0])
	fmt.Println(v, err)

	// Refs of different types wait together as []atoll.Ref, and
	// GetValues reads them.
	name, _ := atoll.Put(ctx, "one")
	vals, err := atoll.GetValues(ctx, []atoll.Ref{ready[0], name})
	fmt.Println(vals, err)

	// Ray's ray.cancel: the slow task stops.
	_ = atoll.Cancel(ctx, notReady[0])
	_, err = atoll.Get(ctx, notReady[0])
	fmt.Println(err != nil)
	// Output:
	// 1 1 <nil>
	// 1 <nil>
	// [1 one] <nil>
	// true
}

func ExampleGetView() {
	ctx := context.Background()
	if err := atoll.Init(ctx, atoll.WithNumCPUs(2), atoll.WithObjectStoreMemory(64<<20),
		atoll.WithWorkerMode(atoll.InProcessWorkers)); err != nil {
		panic(err)
	}
	defer atoll.Shutdown(ctx)

	ref, _ := atoll.PutWith(ctx, 1<<20, func(xs []float64) { // 8 MiB, in shared memory
		for i := range xs {
			xs[i] = 1
		}
	})
	// Get returns the caller's own copy.
	xs, _ := atoll.Get(ctx, ref)
	xs[0] = 100 // changes nothing stored
	// GetView pins the object and reads it in place until Release.
	v, err := atoll.GetView(ctx, ref)
	if err != nil {
		panic(err)
	}
	defer v.Release()
	sum := 0.0
	for _, x := range v.Slice() {
		sum += x
	}
	fmt.Println(sum)
	// Output: 1.048576e+06
}
