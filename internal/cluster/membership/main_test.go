package membership

import (
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// protoactor's dead-letter log throttle lives one second after a
		// dead letter by design (as in the other packages' TestMain).
		goleak.IgnoreTopFunction("github.com/asynkron/protoactor-go/actor.NewDeadLetter.NewThrottle.func4.1"),
		// memberlist's Shutdown does not wait for a probe in flight: it
		// ends when its ack timer fires. A member cut off the network
		// (partition_test.go) has stretched its probe interval (local
		// health scales it up to 8x), so its last probe outlives the test.
		goleak.IgnoreTopFunction("github.com/hashicorp/memberlist.(*Memberlist).probeNode"),
	)
}
