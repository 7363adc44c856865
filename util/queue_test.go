package util_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/atoll-runtime/atoll"
	"github.com/atoll-runtime/atoll/internal/testmain"
	"github.com/atoll-runtime/atoll/util"
)

// Tasks and an actor that use a queue passed to them as an argument.
type produceJob struct {
	Q     *util.Queue[int]
	Base  int
	Count int
}

type drainer struct{}

var (
	produce = atoll.NewFunc1("util_test.produce", func(ctx context.Context, j produceJob) (int, error) {
		for i := range j.Count {
			if err := j.Q.Put(ctx, j.Base+i); err != nil {
				return i, err
			}
		}
		return j.Count, nil
	})
	// tryTake returns TryGet's error: it reaches the driver typed.
	tryTake = atoll.NewFunc1("util_test.tryTake", func(ctx context.Context, q *util.Queue[int]) (int, error) {
		return q.TryGet(ctx)
	})
	drainerType = atoll.NewActorType("util_test.drainer", func(context.Context) (*drainer, error) { return &drainer{}, nil })
	drain       = atoll.NewMethod2(drainerType, "Drain", func(_ *drainer, ctx context.Context, q *util.Queue[int], n int) ([]int, error) {
		out := make([]int, 0, n)
		for range n {
			v, err := q.Get(ctx)
			if err != nil {
				return out, err
			}
			out = append(out, v)
		}
		return out, nil
	})
)

// TestQueueFIFO: items come out in the order they went in; TryGet on an
// empty queue and TryPut on a full one fail with the typed errors.
func TestQueueFIFO(t *testing.T) {
	ctx := testmain.Start(t)
	q, err := util.NewQueue[string](ctx, 40)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := q.TryGet(ctx); !errors.Is(err, util.ErrQueueEmpty) {
		t.Fatalf("TryGet on an empty queue: %v, want ErrQueueEmpty", err)
	}
	var in []string
	for i := range 40 {
		s := string(rune('A'+i%26)) + string(rune('0'+i/26))
		in = append(in, s)
		if err := q.TryPut(ctx, s); err != nil {
			t.Fatalf("TryPut %d: %v", i, err)
		}
	}
	if err := q.TryPut(ctx, "one too many"); !errors.Is(err, util.ErrQueueFull) {
		t.Fatalf("TryPut on a full queue: %v, want ErrQueueFull", err)
	}
	if n, err := q.Size(ctx); err != nil || n != 40 {
		t.Fatalf("Size = %d, %v; want 40", n, err)
	}
	var out []string
	for range 40 {
		s, err := q.Get(ctx)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	if !slices.Equal(in, out) {
		t.Fatalf("out of order:\n in  %v\n out %v", in, out)
	}
	if n, err := q.Size(ctx); err != nil || n != 0 {
		t.Fatalf("Size after draining = %d, %v; want 0", n, err)
	}
}

// TestQueueBlocking: a Put on a full queue waits, gives up with
// ErrQueueFull when its context ends, and is let in by a Get; a Get on an
// empty queue gives up with ErrQueueEmpty at its deadline; Gets waiting
// in the actor do not keep Puts out.
func TestQueueBlocking(t *testing.T) {
	ctx := testmain.Start(t)
	q, err := util.NewQueue[int](ctx, 2)
	if err != nil {
		t.Fatal(err)
	}

	if n, err := q.Size(ctx); err != nil || n != 0 { // the actor is up
		t.Fatalf("Size = %d, %v; want 0", n, err)
	}
	if waits, err := util.WaitsInActor(ctx, q); err != nil || !waits {
		t.Fatalf("with worker processes the queue's callers should wait in its actor: %v, %v", waits, err)
	}

	// An empty queue: Get waits until its deadline, then ErrQueueEmpty.
	const patience = 300 * time.Millisecond
	short, cancel := context.WithTimeout(ctx, patience)
	start := time.Now()
	_, err = q.Get(short)
	cancel()
	if !errors.Is(err, util.ErrQueueEmpty) || !errors.Is(err, context.DeadlineExceeded) || time.Since(start) < patience {
		t.Fatalf("Get on an empty queue: %v after %v; want ErrQueueEmpty and DeadlineExceeded after %v", err, time.Since(start), patience)
	}

	// Gets waiting in the actor: more of them than one call slot, then
	// Puts that must get past them.
	const waiters = 3
	got := make(chan int, waiters)
	var wg sync.WaitGroup
	for range waiters {
		wg.Go(func() {
			v, err := q.Get(ctx)
			if err != nil {
				t.Errorf("waiting Get: %v", err)
			}
			got <- v
		})
	}
	for i := range waiters {
		if err := q.Put(ctx, 100+i); err != nil {
			t.Fatalf("Put past waiting Gets: %v", err)
		}
	}
	wg.Wait()
	close(got)
	var vals []int
	for v := range got {
		vals = append(vals, v)
	}
	slices.Sort(vals)
	if !slices.Equal(vals, []int{100, 101, 102}) {
		t.Fatalf("waiting Gets got %v, want 100, 101, 102", vals)
	}

	// A full queue: Put waits until its deadline, then ErrQueueFull.
	for i := range 2 {
		if err := q.Put(ctx, i); err != nil {
			t.Fatal(err)
		}
	}
	short, cancel = context.WithTimeout(ctx, patience)
	start = time.Now()
	err = q.Put(short, 99)
	cancel()
	if !errors.Is(err, util.ErrQueueFull) || !errors.Is(err, context.DeadlineExceeded) || time.Since(start) < patience {
		t.Fatalf("Put on a full queue: %v after %v; want ErrQueueFull and DeadlineExceeded after %v", err, time.Since(start), patience)
	}
	// A Put that waits is let in by a Get.
	putDone := make(chan error, 1)
	go func() { putDone <- q.Put(ctx, 2) }()
	select {
	case err := <-putDone:
		t.Fatalf("Put on a full queue returned before any Get: %v", err)
	default:
	}
	if v, err := q.Get(ctx); err != nil || v != 0 {
		t.Fatalf("Get = %d, %v; want 0", v, err)
	}
	if err := <-putDone; err != nil {
		t.Fatalf("Put released by a Get: %v", err)
	}
	for want := 1; want <= 2; want++ {
		if v, err := q.Get(ctx); err != nil || v != want {
			t.Fatalf("Get = %d, %v; want %d", v, err, want)
		}
	}
	// The failed Puts added nothing.
	if n, err := q.Size(ctx); err != nil || n != 0 {
		t.Fatalf("Size = %d, %v; want 0", n, err)
	}
}

// TestQueueFromTasks: producer tasks in worker processes put into a
// queue they received as an argument, and an actor drains it; each
// producer's items come out in its order, none lost or doubled. The queue
// is small, so producers wait for the consumer.
func TestQueueFromTasks(t *testing.T) {
	ctx := testmain.Start(t)
	q, err := util.NewQueue[int](ctx, 4)
	if err != nil {
		t.Fatal(err)
	}
	const producers, each = 3, 15
	refs := make([]atoll.ObjectRef[int], producers)
	for p := range refs {
		refs[p] = produce.Remote(ctx, atoll.Value(produceJob{Q: q, Base: 1000 * p, Count: each}))
	}
	d, err := drainerType.New(ctx)
	if err != nil {
		t.Fatal(err)
	}
	out, err := atoll.Get(ctx, drain.Remote(ctx, d, atoll.Value(q), atoll.Value(producers*each)))
	if err != nil {
		t.Fatalf("drain: %v", err)
	}
	if n, err := atoll.GetAll(ctx, refs); err != nil || slices.Max(n) != each || slices.Min(n) != each {
		t.Fatalf("producers put %v, %v; want %d each", n, err, each)
	}
	last := map[int]int{}
	for _, v := range out {
		p := v / 1000
		if prev, ok := last[p]; ok && v != prev+1 {
			t.Fatalf("producer %d: %d came after %d (out of order or lost): %v", p, v, prev, out)
		} else if !ok && v != 1000*p {
			t.Fatalf("producer %d: first item %d, want %d", p, v, 1000*p)
		}
		last[p] = v
	}
	if len(out) != producers*each || len(last) != producers {
		t.Fatalf("drained %d items from %d producers: %v", len(out), len(last), out)
	}
	// A task that finds the queue empty returns ErrQueueEmpty to its
	// caller.
	if _, err := atoll.Get(ctx, tryTake.Remote(ctx, atoll.Value(q))); !errors.Is(err, util.ErrQueueEmpty) || !errors.Is(err, atoll.ErrTask) {
		t.Fatalf("TryGet in a task of an empty queue: %v, want ErrQueueEmpty", err)
	}
	// The queue found by name holds what the others put.
	if err := q.Put(ctx, 7); err != nil {
		t.Fatal(err)
	}
	same, err := util.GetQueue[int](ctx, q.Name())
	if err != nil {
		t.Fatal(err)
	}
	if v, err := same.Get(ctx); err != nil || v != 7 {
		t.Fatalf("Get through GetQueue = %d, %v; want 7", v, err)
	}
	if _, err := util.GetQueue[string](ctx, q.Name()); !errors.Is(err, atoll.ErrInvalidArgument) {
		t.Fatalf("GetQueue of the wrong item type: %v, want ErrInvalidArgument", err)
	}
	if err := q.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestQueueInProcessWorkers: with in-process workers the queue's actor
// runs its concurrency groups as with processes, so callers wait in it;
// a Put blocked on a full queue is let through by a Get.
func TestQueueInProcessWorkers(t *testing.T) {
	ctx := testmain.Start(t, atoll.WithWorkerMode(atoll.InProcessWorkers))
	q, err := util.NewQueue[[]byte](ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	if waits, err := util.WaitsInActor(ctx, q); err != nil || !waits {
		t.Fatalf("with in-process workers the queue's callers should wait in its actor: %v, %v", waits, err)
	}
	got := make(chan []byte, 1)
	go func() {
		b, err := q.Get(ctx)
		if err != nil {
			t.Errorf("Get: %v", err)
		}
		got <- b
	}()
	if err := q.Put(ctx, []byte("one")); err != nil {
		t.Fatal(err)
	}
	if err := q.Put(ctx, []byte("two")); err != nil { // waits for the Get
		t.Fatal(err)
	}
	if b := <-got; string(b) != "one" {
		t.Fatalf("Get = %q, want one", b)
	}
	if b, err := q.TryGet(ctx); err != nil || string(b) != "two" {
		t.Fatalf("TryGet = %q, %v; want two", b, err)
	}
}
