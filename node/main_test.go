package node_test

import (
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/atoll-runtime/atoll/actors"
	"github.com/atoll-runtime/atoll/raylet"
)

func TestMain(m *testing.M) {
	if os.Getenv(raylet.EnvWorker) == "1" {
		// The node tests run no worker processes (the worker runtime is
		// the root package's): a raylet that started this binary as one
		// is a bug in a test, not a reason to run the tests again.
		fmt.Fprintln(os.Stderr, "node tests: started as a worker process")
		os.Exit(3)
	}
	goleak.VerifyTestMain(m,
		// protoactor's dead-letter log throttle lives one second after a
		// dead letter by design (as in the other packages' TestMain).
		goleak.IgnoreTopFunction("github.com/asynkron/protoactor-go/actor.NewDeadLetter.NewThrottle.func4.1"),
		// Pooled dispatcher goroutines park between passes and exit after
		// 2 s idle.
		goleak.IgnoreTopFunction(actors.PooledDispatcherIdle),
	)
}
