// Package runtime is what runs behind the SDK (package atoll) in one
// process: the owner of the refs, tasks and actors the process creates,
// its link to its node, and the executor of the tasks the node sends it.
// The root package is the typed facade over it; package atolltest reaches
// it for the ops and chaos calls.
//
// # Types
//
// Runtime holds what a driver and a worker process both have:
//
//   - the owner shell (ownershell.go): the process's owner.Table under
//     one mutex, with its effects queued and applied outside the lock by
//     one drainer at a time, in the Table's order;
//   - the owner actor (owner.go), which applies results, actor events,
//     collected refs and borrowers' reports to the Table;
//   - the link to the node (nodeLink: submit, cancel, call an actor,
//     report a generator's items and acks, borrow reports, kills), the
//     store client (storeAPI) and the GCS client (gcsAPI);
//   - the process's ids, tracer and logger, and the SDK's settings.
//
// Driver and Worker build a Runtime and differ only by what they inject
// into it: the link, store, GCS and freer implementations, the owner
// actor, and the role (the role interface: the store of a goroutine
// worker, what starts and ends a task, what leaves with its outputs).
// Nothing in the Runtime asks which one it is.
//
//   - Driver (driver.go): the process that called atoll.Init. The node
//     runs in this process (the embedded single node, or the driver's own
//     node in a cluster); the link sends actor messages to its raylet,
//     with results delivered straight to the owner table on the raylet's
//     goroutine. It alone holds the node, the job's registration, the
//     signal handler, memory samplers, a fault plan's run and the watch on
//     its node's death. With in-process workers the raylet runs tasks on
//     goroutines through the driver's executor, in the owner's own
//     process.
//   - Worker (worker.go, workerserver.go): a worker process, the user's
//     binary re-executed by its raylet. The link, the store client and
//     the GCS client are frames on the connection to the raylet; the
//     connection server queues the tasks pushed to it and runs them in
//     order (an actor's calls by concurrency group, groups.go). It owns
//     the refs its tasks create and borrows those their owners lend them
//     (borrow.go: lending, reports in results and on their own, handing
//     over returned refs).
//
// A simulated process (sim.go) is a Runtime too: NewSimDriver and
// NewSimWorker build one over a simulator's link, store client, GCS client
// and environment (package sim), with the same owner shell and executor;
// nothing else in the runtime asks which it is, but for the hooks sim.go
// lists (ids, clock, timers, parking before a blocking select).
//
// # Which runtime a call uses
//
// A process has one current runtime (Current), set by atoll.Init and
// Shutdown, or by Serve in a worker process: the only package-level state
// here. A task's context carries the runtime executing it (FromContext),
// and Running(ctx) prefers it: SDK calls made by task code go to the
// runtime that runs the task even when several runtimes share a process.
// Refs and actor handles remember their runtime.
//
// # Serving
//
// Serve is what atoll.Init does first: in a process atoll started to
// serve (Serving), it runs a Worker or a cluster node and never returns.
//
// # The executor
//
// The executor (executor.go) runs what the registry (internal/registry)
// names: it resolves a task's arguments (inline values, pinned views of
// the store, objects fetched from other nodes), calls the invoker, and
// stores its outputs (inline, or in the store owned by the task's owner).
// Generator tasks report each item as they yield it (generator.go); the
// caller's end of the stream is a Stream (stream.go).
package runtime
