// Package testmain is the TestMain of the packages whose tests run atoll
// with worker processes: the test binary is re-executed as a worker (or a
// node) and must serve instead of running the tests, and the tests must
// leave no goroutine behind.
package testmain

import (
	"context"
	"testing"

	"go.uber.org/goleak"

	"github.com/atoll-runtime/atoll"
	"github.com/atoll-runtime/atoll/actors"
)

// Run serves as a worker or node process if this binary was started as
// one (atoll.Init never returns then), else runs the tests and checks for
// leaked goroutines, ignoring the two that outlive their work by design:
// protoactor's dead-letter log throttle (one second after a dead letter,
// a message to a stopped worker, say) and pooled dispatcher goroutines
// (parked between passes, gone after 2 s idle).
func Run(m *testing.M) {
	if atoll.IsWorker() {
		_ = atoll.Init(context.Background())
	}
	goleak.VerifyTestMain(m,
		goleak.IgnoreTopFunction("github.com/asynkron/protoactor-go/actor.NewDeadLetter.NewThrottle.func4.1"),
		goleak.IgnoreTopFunction(actors.PooledDispatcherIdle),
	)
}
