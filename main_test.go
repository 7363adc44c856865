package atoll_test

import (
	"context"
	"testing"
	"time"

	"github.com/atoll-runtime/atoll"
	"github.com/atoll-runtime/atoll/internal/ids"
	"github.com/atoll-runtime/atoll/internal/owner"
	"github.com/atoll-runtime/atoll/internal/runtime"
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

// The runtime's state that tests check, read through internal/runtime
// (the running driver is the process's current runtime).

// jobID is the running driver's job id in hex: tests match it with the
// atoll.job_id of exported spans.
func jobID() string { return runtime.Current().JobID().String() }

// borrowReportsReceived counts the standalone borrow reports the running
// driver's owner received.
func borrowReportsReceived() uint64 { return runtime.Current().BorrowReportsReceived() }

// generatorCounts reports how many items g's task has reported to the
// owner and how many the caller took.
func generatorCounts[R any](g *atoll.ObjectRefGenerator[R]) (reported, taken int) {
	task, err := ids.FromHex(g.TaskID())
	if err != nil {
		return 0, 0
	}
	return runtime.Current().GeneratorCounts(task)
}

// generatorStreams is the number of generator streams the running
// driver's owner table holds.
func generatorStreams() (n int) {
	runtime.Current().Owner(func(t *owner.Table) { n = t.Stats().Generators })
	return n
}
