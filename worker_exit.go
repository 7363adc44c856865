package atoll

import (
	"context"
	"os"
	"sync"
	"time"

	"github.com/atoll-runtime/atoll/internal/telemetry"
)

// workerFlushTimeout bounds the export of a worker process's last spans
// when it exits (within workerproc.ExitGrace, after which its raylet
// kills it).
const workerFlushTimeout = 2 * time.Second

var workerExitOnce sync.Once

// workerProfileStop ends the CPU profile EnvWorkerCPUProfile started, if
// any: exitWorker calls it so that a worker asked to exit still writes
// its profile.
var workerProfileStop = func() {}

// exitWorker ends a worker process: the raylet asked it to exit or closed
// its connection. The spans it still holds are exported first: those of
// the jobs it ran (to each job's collector) and its own.
func (rt *core) exitWorker() {
	workerExitOnce.Do(func() {
		workerProfileStop()
		ctx, cancel := context.WithTimeout(context.Background(), workerFlushTimeout)
		defer cancel()
		_ = telemetry.ShutdownRoutes(ctx)
		if rt.ownTP != nil {
			_ = rt.ownTP.Shutdown(ctx)
		}
		os.Exit(0)
	})
	select {} // another goroutine is exiting the process
}
