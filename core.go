package atoll

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/actors"
	"github.com/atoll-runtime/atoll/internal/cluster"
	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/ids"
	"github.com/atoll-runtime/atoll/internal/node"
	"github.com/atoll-runtime/atoll/internal/nodeconfig"
	"github.com/atoll-runtime/atoll/internal/objectstore"
	"github.com/atoll-runtime/atoll/internal/owner"
	"github.com/atoll-runtime/atoll/internal/raylet"
	"github.com/atoll-runtime/atoll/internal/telemetry"
)

// core is one process's atoll runtime: the owner state of the refs,
// tasks and actors this process creates (object, task and actor tables,
// the owner actor) and how it reaches its node. In a driver (Init) the
// node runs in this process (node: the embedded single node, or the
// driver's own node in a cluster) and link, store and gcs go to it
// directly; in a worker process (worker.go) node is nil and they go
// through the connection to the raylet.
type core struct {
	cfg     config
	log     *slog.Logger
	signals *signalHandler // nil: WithoutSignalHandler or a worker
	tracer  trace.Tracer
	ownTP   *sdktrace.TracerProvider

	// node is the node this driver runs; nil in a worker process.
	node *node.Node

	system   *actor.ActorSystem // the node's, or the worker process's own
	arena    *objectstore.Arena // this process's mapping of the node's arena
	gcs      gcsAPI
	ownerPID *actor.PID
	store    storeAPI
	link     nodeLink

	nodeID   ids.NodeID
	jobID    ids.JobID
	workerID ids.WorkerID
	putTask  ids.TaskID
	putSeq   atomic.Uint32

	// owner is this process's ownership state: objects, tasks, actors.
	owner *ownerShell
	// collected holds refs dropped by the garbage collector until the
	// owner actor applies them.
	collected collected
	// localOwner is ownerPID once the owner actor runs: results for it
	// are applied on the goroutine that has them (deliverResult).
	localOwner atomic.Pointer[actor.PID]
	// gateway connects the driver's node to its cluster (nil on a single
	// node and in a worker process): frees go to every node through it.
	gateway *cluster.Gateway

	// samplers are the memory samplers SampleMemory started: Shutdown
	// stops them before the node.
	samplers samplerSet

	closed atomic.Bool
	// nodeDead is set when the cluster declared the driver's node dead
	// (dead.go); deadWatch stops its watcher at Shutdown.
	nodeDead  atomic.Pointer[errs.NodeDiedError]
	deadWatch chan struct{}
	// isWorker: this core serves a worker process (see worker.go).
	isWorker bool
	// decoded and borrowSeq serve the borrower protocol in a worker
	// process (borrow.go).
	decoded   decodedRefs
	borrowSeq atomic.Uint64
	// borrowFlushPosted: a flushBorrows waits in the owner actor's
	// mailbox. hostedActor is the actor this worker process hosts, if
	// any: its standalone reports name it (owners key an actor's
	// borrows by the actor).
	borrowFlushPosted atomic.Bool
	borrowFlushTimer  atomic.Bool
	hostedActor       atomic.Pointer[ids.ActorID]
	// tasksRunning counts the tasks running in this worker process:
	// while any runs, drops wait for its end's flush (one report per
	// lender for a task that drops many refs). borrowReportsIn counts
	// the standalone reports this process's owner applied or ignored.
	tasksRunning    atomic.Int32
	borrowReportsIn atomic.Uint64
	// workerBinary is the program that runs this job's tasks (sent with
	// every task, for nodes started without one).
	workerBinary string
	// workerBinarySum is its SHA-256 (clustered drivers at Init, worker
	// processes on their first submission: binarySum): a node runs the
	// binary only if its file there has this hash.
	workerBinarySum  []byte
	workerBinaryOnce sync.Once
	// plan runs WithFaultPlan's timed rules; nil without a plan.
	plan *planRun
}

var (
	currentMu sync.Mutex
	current_  atomic.Pointer[core]
)

func current() *core { return current_.Load() }

// wasShutDown is set by Shutdown and cleared by Init: with no runtime,
// it tells "shut down" from "never started" in errors.
var wasShutDown atomic.Bool

// running returns this process's runtime, or why there is none:
// ErrShutDown after Shutdown, else ErrNotInitialized.
func running() (*core, error) {
	rt := current()
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
	if wasShutDown.Load() {
		return errs.ErrShutDown
	}
	return errs.ErrNotInitialized
}

// Init starts atoll. With no address (WithAddress, else $ATOLL_ADDRESS) it
// starts the embedded local cluster inside this process: an embedded NATS
// server with JetStream, the GCS, the shared-memory object store, and a
// raylet with one worker per CPU. With an address it joins that cluster
// with a node of its own that holds the driver's objects. Call Shutdown
// when done. Init fails with ErrAlreadyStarted if atoll is already running
// in this process.
//
// In a process atoll started to serve (IsWorker) Init never returns: a
// worker process runs tasks, a process started with nodeconfig.EnvNode runs
// that node (node.RunFromEnv).
func Init(ctx context.Context, opts ...Option) (err error) {
	currentMu.Lock()
	defer currentMu.Unlock()
	if current() != nil {
		return errs.ErrAlreadyStarted
	}
	cfg := config{workerMode: ProcessWorkers}
	for _, o := range opts {
		o(&cfg)
	}
	if os.Getenv(raylet.EnvWorker) == "1" {
		serveWorker(cfg) // never returns
	}
	if os.Getenv(nodeconfig.EnvNode) != "" {
		node.RunFromEnv() // never returns
	}
	if cfg.node.Address == "" {
		cfg.node.Address = nodeconfig.AddressFromEnv()
	}
	if cfg.node.Address != "" && cfg.workerMode != ProcessWorkers {
		return errs.Invalidf("WithAddress: a driver connected to a cluster runs its tasks in worker processes (InProcessWorkers is for the embedded cluster)")
	}
	rt := &core{cfg: cfg, jobID: ids.NewJobID(), workerID: ids.NewWorkerID(), putTask: ids.NewTaskID()}
	defer func() {
		if err != nil {
			rt.stop(context.Background())
		}
	}()
	if err := rt.start(ctx); err != nil {
		return err
	}
	if !cfg.noSignalHandler {
		rt.signals = rt.handleSignals()
	}
	current_.Store(rt)
	wasShutDown.Store(false)
	return nil
}

func (rt *core) start(ctx context.Context) error {
	cfg := &rt.cfg
	rt.log = cfg.node.Logger
	if rt.log == nil {
		rt.log = slog.Default()
	}
	rt.log = slog.New(telemetry.NewLogHandler(rt.log.Handler())).With("component", "atoll")
	rt.workerBinary = cfg.node.WorkerBinary
	if rt.workerBinary == "" {
		rt.workerBinary, _ = os.Executable()
	}
	if cfg.node.Address != "" && rt.workerBinary != "" {
		sum, err := raylet.HashFile(rt.workerBinary)
		if err != nil {
			return fmt.Errorf("atoll: hash the worker binary: %w", err)
		}
		rt.workerBinarySum = sum[:]
	}
	if cfg.node.NumCPUs < 0 {
		return errs.Invalidf("WithNumCPUs(%g): must not be negative", cfg.node.NumCPUs)
	}
	if cfg.inlineThreshold == 0 {
		cfg.inlineThreshold = DefaultInlineThreshold
	}
	if cfg.namespace == "" {
		cfg.namespace = "default"
	}
	telemetry.SetIdentity(telemetry.Identity{Role: telemetry.RoleDriver, JobID: rt.jobID.String()})
	tp, own, err := telemetry.ResolveProvider(ctx, cfg.node.TracerProvider)
	if err != nil {
		return err
	}
	rt.ownTP = own
	// The job's tasks export their spans, on every node, where this
	// driver does (telemetry.Inject carries the destination).
	telemetry.SetLocalExport(telemetry.ExportFromEnv(rt.jobID.Bytes()))
	cfg.node.TracerProvider = tp
	rt.tracer = telemetry.Tracer(tp)

	cfg.installFaultPlan()
	hooks := node.Hooks{Deliver: rt.deliverResult, DeliverBorrows: rt.deliverBorrows, Faults: cfg.faults, FaultPoints: cfg.faultPoints}
	if cfg.workerMode == InProcessWorkers {
		hooks.Executor = (*executor)(rt)
	}
	n, err := node.StartWith(ctx, cfg.nodeConfig(), hooks)
	if err != nil {
		return err
	}
	rt.node, rt.nodeID, rt.system, rt.arena, rt.gcs = n, n.ID(), n.System(), n.Arena(), n.GCS()
	rt.store = n.StoreClient(rt.workerID)
	rt.gateway = n.Gateway()
	rt.owner = newOwnerShell(owner.Config{Worker: rt.workerID, Node: rt.nodeID, LineageBudget: cfg.lineageBudget}, rt.applyOwnerEffect)
	if rt.ownerPID, err = n.SpawnNamed(actor.PropsFromProducer(func() actor.Actor { return &ownerActor{rt: rt} }, actor.WithDispatcher(actors.HotDispatcher)), "owner"); err != nil {
		return fmt.Errorf("atoll: start owner: %w", err)
	}
	rt.localOwner.Store(rt.ownerPID) // results for it skip its mailbox from now on
	rt.link = &driverLink{system: rt.system, raylet: n.Raylet(), owner: rt.ownerPID, node: rt.nodeID, gateway: n.Gateway()}
	if err := n.SubscribeActorEvents(rt.ownerPID); err != nil {
		return err
	}
	if err := n.GCS().AddJob(ctx, &atollpb.JobInfo{JobId: rt.jobID.Bytes(), DriverAddress: rt.ownerPID.Id,
		StartTimeUnixMs: time.Now().UnixMilli(), Entrypoint: entrypoint(), WorkerBinary: rt.workerBinary,
		WorkerBinarySha256: rt.workerBinarySum, SubmissionId: submissionID()}); err != nil {
		return fmt.Errorf("atoll: register job: %w", err)
	}
	// Clustered, the cluster may declare the driver's node dead; embedded
	// or not, a part of the node may fail for good (its raylet).
	rt.streamWorkerOutput(n) // workeroutput.go
	rt.deadWatch = make(chan struct{})
	go rt.watchDeclaredDead(n.DeclaredDead(), n.DeadReason, rt.deadWatch)
	rt.startFaultPlan()
	rt.log.Debug("atoll started", "node", rt.nodeID.String(), "cluster", n.Address(), "store_bytes", rt.arena.Size())
	return nil
}

// Shutdown stops atoll: running tasks are cancelled, actors stopped, the
// object store and its shared memory released. Views returned by Get are
// invalid afterwards. Shutdown without Init is a no-op.
func Shutdown(ctx context.Context) error { return shutdown(ctx, nil) }

// shutdown stops the running instance, if it is only (any if only is
// nil).
func shutdown(ctx context.Context, only *core) error {
	currentMu.Lock()
	defer currentMu.Unlock()
	rt := current()
	if rt == nil || (only != nil && rt != only) {
		return nil
	}
	current_.Store(nil)
	wasShutDown.Store(true)
	return rt.stop(ctx)
}

func (rt *core) stop(ctx context.Context) error {
	rt.closed.Store(true)
	if rt.deadWatch != nil {
		close(rt.deadWatch)
	}
	rt.signals.stop()
	rt.samplers.stop()
	rt.plan.stop()
	var errList []error
	if n := rt.node; n != nil {
		if rt.ownerPID != nil {
			fctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			if err := n.GCS().FinishJob(fctx, rt.jobID.Bytes()); err != nil {
				rt.log.Debug("finish job", "err", err)
			}
			cancel()
			n.UnsubscribeActorEvents(rt.ownerPID)
		}
	}
	if rt.owner != nil {
		var stored []ids.ObjectID
		var actorIDs []ids.ActorID
		rt.owner.do(func(t *owner.Table) {
			stored, actorIDs = t.StoredIDs(), t.OwnedLiveActors()
			// Pending tasks fail; nothing more is freed (the store goes).
			t.Close(errs.ToProto(errs.Unavailablef("atoll shut down")))
		})
		if g := rt.gateway; g != nil {
			// The job ends: its objects go from every node (a single
			// node's store simply closes).
			g.Free(idsBytes(stored))
			for _, id := range actorIDs {
				g.KillActor(&atollpb.KillActor{ActorId: id.Bytes(), NoRestart: true, Reason: "its job ended"})
			}
			g.Flush()
		}
	}
	if rt.node != nil {
		if err := rt.node.Stop(ctx); err != nil {
			errList = append(errList, err)
		}
	}
	if !rt.isWorker {
		telemetry.SetLocalExport(nil)
		if err := telemetry.ShutdownRoutes(ctx); err != nil {
			errList = append(errList, err)
		}
	}
	if rt.ownTP != nil {
		if err := rt.ownTP.Shutdown(ctx); err != nil {
			errList = append(errList, err)
		}
	}
	return errors.Join(errList...)
}

// storeFor returns the object-store client of a worker: a goroutine
// worker of the driver's node has its own; a worker process has one.
func (rt *core) storeFor(w ids.WorkerID) storeAPI {
	if rt.node == nil {
		return rt.store
	}
	return rt.node.StoreClient(w)
}

// ClusterAddress is the address of the cluster this driver is connected
// to, or "" when it runs the embedded single-node cluster.
func ClusterAddress() string {
	rt := current()
	if rt == nil || rt.node == nil || rt.cfg.node.Address == "" {
		return ""
	}
	return rt.node.Address()
}

func entrypoint() string {
	if len(os.Args) > 0 {
		return filepath.Base(os.Args[0])
	}
	return ""
}
