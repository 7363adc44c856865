// Package graph executes Dask-style task graphs on atoll (Dask-on-Ray for
// Go).
//
// A Graph maps keys to expressions: a Task calling a function registered
// with Register, a Ref to another key (an alias, as a key's whole value),
// a literal (Lit), a List, an Object already in the store, an Item of a
// slice value, or a MultiReturn task whose outputs are separate objects.
// TupleKey writes Dask's tuple keys:
//
//	var inc = graph.Register("inc", func(_ context.Context, x int) (int, error) { return x + 1, nil })
//	var add = graph.Register("add", func(_ context.Context, a, b int) (int, error) { return a + b, nil })
//
//	g := graph.Graph{
//		"x": graph.Lit(1),
//		"y": graph.Call("inc", graph.Ref("x")),
//		"z": graph.Call("add", graph.Ref("y"), graph.Lit(10)),
//	}
//	vals, err := graph.Compute(ctx, g, []graph.Key{"z"}) // vals[0] == 12
//
// Validate reports what is wrong with a graph as typed errors
// (CycleError, MissingKeyError, UnregisteredFuncError, ArgTypeError, all
// matching atoll.ErrInvalidArgument). Builder builds graphs from typed
// registrations (Register2 ...), checked by the compiler:
//
//	b := graph.NewBuilder()
//	x := graph.Const(b, 3)
//	y := graph.Apply2(b, add2, x, x) // add2 = graph.Register2("add2", ...)
//	v, err := y.Compute(ctx)          // 6
//
// Compute culls the graph to what the requested keys need, fuses linear
// chains into one task (WithFusion), and submits each remaining task as
// one atoll task, in one pass, dependencies first, with its dependencies
// passed as object refs: atoll resolves them before the task runs, so no
// worker ever blocks on a Get. In the worker, one atoll function
// (atoll/graph.exec) decodes the task, decodes each dependency as the
// parameter's type (a []float64 is a zero-copy view of shared memory),
// calls the registered function and stores its result. Persist submits
// the same way and returns the graph with the requested keys replaced by
// Object expressions, so later computations on it re-run nothing.
//
// Callbacks hook into a run: Callback in the driver (PreSubmit, which may
// supply a result instead of running the task, PostSubmit,
// PostSubmitAll, Finish) and TaskCallback in the process running each
// task (PreTask, PostTask), registered by name. ProgressBar and
// WithResultCache are built on them. Shuffle repartitions with
// multiple-return map tasks, 2·P tasks instead of the P² + 2·P of
// NaiveShuffle.
//
// Register functions and task callbacks at package init (in var
// declarations) so that every process of the binary knows them, and call
// atoll.Init before anything else in main, as for any atoll program.
// Functions and task callbacks are two namespaces of the program's
// registry, next to atoll's remote functions and actor types: a name
// taken twice in one of them panics at init (with atoll: graph function
// "inc" registered twice), and a name the process looking it up does
// not know is a NotRegisteredError whose Kind is "graph function" or
// "graph task callback".
//
// # Errors
//
// A graph is checked before anything is submitted (Validate's errors).
// A task that fails returns an atoll.TaskError named after its key, and
// errors.As and errors.Is see through it, wherever the task ran, to a
// FunctionError when a registered function returned an error or panicked
// (naming the function and the key; the function's own errors of types
// registered with atoll.RegisterError are found too), a NotRegisteredError
// (atoll.ErrNotFound) when the worker's binary lacks a function, a
// MalformedError when a task spec does not decode, or an error matching
// atoll.ErrInvalidArgument when a value does not fit where it goes (an
// Item past the end of a slice).
//
// # Encodings
//
// Each kind of bytes has one encoding. What the driver tells a worker
// about a task (its expression, how to decode its dependencies, its task
// callbacks) is a protobuf message, atollpb.GraphTask, like every message
// atoll sends between processes; the worker checks all of it before it
// runs anything. Values (literals, results, dependencies) are encoded as
// atoll.Put and Remote encode them: []byte, []float64, []float32, []int64
// and []int32 as their raw little-endian memory (read in place, as views
// of shared memory), protobuf messages in their wire format, any other Go
// value with encoding/gob. The result cache stores each result as those
// bytes after one byte naming their encoding.
package graph
