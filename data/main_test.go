package data_test

import (
	"context"
	"testing"
	"time"

	"github.com/atoll-runtime/atoll"
	"github.com/atoll-runtime/atoll/internal/testmain"
)

func TestMain(m *testing.M) { testmain.Run(m) }

// start runs atoll for one test with worker processes (a dataset's tasks
// run in them, reading blocks from shared memory) and a small store.
func start(t *testing.T, opts ...atoll.Option) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	opts = append([]atoll.Option{atoll.WithObjectStoreMemory(256 << 20), atoll.WithNumCPUs(2),
		atoll.WithWorkerMode(atoll.ProcessWorkers)}, opts...)
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
