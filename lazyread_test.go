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

	lazyTally = atoll.NewActorType("lazy.tally", func(context.Context) (*lazyCount, error) { return &lazyCount{}, nil })
	lazyAdd   = atoll.NewMethod1(lazyTally, "Add", func(c *lazyCount, _ context.Context, d int) (int, error) {
		c.n += d
		return c.n, nil
	})
	lazyNap = atoll.NewMethod1(lazyTally, "Nap", func(c *lazyCount, ctx context.Context, d time.Duration) (int, error) {
		select {
		case <-time.After(d):
			return c.n, nil
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	})
)

type lazyCount struct{ n int }

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

// The same for actor calls written straight to the actor's worker: a
// driver's Get of a call made alone reads its result; a chain through the
// owner, a Wait, a task between calls and a Get that gives up each still
// see their results.
func TestSynchronousActorCallsReadTheirOwnResults(t *testing.T) {
	ctx := startProcesses(t)
	a, err := lazyTally.New(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := 0
	for i := range 200 {
		want += i
		if n, err := atoll.Get(ctx, lazyAdd.Remote(ctx, a, atoll.Value(i))); err != nil || n != want {
			t.Fatalf("call %d: %d, %v; want %d", i, n, err, want)
		}
	}
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for i := range 200 {
		want++
		if n, err := atoll.Get(cctx, lazyAdd.Remote(cctx, a, atoll.Value(1))); err != nil || n != want {
			t.Fatalf("call %d with a cancellable context: %d, %v; want %d", i, n, err, want)
		}
	}

	// Chains through the owner: a call's result as the next call's
	// argument, a task's result as a call's, a call's as a task's.
	for i := range 50 {
		first := lazyAdd.Remote(ctx, a, atoll.Value(0))
		second := lazyAdd.Remote(ctx, a, first)
		want *= 2
		if n, err := atoll.Get(ctx, second); err != nil || n != want {
			t.Fatalf("call chain %d: %d, %v; want %d", i, n, err, want)
		}
		if n, err := atoll.Get(ctx, lazyAdd.Remote(ctx, a, atoll.Value(-want))); err != nil || n != 0 {
			t.Fatalf("reset %d: %d, %v; want 0", i, n, err)
		}
		want = 1
		if n, err := atoll.Get(ctx, lazyAdd.Remote(ctx, a, lazyRun.Remote(ctx))); err != nil || n != want {
			t.Fatalf("task into call %d: %d, %v; want %d", i, n, err, want)
		}
		if n, err := atoll.Get(ctx, lazyInc.Remote(ctx, lazyAdd.Remote(ctx, a, atoll.Value(0)))); err != nil || n != want+1 {
			t.Fatalf("call into task %d: %d, %v; want %d", i, n, err, want+1)
		}
	}

	// A Wait, not a Get.
	for i := range 50 {
		ref := lazyAdd.Remote(ctx, a, atoll.Value(0))
		ready, _, err := atoll.Wait(ctx, []atoll.Ref{ref})
		if err != nil || len(ready) != 1 {
			t.Fatalf("wait %d: %d ready, %v", i, len(ready), err)
		}
	}

	// A Get that gives up while it reads, then one that does not, then
	// calls as before.
	ref := lazyNap.Remote(ctx, a, atoll.Value(200*time.Millisecond))
	short, cancelShort := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancelShort()
	if _, err := atoll.Get(short, ref); err == nil {
		t.Fatal("a Get with a 20 ms deadline of a 200 ms call returned no error")
	}
	if n, err := atoll.Get(ctx, ref); err != nil || n != want {
		t.Fatalf("the Get after one gave up: %d, %v; want %d", n, err, want)
	}
	for i := range 20 {
		want++
		if n, err := atoll.Get(ctx, lazyAdd.Remote(ctx, a, atoll.Value(1))); err != nil || n != want {
			t.Fatalf("call %d after a Get gave up: %d, %v; want %d", i, n, err, want)
		}
	}
}
