package node_test

import (
	"io"
	"os"
	"testing"

	"github.com/atoll-runtime/atoll/internal/testutil"

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
	testutil.VerifyNoLeaks(m)
}
