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
// its own. Package node assembles both kinds of node, runs the cluster's
// nodes (`atoll start`) and queries a running cluster (clusterclient.GetStatus);
// this package is the SDK and the driver on top of a node. See
// ARCHITECTURE.md.
package atoll
