package atoll_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/atoll-runtime/atoll"
)

func TestPutAfterShutdownSaysShutDown(t *testing.T) {
	ctx := start(t)
	ref, err := atoll.Put(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := atoll.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	_, err = atoll.Put(ctx, 2)
	if !errors.Is(err, atoll.ErrShutDown) || !errors.Is(err, atoll.ErrNotInitialized) || !strings.Contains(err.Error(), "Shutdown has been called") {
		t.Fatalf("Put after Shutdown: %v, want ErrShutDown saying Shutdown was called", err)
	}
	if _, err := atoll.Get(ctx, ref); !errors.Is(err, atoll.ErrShutDown) {
		t.Fatalf("Get of a ref from before Shutdown: %v, want ErrShutDown", err)
	}
	if _, _, err := atoll.Wait(ctx, []atoll.Ref{ref}); !errors.Is(err, atoll.ErrShutDown) {
		t.Fatalf("Wait after Shutdown: %v, want ErrShutDown", err)
	}
}

func TestFunctionRegisteredAfterInitNamesTheFix(t *testing.T) {
	ctx := startProcesses(t)
	// Registered in the test, after Init: the worker processes, which run
	// this binary's package initialisation only, do not know it.
	name := fmt.Sprintf("late.%d", time.Now().UnixNano())
	late := atoll.NewFunc1(name, func(_ context.Context, x int) (int, error) { return x, nil })
	_, err := atoll.Get(ctx, late.Remote(ctx, atoll.Value(1)))
	if err == nil {
		t.Fatal("a function registered after Init ran in a worker process")
	}
	for _, want := range []string{name, "not registered in the worker binary", "package level", "atoll.Init"} {
		if !strings.Contains(err.Error(), want) {
			t.Fatalf("error %q does not say %q", err, want)
		}
	}
}

func TestGetTimeoutNamesTheTask(t *testing.T) {
	ctx := start(t)
	key := newChanKey(t)
	ref := waitStarted.Remote(ctx, atoll.Value(key))
	<-key.started()
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	_, err := atoll.Get(short, ref)
	var te *atoll.GetTimeoutError
	if !errors.As(err, &te) || !errors.Is(err, atoll.ErrGetTimeout) {
		t.Fatalf("Get past its deadline: %v, want a GetTimeoutError", err)
	}
	if te.TaskName != "test.waitStarted" || te.TaskID == "" || !strings.Contains(te.TaskState, "queued for a worker or running") {
		t.Fatalf("the timeout names task %q (%q) in state %q, want test.waitStarted running", te.TaskName, te.TaskID, te.TaskState)
	}
	for _, want := range []string{"test.waitStarted", te.TaskID, "attempt 0", "deadline"} {
		if !strings.Contains(err.Error(), want) {
			t.Fatalf("error %q does not say %q", err, want)
		}
	}
	if err := atoll.Cancel(ctx, ref); err != nil {
		t.Fatal(err)
	}
	if _, err := atoll.Get(ctx, ref); !errors.Is(err, atoll.ErrCancelled) {
		t.Fatalf("cancelled: %v", err)
	}
}
