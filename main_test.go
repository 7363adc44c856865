package atoll_test

import (
	"context"
	"testing"
	"time"

	"github.com/atoll-runtime/atoll"
	"github.com/atoll-runtime/atoll/internal/testmain"
)

func TestMain(m *testing.M) { testmain.Run(m) }

// start runs atoll for one test with a small object store and goroutine
// workers (tests that need worker processes pass ProcessWorkers).
func start(t *testing.T, opts ...atoll.Option) context.Context {
	t.Helper()
	return testmain.Init(t, 2*time.Minute, append([]atoll.Option{atoll.WithObjectStoreMemory(256 << 20), atoll.WithNumCPUs(2),
		atoll.WithWorkerMode(atoll.InProcessWorkers)}, opts...)...)
}

// eventually polls cond until it holds or the deadline passes.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.After(20 * time.Second)
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-deadline:
			t.Fatalf("timed out waiting for %s", what)
		case <-tick.C:
		}
	}
}
