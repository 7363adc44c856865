// Package workerproc runs a node's workers as processes: the user's own
// binary re-executed in worker mode (see raylet.EnvWorker), one process per
// pool worker and one per actor, each with the node's arena mapped and a
// socket pair to the raylet carrying atollpb.Frame messages.
//
// It implements raylet.ProcessWorkers. A task worker takes its tasks and
// gives back their results through its raylet.Slot: the raylet writes a
// task's frame to the process itself, and the connection's reader hands
// the result straight to its owner. An actor host queues the calls for its
// process and sends them one at a time; a call's result also goes from the
// reader to the caller. The proxy serves, on the reader goroutine, the
// requests a worker makes on its own behalf (tasks it submits, actor
// calls, the object store through an objectstore.FrameServer, the GCS).
package workerproc
