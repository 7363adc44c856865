package runtime

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/asynkron/protoactor-go/actor"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/ids"
	"github.com/atoll-runtime/atoll/internal/owner"
)

// MaxInlineTotal bounds the inline bytes of one task's results, and of
// the value arguments a process submits with one task: past it, values
// under the inline threshold go to the object store too (atoll's
// MaxInlineTotal).
const MaxInlineTotal = 512 << 10

// Settings are what the SDK's options tell a runtime, driver or worker
// process alike. The SDK fills in the defaults.
type Settings struct {
	// Logger is where the runtime logs (default slog.Default()).
	Logger *slog.Logger
	// TracerProvider is where spans go (nil: the process's default).
	TracerProvider trace.TracerProvider
	// InlineThreshold is the largest value kept inline (negative:
	// nothing is).
	InlineThreshold int
	// Namespace is the namespace of named actors.
	Namespace string
	// InProcessWorkers: the driver's node runs its workers as worker
	// runtimes on goroutines of the driver's process (inprocess.go),
	// not as processes.
	InProcessWorkers bool
}

// Runtime is what a driver and a worker process both have: the owner
// shell of the refs, tasks and actors the process creates (its
// owner.Table, the owner actor), the link to its node, the store and GCS
// clients, the process's ids, tracer and logger. Driver and Worker build
// one, injecting what differs (the link, store and GCS implementations
// and the role); the Runtime never asks which it is.
type Runtime struct {
	settings Settings
	log      *slog.Logger
	tracer   trace.Tracer
	// traceAll: the tracer provider records spans (telemetry.Records);
	// otherwise spans start only under a valid parent (spanning).
	traceAll bool
	// ownTP is the tracer provider this runtime made (shut down at its
	// stop), if any.
	ownTP *sdktrace.TracerProvider

	system   *actor.ActorSystem // the node's, or the worker process's own
	ownerPID *actor.PID
	store    storeAPI
	gcs      gcsAPI
	link     nodeLink
	// frees deletes objects this process owned: from the node's store, or
	// from every node of a cluster.
	frees freer
	role  role

	nodeID   ids.NodeID
	jobID    ids.JobID
	workerID ids.WorkerID
	putTask  ids.TaskID
	putSeq   atomic.Uint32

	// owner is this process's ownership state: objects, tasks, actors.
	owner *ownerShell
	// watches cancel tasks when the contexts they were submitted under
	// are done (ctxwatch.go).
	watches contextWatches
	// collected holds refs dropped by the garbage collector until the
	// owner actor applies them.
	collected collected
	// gens are the generator attempts this runtime executes, by task:
	// acks reach them here.
	gens sinks
	// liveViews counts the pinned Views not yet released (views.go).
	liveViews atomic.Int64
	gcRunning atomic.Bool

	closed atomic.Bool
	// sim is set in a process a simulator runs (sim.go), nil otherwise.
	sim *simState
	// dead is set when the process's node can no longer run its work
	// (the cluster declared a driver's node dead: dead.go): every
	// submission fails with it.
	dead atomic.Pointer[errs.NodeDiedError]
	// borrowReportsIn counts the standalone borrow reports this process's
	// owner applied or ignored.
	borrowReportsIn atomic.Uint64

	// workerBinary is the program that runs this job's tasks (sent with
	// every task, for nodes started without one); binarySum its SHA-256,
	// computed once by hashBinary (a node runs the binary only if its
	// file there has this hash).
	workerBinary string
	binaryOnce   sync.Once
	binarySum    []byte
	hashBinary   func() []byte

	// specIDs are the ids every task spec this process submits carries,
	// encoded once and shared by the specs (never written).
	specIDsOnce sync.Once
	specIDs     struct {
		job, owner []byte
		address    string
	}
}

// role is what a driver and a worker do differently. Driver and Worker
// implement it; the Runtime calls it where they differ and nowhere else
// tells them apart. (Only a Worker runs tasks: the executor is its own,
// executor.go.)
type role interface {
	// refDecoded is called with each ref GobDecode makes.
	refDecoded(h *Ref)
	// driver is the Driver, or the error of op (a call only a driver
	// answers) in a worker.
	driver(op string) (*Driver, error)
	// stop stops the runtime (Shutdown).
	stop(ctx context.Context) error
}

// newRuntime returns a Runtime with its settings and ids; the Driver or
// Worker building it sets the rest before it runs anything.
func newRuntime(s Settings, nodeID ids.NodeID, workerID ids.WorkerID) *Runtime {
	return &Runtime{settings: s, nodeID: nodeID, jobID: ids.NewJobID(), workerID: workerID, putTask: ids.NewTaskID()}
}

// startOwner makes the owner shell, whose effects this runtime applies.
func (rt *Runtime) startOwner(cfg owner.Config) {
	rt.owner = newOwnerShell(owner.New(cfg), rt.applyOwnerEffect)
}

// Log is the runtime's logger.
func (rt *Runtime) Log() *slog.Logger { return rt.log }

// Tracer is the runtime's tracer.
func (rt *Runtime) Tracer() trace.Tracer { return rt.tracer }

// spanning reports whether a span started under ctx could record or carry
// anything: the provider records, or ctx has a valid span (a traced
// caller's, or a task's from its spec). Untraced work skips its spans'
// cost (their names, attributes and contexts).
func (rt *Runtime) spanning(ctx context.Context) bool {
	return rt.traceAll || trace.SpanContextFromContext(ctx).IsValid()
}

// noSpan is the span of work that is not traced.
var noSpan trace.Span = noop.Span{}

// Settings are the runtime's settings.
func (rt *Runtime) Settings() Settings { return rt.settings }

// NodeID is the node this process runs on.
func (rt *Runtime) NodeID() ids.NodeID { return rt.nodeID }

// JobID is the process's job (a worker process's own, for its puts).
func (rt *Runtime) JobID() ids.JobID { return rt.jobID }

// WorkerID is this process's id as an owner.
func (rt *Runtime) WorkerID() ids.WorkerID { return rt.workerID }

// Closed reports whether the runtime was stopped.
func (rt *Runtime) Closed() bool { return rt.closed.Load() }

// BorrowReportsReceived counts the standalone borrow reports this
// process's owner received.
func (rt *Runtime) BorrowReportsReceived() uint64 { return rt.borrowReportsIn.Load() }

// Owner applies f to the owner table under the shell's lock, then applies
// the effects it produced (for queries, and for tests).
func (rt *Runtime) Owner(f func(*owner.Table)) { rt.owner.do(f) }

// inline reports whether a value of n bytes stays inline.
func (rt *Runtime) inline(n int) bool {
	return rt.settings.InlineThreshold >= 0 && n <= rt.settings.InlineThreshold
}

// ownIDs returns the job id, owner id and owner address a task spec this
// process submits carries, encoded on first use.
func (rt *Runtime) ownIDs() (job, owner []byte, address string) {
	rt.specIDsOnce.Do(func() {
		rt.specIDs.job, rt.specIDs.owner, rt.specIDs.address = rt.jobID.Bytes(), rt.workerID.Bytes(), rt.nodeID.String()
	})
	return rt.specIDs.job, rt.specIDs.owner, rt.specIDs.address
}

// binary returns the worker binary and its hash for a task spec.
func (rt *Runtime) binary() (string, []byte) {
	rt.binaryOnce.Do(func() {
		if rt.hashBinary != nil {
			rt.binarySum = rt.hashBinary()
		}
	})
	return rt.workerBinary, rt.binarySum
}

// stopOwner closes the owner table (its pending tasks fail; nothing more
// is freed: the store goes) and returns what it owned: its stored
// objects and live actors.
func (rt *Runtime) stopOwner() (stored []ids.ObjectID, actors []ids.ActorID) {
	if rt.owner == nil {
		return nil, nil
	}
	rt.owner.do(func(t *owner.Table) {
		stored, actors = t.StoredIDs(), t.OwnedLiveActors()
		t.Close(errs.ToProto(errs.Unavailablef("shut down (Shutdown, or a signal) before the task ended")))
	})
	return stored, actors
}

// shutdownTracing shuts down the tracer provider this runtime made.
func (rt *Runtime) shutdownTracing(ctx context.Context) error {
	if rt.ownTP == nil {
		return nil
	}
	return rt.ownTP.Shutdown(ctx)
}

// The process's current runtime: the one Init started, or the worker
// process's. Init and Shutdown set it under mu; shutDown tells "shut
// down" from "never started" once it is gone.
var process struct {
	mu       sync.Mutex
	cur      atomic.Pointer[Runtime]
	shutDown atomic.Bool
}

// Current is the process's current runtime, or nil.
func Current() *Runtime { return process.cur.Load() }

// FromContext is the runtime executing the task under ctx, or nil outside
// a task.
func FromContext(ctx context.Context) *Runtime {
	if ctx == nil {
		return nil
	}
	if ti, ok := ctx.Value(taskKey{}).(*taskInfo); ok {
		return ti.rt
	}
	return nil
}

// Running returns the runtime an SDK call made with ctx uses: the one
// executing the task under ctx, else the process's current one; or why
// there is none: ErrShutDown after Shutdown, else ErrNotInitialized.
func Running(ctx context.Context) (*Runtime, error) {
	rt := FromContext(ctx)
	if rt == nil && ctx != nil {
		rt, _ = ctx.Value(runtimeKey{}).(*Runtime) // a simulated driver's (sim.go)
	}
	if rt == nil {
		rt = process.cur.Load()
	}
	if rt == nil || rt.closed.Load() {
		signalDeath.hold(ctx)
	}
	if rt == nil {
		return nil, notRunning()
	}
	if rt.closed.Load() {
		return nil, errs.ErrShutDown
	}
	return rt, nil
}

// notRunning is the error for a call that finds no runtime.
func notRunning() error {
	if process.shutDown.Load() {
		return errs.ErrShutDown
	}
	return errs.ErrNotInitialized
}

// DriverOf returns the driver an ops call made with ctx acts through, or
// why there is none: atoll not running, or a worker process (op names the
// call in the error).
func DriverOf(ctx context.Context, op string) (*Driver, error) {
	rt, err := Running(ctx)
	if err != nil {
		return nil, err
	}
	return rt.role.driver(op)
}

// install makes rt the process's current runtime. The caller holds
// process.mu.
func install(rt *Runtime) {
	process.cur.Store(rt)
	process.shutDown.Store(false)
}

// Shutdown stops the process's current runtime (see atoll.Shutdown); it
// does nothing if none runs. Called from a task of an in-process worker
// (with the task's context), it stops that worker's runtime, as it does
// in a worker process, not the driver.
func Shutdown(ctx context.Context) error {
	if rt := FromContext(ctx); rt != nil && rt != process.cur.Load() {
		return rt.role.stop(ctx)
	}
	return shutdown(ctx, nil)
}

// shutdown stops the current runtime, if it is only (any if only is nil).
func shutdown(ctx context.Context, only *Runtime) error {
	process.mu.Lock()
	defer process.mu.Unlock()
	rt := process.cur.Load()
	if rt == nil || (only != nil && rt != only) {
		return nil
	}
	process.cur.Store(nil)
	process.shutDown.Store(true)
	return rt.role.stop(ctx)
}
