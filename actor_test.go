package atoll_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/atoll-runtime/atoll"
	"github.com/atoll-runtime/atoll/atolltest"
	"github.com/atoll-runtime/atoll/internal/testutil"
)

type counter struct{ n int }

var (
	ctorRuns    atomic.Int32
	counterType = atoll.NewActorType1("test.Counter", func(_ context.Context, start int) (*counter, error) {
		ctorRuns.Add(1)
		if start < 0 {
			return nil, errors.New("negative start")
		}
		return &counter{n: start}, nil
	})
	incr = atoll.NewMethod1(counterType, "Incr", func(c *counter, _ context.Context, d int) (int, error) {
		c.n += d
		return c.n, nil
	})
	boom = atoll.NewMethod0(counterType, "Boom", func(*counter, context.Context) (int, error) { panic("boom") })
	// panicOnce panics on its first call in the process, then succeeds.
	panicCalls = atomic.Int32{}
	panicOnce  = atoll.NewMethod0(counterType, "PanicOnce", func(c *counter, _ context.Context) (int, error) {
		if panicCalls.Add(1) == 1 {
			panic("first call crashes the actor")
		}
		return c.n, nil
	})
	fail = atoll.NewMethod0(counterType, "Fail", func(*counter, context.Context) (int, error) {
		return 0, errors.New("method failed")
	})
)

func TestActorCallsFromOneCallerRunInOrder(t *testing.T) {
	ctx := start(t)
	c, err := counterType.New(ctx, atoll.Value(0))
	if err != nil {
		t.Fatal(err)
	}
	refs := make([]atoll.ObjectRef[int], 200)
	for i := range refs {
		refs[i] = incr.Remote(ctx, c, atoll.Value(1))
	}
	got, err := atoll.GetAll(ctx, refs)
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range got {
		if v != i+1 {
			t.Fatalf("call %d saw %d: calls ran out of order", i, v)
		}
	}
	// A method's error does not kill the actor.
	if _, err := atoll.Get(ctx, fail.Remote(ctx, c)); !errors.Is(err, atoll.ErrTask) {
		t.Fatalf("method error: %v", err)
	}
	if v, err := atoll.Get(ctx, incr.Remote(ctx, c, atoll.Value(1))); err != nil || v != 201 {
		t.Fatalf("after a method error: %v %v", v, err)
	}
}

func TestActorRestartsThenDies(t *testing.T) {
	ctx := start(t)
	ctorRuns.Store(0)
	c, err := counterType.New(ctx, atoll.Value(10), atoll.MaxRestarts(1))
	if err != nil {
		t.Fatal(err)
	}
	if v, err := atoll.Get(ctx, incr.Remote(ctx, c, atoll.Value(5))); err != nil || v != 15 {
		t.Fatalf("first call: %v %v", v, err)
	}
	var te *atoll.TaskError
	if _, err := atoll.Get(ctx, boom.Remote(ctx, c)); !errors.As(err, &te) || !strings.Contains(te.Message, "boom") {
		t.Fatalf("panicking call: want its TaskError, got %v", err)
	}
	// Restarted: the constructor ran again and the state is fresh.
	if v, err := atoll.Get(ctx, incr.Remote(ctx, c, atoll.Value(1))); err != nil || v != 11 {
		t.Fatalf("after restart: %v %v (want 11: state re-initialised)", v, err)
	}
	if n := ctorRuns.Load(); n != 2 {
		t.Fatalf("constructor ran %d times, want 2", n)
	}
	if _, err := atoll.Get(ctx, boom.Remote(ctx, c)); err == nil {
		t.Fatal("second panic: want an error")
	}
	_, err = atoll.Get(ctx, incr.Remote(ctx, c, atoll.Value(1)))
	var died *atoll.ActorDiedError
	if !errors.As(err, &died) || !strings.Contains(died.Message, "max_restarts") {
		t.Fatalf("after restarts ran out: want ActorDied, got %v", err)
	}
	if _, err := atoll.Get(ctx, incr.Remote(ctx, c, atoll.Value(1))); !errors.Is(err, atoll.ErrActorDied) {
		t.Fatalf("calls on a dead actor: %v", err)
	}
}

func TestActorCallRetriedOnRestartedActor(t *testing.T) {
	ctx := start(t)
	panicCalls.Store(0)
	c, err := counterType.New(ctx, atoll.Value(7), atoll.MaxRestarts(1), atoll.MaxTaskRetries(1))
	if err != nil {
		t.Fatal(err)
	}
	if v, err := atoll.Get(ctx, panicOnce.Remote(ctx, c)); err != nil || v != 7 {
		t.Fatalf("retried call: %v %v", v, err)
	}
	if n := panicCalls.Load(); n != 2 {
		t.Fatalf("method ran %d times, want 2", n)
	}
}

func TestCrashedActorRestartsAndKeepsServing(t *testing.T) {
	ctx := start(t)
	ctorRuns.Store(0)
	c, err := counterType.New(ctx, atoll.Value(0), atoll.MaxRestarts(-1))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := atoll.Get(ctx, incr.Remote(ctx, c, atoll.Value(3))); err != nil {
		t.Fatal(err)
	}
	if err := atolltest.CrashActor(ctx, c); err != nil {
		t.Fatal(err)
	}
	// The crash is asynchronous: wait for the constructor's second run.
	testutil.Eventually(t, "the actor to restart", func() bool { return ctorRuns.Load() == 2 })
	if v, err := atoll.Get(ctx, incr.Remote(ctx, c, atoll.Value(1))); err != nil || v != 1 {
		t.Fatalf("after an injected crash: %v %v (want 1: fresh state)", v, err)
	}
}

func TestNamedActorsLookupAndKill(t *testing.T) {
	ctx := start(t)
	c, err := counterType.New(ctx, atoll.Value(100), atoll.ActorName("acc"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := counterType.New(ctx, atoll.Value(0), atoll.ActorName("acc")); !errors.Is(err, atoll.ErrInvalidArgument) {
		t.Fatalf("duplicate name: %v", err)
	}
	if _, err := atoll.Get(ctx, incr.Remote(ctx, c, atoll.Value(1))); err != nil {
		t.Fatal(err)
	}
	found, err := atoll.GetActor[*counter](ctx, "acc")
	if err != nil || found.ID() != c.ID() || found.Name() != "acc" {
		t.Fatalf("GetActor: %v %v", found.ID(), err)
	}
	if v, err := atoll.Get(ctx, incr.Remote(ctx, found, atoll.Value(1))); err != nil || v != 102 {
		t.Fatalf("call through a looked-up handle: %v %v", v, err)
	}
	if _, err := atoll.GetActor[*counter](ctx, "missing"); !errors.Is(err, atoll.ErrNotFound) {
		t.Fatalf("missing actor: %v", err)
	}
	if _, err := atoll.GetActor[string](ctx, "acc"); !errors.Is(err, atoll.ErrInvalidArgument) {
		t.Fatalf("wrong type: %v", err)
	}
	if err := atoll.Kill(ctx, c); err != nil {
		t.Fatal(err)
	}
	if _, err := atoll.Get(ctx, incr.Remote(ctx, c, atoll.Value(1))); !errors.Is(err, atoll.ErrActorDied) {
		t.Fatalf("call after Kill: %v", err)
	}
	// The name is free again once the GCS has seen the death.
	testutil.Eventually(t, "the name to be released", func() bool {
		_, err := atoll.GetActor[*counter](ctx, "acc")
		return errors.Is(err, atoll.ErrNotFound)
	})
	if _, err := counterType.New(ctx, atoll.Value(0), atoll.ActorName("acc")); err != nil {
		t.Fatalf("reusing a dead actor's name: %v", err)
	}
}

func TestActorConstructorFailure(t *testing.T) {
	ctx := start(t)
	c, err := counterType.New(ctx, atoll.Value(-1))
	if err != nil {
		t.Fatal(err)
	}
	_, err = atoll.Get(ctx, incr.Remote(ctx, c, atoll.Value(1)))
	var died *atoll.ActorDiedError
	if !errors.As(err, &died) || !strings.Contains(died.Message, "negative start") {
		t.Fatalf("want ActorDied naming the constructor error, got %v", err)
	}
}
