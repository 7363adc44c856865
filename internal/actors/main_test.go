package actors

import (
	"log/slog"
	"testing"
	"time"

	"github.com/atoll-runtime/atoll/internal/testutil"

	"github.com/asynkron/protoactor-go/actor"
)

func TestMain(m *testing.M) {
	// No ignores: an actor system leaves no goroutine behind once its actors
	// are idle. (protoactor's dead-letter throttle starts one per logging
	// window, actor.NewThrottle.func1, that exits when the window closes;
	// these tests produce no dead letters.)
	testutil.VerifyNoLeaks(m)
}

// waitTimeout bounds every wait of these tests.
const waitTimeout = 10 * time.Second

// newTestSystem returns an actor system that logs nothing.
func newTestSystem(t *testing.T) *actor.ActorSystem {
	t.Helper()
	system := NewSystem(slog.New(slog.DiscardHandler))
	t.Cleanup(system.Shutdown)
	return system
}

// recv returns the next value from ch or fails the test after waitTimeout.
func recv[T any](t *testing.T, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(waitTimeout):
		t.Fatalf("timed out after %v waiting for a %T", waitTimeout, *new(T))
		panic("unreachable")
	}
}

// expectNone fails the test if ch holds a value now.
func expectNone[T any](t *testing.T, ch <-chan T) {
	t.Helper()
	select {
	case v := <-ch:
		t.Fatalf("unexpected %T %v", v, v)
	default:
	}
}

// result waits for a future and fails the test on error.
func result(t *testing.T, f actor.Future) any {
	t.Helper()
	v, err := f.Result()
	if err != nil {
		t.Fatalf("future: %v", err)
	}
	return v
}
