package atoll_test

import (
	"context"
	"testing"
	"time"

	"github.com/atoll-runtime/atoll"
)

var (
	lazyInc = atoll.NewFunc1("lazy.inc", func(_ context.Context, n int) (int, error) { return n + 1, nil })
	lazyRun = atoll.NewFunc0("lazy.run", func(context.Context) (int, error) { return 1, nil })
	// lazySleep stands for a task that runs longer than its caller waits.
	lazySleep = atoll.NewFunc1("lazy.sleep", func(ctx context.Context, d time.Duration) (int, error) {
		select {
		case <-time.After(d):
			return 1, nil
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	})
)

// A driver's Get of a task pushed alone to a leased worker reads the
// result on its own goroutine; whatever else the driver does first must
// still see the result without waiting for the connection's reader to
// look again. Each case, with worker processes:
//   - synchronous tasks in a loop, with and without a context that can
//     end (the read is cut short by a read deadline only when it does);
//   - a task submitted alone, then one that takes its result as an
//     argument (the chain resolves through the owner, not a Get);
//   - a task submitted alone, then a Wait for it;
//   - a Get whose context ends while it reads the result of a task that
//     runs longer, then a Get of the same task that returns its value.
func TestSynchronousTasksReadTheirOwnResults(t *testing.T) {
	ctx := startProcesses(t)
	for i := range 200 {
		n, err := atoll.Get(ctx, lazyInc.Remote(ctx, atoll.Value(i)))
		if err != nil || n != i+1 {
			t.Fatalf("task %d: %d, %v", i, n, err)
		}
	}
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for i := range 200 {
		n, err := atoll.Get(cctx, lazyInc.Remote(cctx, atoll.Value(i)))
		if err != nil || n != i+1 {
			t.Fatalf("task %d with a cancellable context: %d, %v", i, n, err)
		}
	}

	// A chain through the owner: the second task waits for the first's
	// result as its argument.
	for i := range 50 {
		first := lazyInc.Remote(ctx, atoll.Value(i))
		second := lazyInc.Remote(ctx, first)
		if n, err := atoll.Get(ctx, second); err != nil || n != i+2 {
			t.Fatalf("chain %d: %d, %v", i, n, err)
		}
	}

	// A Wait, not a Get.
	for i := range 50 {
		ref := lazyRun.Remote(ctx)
		ready, _, err := atoll.Wait(ctx, []atoll.Ref{ref})
		if err != nil || len(ready) != 1 {
			t.Fatalf("wait %d: %d ready, %v", i, len(ready), err)
		}
	}

	// A Get that gives up while it reads, then one that does not.
	ref := lazySleep.Remote(ctx, atoll.Value(200*time.Millisecond))
	short, cancelShort := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancelShort()
	if _, err := atoll.Get(short, ref); err == nil {
		t.Fatal("a Get with a 20 ms deadline of a 200 ms task returned no error")
	}
	if _, err := atoll.Get(ctx, ref); err != nil {
		t.Fatalf("the Get after one gave up: %v", err)
	}
	for i := range 20 {
		if n, err := atoll.Get(ctx, lazyInc.Remote(ctx, atoll.Value(i))); err != nil || n != i+1 {
			t.Fatalf("task %d after a Get gave up: %d, %v", i, n, err)
		}
	}
}
