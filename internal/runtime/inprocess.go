package runtime

import (
	"go.opentelemetry.io/otel/trace"

	"github.com/atoll-runtime/atoll/internal/node"
)

// In-process workers (Settings.InProcessWorkers): the driver's node runs
// each of its workers as a Worker runtime on goroutines of the driver's
// process, over an in-memory connection (workerconn.Pipe), instead of a
// process over a socket pair. The worker protocol is the same, so the
// two modes differ in isolation only:
//
//   - shared: the process's memory (globals, the heap: a task that
//     corrupts memory or calls os.Exit takes the driver with it), the
//     node's arena mapping (the driver's), the process's telemetry (the
//     driver's tracer provider, span routes and resource identity: a
//     worker's spans carry its atoll.worker_id attribute), its logger,
//     the Go runtime (GOMAXPROCS, the garbage collector, panics that
//     escape a task's goroutine);
//   - not shared: everything the protocol carries — each worker has its
//     own owner table and owner actor (in an actor system of its own),
//     its own store client (its pins, released when it dies), its own
//     queue of tasks and concurrency groups; refs and handles in a task's
//     arguments are lent to it, its results handed over, as between
//     processes (one frame encoding each way: see workerconn.Pipe).
//
// A worker that is killed (a kill-worker fault, force-cancel, an actor
// crash) has its connection closed and its tasks' contexts cancelled; Go
// cannot stop a goroutine, so a task that ignores its context runs on,
// and whatever it then sends is dropped. Ending a worker ends its
// runtime (end), never the process.
//
// SDK calls in task code use the runtime of the task's context
// (FromContext): a call made with another context (context.Background()
// in a task) goes to the process's current runtime, the driver's.

// inProcessWorkers is the node hook (node.Hooks.InProcess) that starts
// each worker as a Worker runtime with the driver's settings and tracer
// provider, serving its end of the connection on a goroutine.
func (d *Driver) inProcessWorkers(tp trace.TracerProvider) func(node.InProcessWorker) error {
	s := d.cfg.Settings
	s.TracerProvider = tp
	return func(iw node.InProcessWorker) error {
		w, err := NewWorker(s, WorkerConfig{WorkerID: iw.ID, NodeID: iw.Node, Arena: iw.Arena, Conn: iw.Conn,
			Binary: d.workerBinary, InProcess: true})
		if err != nil {
			return err
		}
		go w.Serve()
		return nil
	}
}

// end ends an in-process worker's runtime: its connection closes (if it
// has not), its owner table closes (the tasks it submitted and still
// waits for fail; what it owned the node frees, as for a dead process),
// and its actor system goes. The process goes on.
func (w *Worker) end() {
	w.endOnce.Do(func() {
		w.closed.Store(true)
		w.srv.Conn().Close()
		w.stopOwner()
		w.system.Root.Stop(w.ownerPID)
		w.system.Shutdown()
		scope.shared.Add(-1)
		close(w.done)
	})
}
