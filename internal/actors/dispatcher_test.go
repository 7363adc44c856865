package actors

import (
	"reflect"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/atoll-runtime/atoll/internal/testutil"
)

// TestPooledDispatcherReusesGoroutines: passes scheduled one after another
// run on a parked goroutine instead of a new one, none is lost, and
// blocked passes never hold up others.
func TestPooledDispatcherReusesGoroutines(t *testing.T) {
	d := NewPooledDispatcher(10).(*pooledDispatcher)
	if d.Throughput() != 10 {
		t.Fatalf("throughput %d", d.Throughput())
	}
	var ran atomic.Int64
	done := make(chan struct{})
	deadline := time.Now().Add(10 * time.Second)
	for range 1000 {
		d.Schedule(func() {
			ran.Add(1)
			done <- struct{}{}
		})
		<-done
		// Wait until the goroutine parked again, so that the next pass
		// can only go to it.
		for d.parked.Load() != d.started.Load() {
			if time.Now().After(deadline) {
				t.Fatalf("%d goroutines started, %d parked", d.started.Load(), d.parked.Load())
			}
			runtime.Gosched()
		}
	}
	if ran.Load() != 1000 {
		t.Fatalf("ran %d passes, want 1000", ran.Load())
	}
	// One after another, they ran on the goroutines already started. (A
	// goroutine counts as parked just before it reaches its select, so a
	// pass scheduled in that instant starts another: rare, hence <= 10.)
	if n := d.started.Load(); n > 10 {
		t.Fatalf("%d goroutines started for 1000 sequential passes, want reuse", n)
	}
	// A pass that blocks does not stop the next one from running.
	release := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	d.Schedule(func() { <-release; wg.Done() })
	second := make(chan struct{})
	d.Schedule(func() { close(second) })
	select {
	case <-second:
	case <-time.After(10 * time.Second):
		t.Fatal("a blocked pass held up the next one")
	}
	close(release)
	wg.Wait()
}

// TestPooledDispatcherRunsActors: actors on the pooled dispatcher keep
// their message order.
func TestPooledDispatcherRunsActors(t *testing.T) {
	system := NewSystem(nil)
	defer system.Shutdown()
	got := make(chan int, 100)
	pid := system.Root.Spawn(actor.PropsFromFunc(func(c actor.Context) {
		if n, ok := c.Message().(int); ok {
			got <- n
		}
	}, actor.WithDispatcher(HotDispatcher)))
	for i := range 100 {
		system.Root.Send(pid, i)
	}
	for i := range 100 {
		select {
		case n := <-got:
			if n != i {
				t.Fatalf("message %d arrived as %d", i, n)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("message %d never arrived", i)
		}
	}
	if err := system.Root.StopFuture(pid).Wait(); err != nil {
		t.Fatal(err)
	}
}

// TestPooledDispatcherGoroutineName: the name testutil.PooledDispatcher
// tells goleak to ignore is the pooled dispatcher's goroutine's.
func TestPooledDispatcherGoroutineName(t *testing.T) {
	got := runtime.FuncForPC(reflect.ValueOf((*pooledDispatcher).run).Pointer()).Name()
	if got != testutil.PooledDispatcher {
		t.Fatalf("the pooled dispatcher's goroutine runs %q; testutil.PooledDispatcher says %q", got, testutil.PooledDispatcher)
	}
}
