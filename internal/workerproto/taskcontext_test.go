package workerproto

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/atoll-runtime/atoll/internal/testutil"
)

var errCause = errors.New("the cause")

// TestCancellableMakesNothingUnlessLookedAt: a context no one looks at
// and that ends is never made; its Err is what the made one's would be.
func TestCancellableMakesNothingUnlessLookedAt(t *testing.T) {
	var c Cancellable
	if err := c.Err(); err != nil {
		t.Fatalf("a fresh context's Err is %v", err)
	}
	if d, ok := c.Deadline(); ok || !d.IsZero() {
		t.Fatalf("a task's context has a deadline: %v", d)
	}
	if v := c.Value("key"); v != nil {
		t.Fatalf("a task's context holds a value: %v", v)
	}
	c.Cancel(nil)
	if c.state.Load() != ctxEnded || c.ctx != nil {
		t.Fatal("ending a context no one looked at made it")
	}
	if err := c.Err(); !errors.Is(err, context.Canceled) {
		t.Fatalf("an ended context's Err is %v", err)
	}
	contexts := make([]Cancellable, 101) // AllocsPerRun runs it once more first
	next := 0
	if n := testing.AllocsPerRun(100, func() {
		c := &contexts[next]
		next++
		_ = c.Err()
		c.Cancel(nil)
	}); n != 0 {
		t.Errorf("a context no one looked at allocates %v times", n)
	}
}

// TestCancellableLikeWithCancelCause: however the task's code looks at it
// (its Done channel, context.Cause, a context made under it, AfterFunc),
// before or after its cancellation, it behaves as the context it stands
// for.
func TestCancellableLikeWithCancelCause(t *testing.T) {
	look := map[string]func(ctx context.Context) (done func() bool, cause func() error){
		"Done": func(ctx context.Context) (func() bool, func() error) {
			d := ctx.Done()
			return func() bool { return testutil.Closed(d) }, func() error { return context.Cause(ctx) }
		},
		"a child": func(ctx context.Context) (func() bool, func() error) {
			child, cancel := context.WithCancel(ctx)
			t.Cleanup(cancel)
			return func() bool { return testutil.Closed(child.Done()) }, func() error { return context.Cause(child) }
		},
		"a child with a value": func(ctx context.Context) (func() bool, func() error) {
			child := context.WithValue(ctx, errCause, 1)
			return func() bool { return testutil.Closed(child.Done()) }, func() error { return context.Cause(child) }
		},
		"AfterFunc": func(ctx context.Context) (func() bool, func() error) {
			var mu sync.Mutex
			ran := false
			context.AfterFunc(ctx, func() { mu.Lock(); ran = true; mu.Unlock() })
			return func() bool { mu.Lock(); defer mu.Unlock(); return ran }, func() error { return context.Cause(ctx) }
		},
	}
	for name, look := range look {
		t.Run(name+" then cancelled", func(t *testing.T) {
			c := new(Cancellable)
			done, cause := look(c)
			if done() || c.Err() != nil {
				t.Fatal("done before its cancel")
			}
			c.Cancel(errCause)
			c.Cancel(errors.New("a second cause"))
			testutil.Eventually(t, "the look to see the cancel", done)
			if !errors.Is(c.Err(), context.Canceled) || !errors.Is(cause(), errCause) {
				t.Fatalf("Err %v, Cause %v; want context.Canceled and the first cause", c.Err(), cause())
			}
		})
		t.Run(name+" after its cancel", func(t *testing.T) {
			c := new(Cancellable)
			c.Cancel(errCause)
			done, cause := look(c)
			testutil.Eventually(t, "the look to see the cancel", done)
			if !errors.Is(c.Err(), context.Canceled) || !errors.Is(cause(), errCause) {
				t.Fatalf("Err %v, Cause %v; want context.Canceled and the cause", c.Err(), cause())
			}
		})
	}
	t.Run("no cause", func(t *testing.T) {
		c := new(Cancellable)
		c.Cancel(nil)
		if err := context.Cause(c); !errors.Is(err, context.Canceled) {
			t.Fatalf("Cause %v, want context.Canceled", err)
		}
	})
}

// TestCancellableConcurrently: looks and cancels from many goroutines at
// once make one context, and every look sees the one cancellation (run
// it under -race).
func TestCancellableConcurrently(t *testing.T) {
	for range 100 {
		c := new(Cancellable)
		var wg sync.WaitGroup
		dones := make([]<-chan struct{}, 4)
		for i := range dones {
			wg.Go(func() { dones[i] = c.Done() })
		}
		wg.Go(func() { c.Cancel(errCause) })
		wg.Go(func() { _ = c.Err() })
		wg.Wait()
		for _, d := range dones {
			if d != dones[0] || !testutil.Closed(d) {
				t.Fatal("looks made more than one context, or missed its cancel")
			}
		}
		if !errors.Is(context.Cause(c), errCause) {
			t.Fatalf("Cause %v", context.Cause(c))
		}
	}
}
