package raylet

import (
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/atoll-runtime/atoll/internal/actors"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// protoactor's dead-letter log throttle lives one second after a
		// dead letter (a message to a stopped worker, say) by design.
		goleak.IgnoreTopFunction("github.com/asynkron/protoactor-go/actor.NewDeadLetter.NewThrottle.func4.1"),
		// Hot dispatcher goroutines park between passes and exit after
		// 2 s idle.
		goleak.IgnoreTopFunction(actors.PooledDispatcherIdle),
	)
}

// waitTimeout bounds every wait of these tests.
const waitTimeout = 10 * time.Second

// recv returns the next value from ch, failing the test with msg after
// waitTimeout.
func recv[T any](t testing.TB, ch <-chan T, msg string) T {
	t.Helper()
	timer := time.NewTimer(waitTimeout)
	defer timer.Stop()
	select {
	case v := <-ch:
		return v
	case <-timer.C:
		t.Fatalf("after %v: %s", waitTimeout, msg)
		panic("unreachable")
	}
}

// eventually polls cond every 5 ms until it holds, failing the test with
// what after waitTimeout.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	timer := time.NewTimer(waitTimeout)
	defer timer.Stop()
	for !cond() {
		select {
		case <-tick.C:
		case <-timer.C:
			t.Fatalf("after %v still waiting for %s", waitTimeout, what)
		}
	}
}
