package atoll_test

import (
	"context"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/atoll-runtime/atoll"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// OpenTelemetry's global provider and the GC cleanup goroutine
		// outlive every test by design.
		goleak.IgnoreAnyFunction("go.opencensus.io/stats/view.(*worker).start"),
	)
}

// start runs atoll for one test with a small object store.
func start(t *testing.T, opts ...atoll.Option) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	opts = append([]atoll.Option{atoll.WithObjectStoreMemory(256 << 20), atoll.WithNumCPUs(2)}, opts...)
	if err := atoll.Init(ctx, opts...); err != nil {
		t.Fatalf("Init: %v", err)
	}
	t.Cleanup(func() {
		if err := atoll.Shutdown(context.Background()); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
	})
	return ctx
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
