package atoll_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/atoll-runtime/atoll"
	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/actors"
)

// Duplicated results (a retry racing a slow reply, a network that
// repeats) must not change any outcome: the owner applies each at most
// once.
func TestDuplicatedResultsAreHarmless(t *testing.T) {
	fi := actors.NewFaultInjector()
	fi.Duplicate(actors.MessageType[*atollpb.TaskResult](), -1)
	ctx := start(t, atoll.WithFaultInjector(fi))
	a := double.Remote(ctx, atoll.Value(5))
	if v, err := atoll.Get(ctx, add.Remote(ctx, a, a)); err != nil || v != 20 {
		t.Fatalf("tasks under duplicated results: %v %v", v, err)
	}
	c, err := counterType.New(ctx, atoll.Value(0))
	if err != nil {
		t.Fatal(err)
	}
	var last atoll.ObjectRef[int]
	for range 10 {
		last = incr.Remote(ctx, c, atoll.Value(1))
	}
	if v, err := atoll.Get(ctx, last); err != nil || v != 10 {
		t.Fatalf("actor calls under duplicated results: %v %v", v, err)
	}
	if fi.Stats().Duplicated == 0 {
		t.Fatal("no result was duplicated: the injector is not installed")
	}
}

// A submission lost on its way to the raylet leaves its result pending:
// Get reports the timeout, and the node keeps working.
func TestDroppedSubmissionTimesOut(t *testing.T) {
	fi := actors.NewFaultInjector()
	ctx := start(t, atoll.WithFaultInjector(fi))
	fi.Drop(actors.MessageType[*atollpb.SubmitTask](), 1)
	lost := double.Remote(ctx, atoll.Value(1))
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	if _, err := atoll.Get(short, lost); !errors.Is(err, atoll.ErrGetTimeout) {
		t.Fatalf("want GetTimeout for a dropped submission, got %v", err)
	}
	if v, err := atoll.Get(ctx, double.Remote(ctx, atoll.Value(2))); err != nil || v != 4 {
		t.Fatalf("after the drop: %v %v", v, err)
	}
	if fi.Stats().Dropped != 1 {
		t.Fatalf("dropped %d messages, want 1", fi.Stats().Dropped)
	}
}

// A delayed store request only slows things down.
func TestDelayedStoreRequestsStillComplete(t *testing.T) {
	fi := actors.NewFaultInjector()
	ctx := start(t, atoll.WithFaultInjector(fi))
	fi.Delay(actors.MessageType[*atollpb.CreateObjectRequest](), 20*time.Millisecond, 3)
	for i := range 4 {
		ref, err := atoll.Put(ctx, make([]byte, 1<<20))
		if err != nil {
			t.Fatalf("put %d: %v", i, err)
		}
		ref.Release()
	}
	if fi.Stats().Delayed != 3 {
		t.Fatalf("delayed %d creations, want 3", fi.Stats().Delayed)
	}
}

// A raylet that fails (a bug; here an injected panic) is stopped, not
// restarted with none of its state (its queues, workers and running
// tasks): the node fails over as Ray's does with its raylet, so the
// driver's pending and later tasks fail with NodeDiedError naming the
// cause instead of waiting forever.
func TestRayletFailureStopsTheNode(t *testing.T) {
	fi := actors.NewFaultInjector()
	ctx := start(t, atoll.WithFaultInjector(fi))
	if v, err := atoll.Get(ctx, double.Remote(ctx, atoll.Value(2))); err != nil || v != 4 {
		t.Fatalf("double(2) = %v, %v", v, err)
	}
	fi.Panic(actors.MessageType[*atollpb.SubmitTask](), 1)
	for i, x := range []int{3, 4} { // the one the raylet failed on, then a later one
		c, cancel := context.WithTimeout(ctx, time.Minute)
		_, err := atoll.Get(c, double.Remote(c, atoll.Value(x)))
		cancel()
		if !errors.Is(err, atoll.ErrNodeDied) || !strings.Contains(err.Error(), "raylet failed") {
			t.Fatalf("task %d after the raylet failed: %v, want a NodeDiedError naming the raylet", i, err)
		}
	}
}
