package testutil

import (
	"testing"

	"go.uber.org/goleak"
)

// Goroutines that outlive their work by design, which no test can wait
// out cheaply.
const (
	// DeadLetterThrottle is protoactor's dead-letter log throttle: it
	// lives one second after a dead letter (a message to a stopped
	// actor, say).
	DeadLetterThrottle = "github.com/asynkron/protoactor-go/actor.NewDeadLetter.NewThrottle.func4.1"
	// PooledDispatcher is the goroutine of atoll's pooled actor
	// dispatcher: it parks between passes and exits after 2 s idle
	// (internal/actors checks that this is its name).
	PooledDispatcher = "github.com/atoll-runtime/atoll/internal/actors.(*pooledDispatcher).run"
	// MemberlistProbe is memberlist's probe of a peer: Shutdown does not
	// wait for one in flight, which ends when its ack timer fires (the
	// probe timeout, stretched up to 8x by a member's local health after
	// a partition). Any package whose tests run gossip membership may
	// end with one.
	MemberlistProbe = "github.com/hashicorp/memberlist.(*Memberlist).probeNode"
)

// LeakOptions are the goleak options every package uses: the goroutines
// above are not leaks. A package adds its own after them.
func LeakOptions(extra ...goleak.Option) []goleak.Option {
	return append([]goleak.Option{
		goleak.IgnoreTopFunction(DeadLetterThrottle),
		goleak.IgnoreTopFunction(PooledDispatcher),
		goleak.IgnoreTopFunction(MemberlistProbe),
	}, extra...)
}

// VerifyNoLeaks runs the package's tests and fails the binary if they
// leave goroutines behind (other than LeakOptions' and extra). Call it
// from TestMain.
func VerifyNoLeaks(m *testing.M, extra ...goleak.Option) {
	goleak.VerifyTestMain(m, LeakOptions(extra...)...)
}
