package util_test

import (
	"context"
	"errors"
	"testing"

	"github.com/atoll-runtime/atoll"
	"github.com/atoll-runtime/atoll/internal/testmain"
	"github.com/atoll-runtime/atoll/util"
)

// squarer is a pool actor: it squares values and says who it is.
type squarer struct{ name string }

// squared is one result: the square and the actor that made it.
type squared struct {
	V     int
	Actor string
}

// work is a value for a pool actor; Gate, if set, is a queue the call
// takes a token from before it answers, Done one it puts V in once it
// has.
type work struct {
	V    int
	Gate *util.Queue[int]
	Done *util.Queue[int]
}

var (
	squarerType = atoll.NewActorType1("util_test.squarer", func(_ context.Context, name string) (*squarer, error) {
		return &squarer{name: name}, nil
	})
	square = atoll.NewMethod1(squarerType, "Square", func(s *squarer, ctx context.Context, w work) (squared, error) {
		if w.Gate != nil {
			if _, err := w.Gate.Get(ctx); err != nil {
				return squared{}, err
			}
		}
		if w.V < 0 {
			return squared{}, errors.New("negative")
		}
		if w.Done != nil {
			if err := w.Done.Put(ctx, w.V); err != nil {
				return squared{}, err
			}
		}
		return squared{w.V * w.V, s.name}, nil
	})
	squareIt = func(ctx context.Context, h atoll.ActorHandle[*squarer], w work) atoll.ObjectRef[squared] {
		return square.Remote(ctx, h, atoll.Value(w))
	}
)

func squarers(ctx context.Context, t *testing.T, n int) []atoll.ActorHandle[*squarer] {
	t.Helper()
	hs := make([]atoll.ActorHandle[*squarer], n)
	for i := range hs {
		h, err := squarerType.New(ctx, atoll.Value(string(rune('a'+i))))
		if err != nil {
			t.Fatal(err)
		}
		hs[i] = h
	}
	return hs
}

// TestActorPoolMap: Map returns results in input order, and the work
// spreads over every actor of the pool. The first value's call waits
// until the two values the other actors run first have finished (a
// goroutine watches them finish, then opens the gate): in completion
// order they would come first.
func TestActorPoolMap(t *testing.T) {
	ctx := testmain.Start(t)
	gate, err := util.NewQueue[int](ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	done, err := util.NewQueue[int](ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	pool := util.NewActorPool[*squarer, work, squared](squarers(ctx, t, 3)...)
	values := []work{{V: 0, Gate: gate}}
	for i := 1; i < 12; i++ {
		values = append(values, work{V: i, Done: done})
	}
	opened := make(chan error, 1)
	go func() {
		for range 2 {
			if _, err := done.Get(ctx); err != nil {
				opened <- err
				return
			}
		}
		opened <- gate.Put(ctx, 1)
	}()
	defer func() {
		if err := <-opened; err != nil {
			t.Errorf("opening the gate: %v", err)
		}
	}()
	byActor := map[string]int{}
	i := 0
	for r, err := range pool.Map(ctx, squareIt, values) {
		if err != nil || r.V != i*i {
			t.Fatalf("result %d: %v, %v; want %d", i, r, err, i*i)
		}
		byActor[r.Actor]++
		i++
	}
	if i != len(values) {
		t.Fatalf("Map yielded %d results, want %d", i, len(values))
	}
	if len(byActor) != 3 {
		t.Fatalf("work ran on actors %v, want all 3", byActor)
	}
	if pool.HasNext() || !pool.HasFree() {
		t.Fatalf("after Map: HasNext %v, HasFree %v; want false, true", pool.HasNext(), pool.HasFree())
	}
}

// TestActorPoolMapUnordered: MapUnordered yields results as they
// complete. The first value's call waits for a token the test puts in a
// queue only once every other result has arrived: in input order it could
// never come first, unordered it comes last.
func TestActorPoolMapUnordered(t *testing.T) {
	ctx := testmain.Start(t)
	gate, err := util.NewQueue[int](ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	pool := util.NewActorPool[*squarer, work, squared](squarers(ctx, t, 2)...)
	const n = 8
	values := []work{{V: 0, Gate: gate}}
	for i := 1; i < n; i++ {
		values = append(values, work{V: i})
	}
	var order []int
	byActor := map[string]int{}
	for r, err := range pool.MapUnordered(ctx, squareIt, values) {
		if err != nil {
			t.Fatalf("result after %v: %v", order, err)
		}
		order = append(order, r.V)
		byActor[r.Actor]++
		if len(order) == n-1 {
			if err := gate.Put(ctx, 1); err != nil {
				t.Fatal(err)
			}
		}
	}
	if len(order) != n || order[n-1] != 0 {
		t.Fatalf("unordered results %v: want %d, the gated square 0 last", order, n)
	}
	if len(byActor) != 2 {
		t.Fatalf("work ran on actors %v, want both", byActor)
	}
}

// TestActorPoolSubmit: Submit runs on idle actors and queues the rest;
// GetNext returns in submission order and hands queued work to the
// freed actor; an error comes back as the result's; PopIdle and Push take
// actors out and put them back.
func TestActorPoolSubmit(t *testing.T) {
	ctx := testmain.Start(t)
	hs := squarers(ctx, t, 2)
	pool := util.NewActorPool[*squarer, work, squared](hs...)
	if _, err := pool.GetNext(ctx); !errors.Is(err, util.ErrNoPending) {
		t.Fatalf("GetNext on an empty pool: %v, want ErrNoPending", err)
	}
	if !pool.HasFree() || pool.HasNext() {
		t.Fatal("a new pool: want HasFree and not HasNext")
	}
	pool.Submit(ctx, squareIt, work{V: 2})
	pool.Submit(ctx, squareIt, work{V: -1}) // fails
	if pool.HasFree() {
		t.Fatal("both actors busy: HasFree is true")
	}
	pool.Submit(ctx, squareIt, work{V: 3}) // queued
	if r, err := pool.GetNext(ctx); err != nil || r.V != 4 {
		t.Fatalf("first GetNext = %v, %v; want 4", r, err)
	}
	if _, err := pool.GetNext(ctx); err == nil || !errors.Is(err, atoll.ErrTask) {
		t.Fatalf("second GetNext: %v, want the call's TaskError", err)
	}
	if r, err := pool.GetNextUnordered(ctx); err != nil || r.V != 9 {
		t.Fatalf("GetNextUnordered = %v, %v; want 9", r, err)
	}
	if pool.HasNext() || !pool.HasFree() {
		t.Fatal("all returned: want HasFree and not HasNext")
	}

	// Take both actors out: work waits, and GetNext says why.
	a, ok1 := pool.PopIdle()
	b, ok2 := pool.PopIdle()
	if _, ok3 := pool.PopIdle(); !ok1 || !ok2 || ok3 {
		t.Fatalf("PopIdle: %v %v %v; want two actors, then none", ok1, ok2, ok3)
	}
	pool.Submit(ctx, squareIt, work{V: 5})
	if _, err := pool.GetNext(ctx); !errors.Is(err, util.ErrNoActors) {
		t.Fatalf("GetNext with no actor: %v, want ErrNoActors", err)
	}
	pool.Push(a) // takes the waiting work
	if pool.HasFree() {
		t.Fatal("the pushed actor took the waiting work: HasFree is true")
	}
	pool.Push(b)
	if r, err := pool.GetNext(ctx); err != nil || r.V != 25 {
		t.Fatalf("GetNext after Push = %v, %v; want 25", r, err)
	}
	n := 0
	for range pool.Map(ctx, squareIt, []work{{V: 1}, {V: 1}}) {
		n++
	}
	if n != 2 {
		t.Fatalf("Map after Push yielded %d results", n)
	}
}
