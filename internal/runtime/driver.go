package runtime

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/faultplan"
	"github.com/atoll-runtime/atoll/internal/actors"
	"github.com/atoll-runtime/atoll/internal/cluster"
	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/ids"
	"github.com/atoll-runtime/atoll/internal/jobs"
	"github.com/atoll-runtime/atoll/internal/node"
	"github.com/atoll-runtime/atoll/internal/nodeconfig"
	"github.com/atoll-runtime/atoll/internal/owner"
	"github.com/atoll-runtime/atoll/internal/raylet"
	"github.com/atoll-runtime/atoll/internal/telemetry"
	"github.com/atoll-runtime/atoll/internal/workerconn"
)

// DriverConfig is what a driver is started with (atoll.Init's options,
// mapped by the SDK).
type DriverConfig struct {
	Settings
	// Address is the cluster the driver joins ("": it runs the embedded
	// single-node cluster).
	Address string
	// WorkerBinary is the program worker processes run (default this
	// one).
	WorkerBinary string
	// LineageBudget bounds the lineage the owner keeps (0: the default).
	LineageBudget int
	// Node is the configuration of the driver's node (its tracer
	// provider is the one the driver resolves).
	Node nodeconfig.Config
	// SignalHandler: shut down on SIGINT and SIGTERM, then die of the
	// signal.
	SignalHandler bool
	// FaultPlan runs its timed rules from the start until Shutdown
	// (its message rules are the node's, in Faults).
	FaultPlan *faultplan.Plan
	// Faults is the node's fault injector, if any (GetFaultLog), and
	// FaultPoints a fault plan's rules at points for the driver's node.
	Faults      *actors.FaultInjector
	FaultPoints *faultplan.Points
	// WorkerOutput receives the output of the job's workers on the
	// cluster's nodes (nil: stdout and stderr), printed unless
	// LogToDriver is false or EnvLogToDriver says 0.
	WorkerOutput io.Writer
	LogToDriver  bool
}

// Driver is the runtime of a driver: the process that called atoll.Init.
// Its Runtime reaches the node that runs in this process (the embedded
// single node, or the driver's own node in a cluster) through actor
// messages; the Driver holds that node and what only a driver has: its
// job's registration, the signal handler, memory samplers, a fault plan's
// run and the watch on its node's death.
type Driver struct {
	*Runtime
	cfg DriverConfig

	node *node.Node
	// gateway connects the driver's node to its cluster (nil on a single
	// node): frees go to every node through it.
	gateway *cluster.Gateway
	// localOwner is ownerPID once the owner actor runs: results for it
	// are applied on the goroutine that has them (deliverResult).
	localOwner atomic.Pointer[actor.PID]

	signals *signalHandler // nil: no signal handler
	// samplers are the memory samplers started through this driver:
	// Shutdown stops them before the node.
	samplers samplerSet
	// plan runs the fault plan's timed rules; nil without a plan.
	plan *planRun
	// deadWatch stops the watch on the node's death (dead.go).
	deadWatch chan struct{}
}

var _ role = (*Driver)(nil)

// StartDriver starts a driver and makes it the process's current
// runtime: build, called unless one runs already (ErrAlreadyStarted),
// says how.
func StartDriver(ctx context.Context, build func() (DriverConfig, error)) (err error) {
	process.mu.Lock()
	defer process.mu.Unlock()
	if process.cur.Load() != nil {
		return errs.ErrAlreadyStarted
	}
	cfg, err := build()
	if err != nil {
		return err
	}
	d := &Driver{cfg: cfg}
	d.Runtime = newRuntime(cfg.Settings, ids.NodeID{}, ids.NewWorkerID())
	d.role = d
	defer func() {
		if err != nil {
			_ = d.stop(context.Background())
		}
	}()
	if err := d.start(ctx); err != nil {
		return err
	}
	if cfg.SignalHandler {
		d.signals = d.handleSignals()
	}
	install(d.Runtime)
	return nil
}

func (d *Driver) start(ctx context.Context) error {
	cfg := &d.cfg
	rt := d.Runtime
	rt.log = cfg.Logger
	if rt.log == nil {
		rt.log = slog.Default()
	}
	rt.log = slog.New(telemetry.NewLogHandler(rt.log.Handler())).With("component", "atoll")
	rt.workerBinary = cfg.WorkerBinary
	if rt.workerBinary == "" {
		rt.workerBinary, _ = os.Executable()
	}
	if cfg.Address != "" && rt.workerBinary != "" {
		sum, err := raylet.HashFile(rt.workerBinary)
		if err != nil {
			return fmt.Errorf("atoll: hash the worker binary: %w", err)
		}
		rt.binarySum = sum[:]
	}
	telemetry.SetIdentity(telemetry.Identity{Role: telemetry.RoleDriver, JobID: rt.jobID.String()})
	tp, own, err := telemetry.ResolveProvider(ctx, cfg.TracerProvider)
	if err != nil {
		return err
	}
	rt.ownTP = own
	// The job's tasks export their spans, on every node, where this
	// driver does (telemetry.Inject carries the destination).
	telemetry.SetLocalExport(telemetry.ExportFromEnv(rt.jobID.Bytes()))
	rt.tracer, rt.traceAll = telemetry.Tracer(tp), telemetry.Records(tp)

	nc := cfg.Node
	nc.TracerProvider = tp
	hooks := node.Hooks{Deliver: d.deliverResult, DeliverBorrows: d.deliverBorrows, Faults: cfg.Faults, FaultPoints: cfg.FaultPoints}
	if cfg.InProcessWorkers {
		hooks.InProcess = d.inProcessWorkers(tp) // inprocess.go
	}
	n, err := node.StartWith(ctx, nc, hooks)
	if err != nil {
		return err
	}
	d.node, d.gateway = n, n.Gateway()
	rt.nodeID, rt.system, rt.gcs = n.ID(), n.System(), n.GCS()
	rt.store = n.StoreClient(rt.workerID)
	rt.frees = storeFreer{rt.store}
	if d.gateway != nil {
		rt.frees = gatewayFreer{d.gateway}
	}
	// Direct submission (leases) on a single node. A cluster's driver
	// places its tasks on other nodes through its raylet; a fault
	// injector acts on messages, and its rules need each task to be one.
	direct := d.gateway == nil && cfg.Faults == nil
	rt.startOwner(owner.Config{Worker: rt.workerID, Node: rt.nodeID, LineageBudget: cfg.LineageBudget, Pack: direct, Group: watchGroup})
	if rt.ownerPID, err = n.SpawnNamed(actor.PropsFromProducer(func() actor.Actor { return &ownerActor{rt: rt} }, actor.WithDispatcher(actors.HotDispatcher)), "owner"); err != nil {
		return fmt.Errorf("atoll: start owner: %w", err)
	}
	d.localOwner.Store(rt.ownerPID) // results for it skip its mailbox from now on
	link := &driverLink{system: rt.system, raylet: n.Raylet(), owner: rt.ownerPID, node: rt.nodeID, gateway: d.gateway,
		lone: new(workerconn.Lone)}
	if direct {
		link.sub = raylet.NewSubmitter(raylet.SubmitterConfig{System: rt.system, Raylet: n.Raylet(), Tracer: rt.tracer, NodeID: rt.nodeID,
			Core: raylet.SubmitConfig{PipelineDepth: cfg.Node.PipelineDepth}, Lone: link.lone,
			Deliver: func(res *atollpb.TaskResult) { rt.owner.do(func(t *owner.Table) { t.Result(res) }) }})
	}
	if cfg.Faults == nil {
		// Direct actor calls: a call of an actor hosted by this node is
		// ordered by its host's core and written to the actor's worker on
		// the calling goroutine (a fault injector's rules need each call
		// to be a message).
		link.hosts = n.ActorHosts()
	}
	rt.link = link
	if err := n.SubscribeActorEvents(rt.ownerPID); err != nil {
		return err
	}
	if err := n.GCS().AddJob(ctx, &atollpb.JobInfo{JobId: rt.jobID.Bytes(), DriverAddress: rt.ownerPID.Id,
		StartTimeUnixMs: time.Now().UnixMilli(), Entrypoint: entrypoint(), WorkerBinary: rt.workerBinary,
		WorkerBinarySha256: rt.binarySum, SubmissionId: submissionID()}); err != nil {
		return fmt.Errorf("atoll: register job: %w", err)
	}
	// Clustered, the cluster may declare the driver's node dead; embedded
	// or not, a part of the node may fail for good (its raylet).
	d.streamWorkerOutput() // output.go
	d.deadWatch = make(chan struct{})
	go d.watchDeclaredDead(n.DeclaredDead(), n.DeadReason, d.deadWatch)
	d.startFaultPlan()
	rt.log.Debug("atoll started", "node", rt.nodeID.String(), "cluster", n.Address(), "store_bytes", n.Arena().Size())
	return nil
}

// stop implements role: Shutdown of the driver, or a failed start.
func (d *Driver) stop(ctx context.Context) error {
	d.closed.Store(true)
	if d.deadWatch != nil {
		close(d.deadWatch)
	}
	d.signals.stop()
	d.samplers.stop()
	d.plan.stop()
	var errList []error
	if n := d.node; n != nil && d.ownerPID != nil {
		fctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		if err := n.GCS().FinishJob(fctx, d.jobID.Bytes()); err != nil {
			d.log.Debug("finish job", "err", err)
		}
		cancel()
		n.UnsubscribeActorEvents(d.ownerPID)
	}
	stored, actorIDs := d.stopOwner()
	if g := d.gateway; g != nil {
		// The job ends: its objects go from every node (a single node's
		// store simply closes).
		g.Free(ids.ObjectIDsBytes(stored))
		for _, id := range actorIDs {
			g.KillActor(&atollpb.KillActor{ActorId: id.Bytes(), NoRestart: true, Reason: "its job ended"})
		}
		g.Flush()
	}
	if d.node != nil { // nil: a start that failed before its node ran
		if err := d.node.Stop(ctx); err != nil {
			errList = append(errList, err)
		}
	}
	telemetry.SetLocalExport(nil)
	if err := telemetry.ShutdownRoutes(ctx); err != nil {
		errList = append(errList, err)
	}
	if err := d.shutdownTracing(ctx); err != nil {
		errList = append(errList, err)
	}
	return errors.Join(errList...)
}

// refDecoded implements role: nothing to track.
func (d *Driver) refDecoded(*Ref) {}

// driver implements role.
func (d *Driver) driver(string) (*Driver, error) { return d, nil }

// deliverResult applies a result to the owner table on the goroutine that
// has it (raylet.Config.Deliver), when this process's owner is its
// destination: the waiter wakes with no owner-actor hop.
func (d *Driver) deliverResult(to *actor.PID, res *atollpb.TaskResult) bool {
	if local := d.localOwner.Load(); local == nil || !to.Equal(local) {
		return false
	}
	d.owner.do(func(t *owner.Table) { t.Result(res) })
	return true
}

// deliverBorrows takes a report the raylet routes to this process's
// owner (raylet.Config.DeliverBorrows): applied in the owner actor's
// mailbox, after the results it received before.
func (d *Driver) deliverBorrows(m *atollpb.BorrowReport) bool {
	local := d.localOwner.Load()
	if local == nil || string(m.GetOwnerId()) != string(d.workerID.Bytes()) {
		return false
	}
	d.system.Root.Send(local, m)
	return true
}

// Node is the node this driver runs.
func (d *Driver) Node() *node.Node { return d.node }

// ClusterAddress is the address of the cluster this driver is connected
// to, or "" when it runs the embedded single-node cluster.
func (d *Driver) ClusterAddress() string {
	if d.cfg.Address == "" {
		return ""
	}
	return d.node.Address()
}

// ClusterNode is the driver's node if it is part of a cluster, else the
// error of op.
func (d *Driver) ClusterNode(op string) (*node.Node, error) {
	if d.gateway == nil {
		return nil, errs.Invalidf("%s: this driver is not connected to a cluster (WithAddress)", op)
	}
	return d.node, nil
}

// clusterGateway is the driver's gateway, else the error of op.
func (d *Driver) clusterGateway(op string) (*cluster.Gateway, error) {
	if d.gateway == nil {
		return nil, errs.Invalidf("%s: this driver is not connected to a cluster (WithAddress)", op)
	}
	return d.gateway, nil
}

func entrypoint() string {
	if len(os.Args) > 0 {
		return filepath.Base(os.Args[0])
	}
	return ""
}

// submissionID is the id of the submitted job (`atoll job submit`) whose
// driver this process is, from jobs.EnvSubmissionID, or nil: the driver
// records it in its own job's entry (JobInfo.submission_id).
func submissionID() []byte {
	id, err := ids.FromHex(os.Getenv(jobs.EnvSubmissionID))
	if err != nil || id.IsZero() {
		return nil
	}
	return id.Bytes()
}
