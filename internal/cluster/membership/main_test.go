package membership

import (
	"testing"

	"github.com/atoll-runtime/atoll/internal/testutil"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	testutil.VerifyNoLeaks(m,
		// memberlist's Shutdown does not wait for a probe in flight: it
		// ends when its ack timer fires. A member cut off the network
		// (partition_test.go) has stretched its probe interval (local
		// health scales it up to 8x), so its last probe outlives the test.
		goleak.IgnoreTopFunction("github.com/hashicorp/memberlist.(*Memberlist).probeNode"),
	)
}
