package node_test

import (
	"io"
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/atoll-runtime/atoll/internal/actors"
	"github.com/atoll-runtime/atoll/internal/raylet"
)

func TestMain(m *testing.M) {
	if os.Getenv(raylet.EnvWorker) == "1" {
		// A raylet under test started this binary as a worker process (a
		// driver's node starts one of its own binary at once). The worker
		// runtime is the root package's, so this process only stays idle
		// until the raylet closes its connection or kills it; it must not
		// run the tests again.
		_, _ = io.Copy(io.Discard, os.NewFile(raylet.ConnFD, "atoll-raylet"))
		os.Exit(0)
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
