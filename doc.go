// Package atoll is a Ray-style distributed runtime for Go: remote
// functions (tasks) that return object references, stateful actors, and a
// per-node shared-memory object store with a hard memory limit.
//
// Register remote functions and actor types at package init, so every
// process of the same binary knows them by name:
//
//	var Sum = atoll.NewFunc1("sum", func(ctx context.Context, xs []float64) (float64, error) {
//		return floats.Sum(xs), nil
//	})
//
//	func main() {
//		ctx := context.Background()
//		if err := atoll.Init(ctx); err != nil { ... }
//		defer atoll.Shutdown(ctx)
//		ref, _ := atoll.Put(ctx, xs)          // stored once in shared memory
//		total := Sum.Remote(ctx, ref)         // runs on a worker; xs is a zero-copy view there
//		v, err := atoll.Get(ctx, total)
//	}
//
// Arguments are plain values (atoll.Value(x)) or ObjectRefs, resolved
// before the function runs; tasks may submit tasks. Functions, methods and
// actor constructors take up to six typed arguments (NewFunc0 to
// NewFunc6, NewMethod0 to NewMethod6, NewActorType1 to NewActorType6).
// Call options are typed by the kind of call they apply to (TaskOption,
// ActorOption, MethodOption), so the compiler refuses an actor's option on
// a task; Options on a function, method or actor type binds defaults that
// a call's own options override. A streaming generator (NewGenFunc1,
// ...) yields items the caller reads as they come, each an ObjectRef of
// its own (ObjectRefGenerator.Next, All). Errors are typed:
// TaskError, WorkerCrashedError, ActorDiedError, ObjectStoreFullError,
// ObjectLostError, GetTimeoutError, CancelledError (errors.Is/As). Register
// your own error types and sentinels with RegisterError and they come back
// from tasks as themselves. ActorHandles pass to tasks and actors as values.
//
// Init with no address starts the embedded local cluster inside the
// process: an embedded NATS server with JetStream (the control plane and
// the GCS's storage), the GCS, the object store and a raylet, each a
// supervised protoactor-go actor. With an address (WithAddress or
// ATOLL_ADDRESS) the driver joins a running cluster with a small node of
// its own. Either way the process becomes the job's driver: it owns the
// refs, tasks and actors it creates. Shutdown stops it all.
//
// Workers run your own binary: a raylet re-executes it as a worker
// process, where Init does not return but serves the tasks and the actor
// the raylet sends it, with the functions, actor types and errors the
// binary registered at package init (so register them in var
// declarations or init functions, never after Init). Processes that
// atoll's tooling starts as cluster nodes (test binaries in
// internal/testcluster, for instance) likewise serve their node from
// Init. IsWorker tells a program it runs as one of those. Code inside a
// task calls the SDK as the driver does: Remote, Put, Get, New and method
// calls made with the task's context go to the process running the task,
// which owns what they create.
//
// Package atolltest holds the calls for testing and operating programs
// built on atoll: killing workers, actors and nodes, partitions, failed
// creations, fault logs, memory sampling, the node's and the cluster's
// statistics, and the head's Active Memory Manager. `atoll start` runs
// long-lived cluster nodes; see README.md and ARCHITECTURE.md.
package atoll
