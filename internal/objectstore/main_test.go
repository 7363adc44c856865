package objectstore

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/atoll-runtime/atoll/internal/actors"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// protoactor's dead-letter log throttle starts a goroutine that
		// lives for DeadLetterThrottleInterval (1s) after a dead letter is
		// logged, e.g. when a test stops an actor that already stopped.
		goleak.IgnoreTopFunction("github.com/asynkron/protoactor-go/actor.NewDeadLetter.NewThrottle.func4.1"),
		goleak.IgnoreTopFunction(actors.PooledDispatcherIdle),
	)
}
