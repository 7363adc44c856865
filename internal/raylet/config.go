package raylet

import (
	"log/slog"
	"math"
	"runtime"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/ids"
)

// Worker identifies the worker a task or actor runs on.
type Worker struct {
	ID     ids.WorkerID
	NodeID ids.NodeID
}

// Config configures a raylet. Zero fields take the documented defaults.
type Config struct {
	// NodeID names the node; default: a fresh id.
	NodeID ids.NodeID
	// Resources is the node's total; default {CPU: runtime.NumCPU()}.
	Resources Resources
	// NumWorkers is how many pool workers start with the raylet;
	// default: the CPU count (one per CPU slot).
	NumWorkers int
	// MaxWorkers bounds the pool, which grows past NumWorkers while tasks
	// block in Get (their CPU is lent to other tasks); default 1024.
	MaxWorkers int
	// TimelineCap is how many finished task attempts the raylet keeps for
	// `atoll timeline` (a ring, oldest dropped first); default
	// TimelineCap.
	TimelineCap int
	// OnTaskEvent, if set, is called with every finished task attempt as
	// it enters the timeline (on the raylet's goroutine: it must not
	// block); the node's task metrics come from it.
	OnTaskEvent func(TaskEvent)
	// IdleTimeout is how long a worker beyond NumWorkers may stay idle
	// before it is stopped; default 10s (long enough to absorb a burst of
	// nested tasks, short enough not to hoard processes).
	IdleTimeout time.Duration
	// TracerProvider for queue and schedule spans; default no-op.
	TracerProvider trace.TracerProvider
	// Logger; default slog.Default().
	Logger *slog.Logger
	// OnWorkerDeath is called (on the raylet's goroutine; it must not
	// block) when a worker dies, so its pins and unsealed objects are
	// reclaimed.
	OnWorkerDeath func(ids.WorkerID)
	// Deliver, if set, gives a task's result straight to its owner when
	// the owner lives in this process, and reports true; false sends the
	// result to the owner's mailbox. It is called on the goroutine that
	// has the result (a worker connection's reader),
	// so it must not block. Optional.
	Deliver func(owner *actor.PID, res *atollpb.TaskResult) bool
	// DeliverBorrows, if set, gives a borrower's standalone report to
	// the owner living in this process and reports true; false: no such
	// owner here (the report is dropped). It must not block. Optional.
	DeliverBorrows func(*atollpb.BorrowReport) bool
	// ReportActor publishes an actor's new state (to the GCS); it must not
	// block. Optional.
	ReportActor func(*atollpb.ActorInfo)
	// StoreCapacity is the node's object store size. With ArgsFraction it
	// caps the argument bytes of running tasks (memory-aware admission);
	// 0 disables the cap.
	StoreCapacity uint64
	// ArgsFraction of the store that running tasks' arguments may fill;
	// default 0.7 (Ray's max_task_args_memory_fraction).
	ArgsFraction float64
	// Saturation bounds root tasks (tasks with no object arguments) to
	// Saturation × worker slots at a time, consumers going first; default
	// 1.0, +Inf disables (Dask's worker-saturation).
	Saturation float64
	// Middleware is installed on the workers and actor hosts the raylet
	// spawns (fault injection, tracing).
	Middleware []actor.ReceiverMiddleware
	// PipelineDepth is how many task attempts a worker may hold at once
	// (pipelining: it starts the next as soon as one ends, with no round
	// trip to the raylet); default DefaultPipelineDepth, 1 turns
	// pipelining off. Only the tasks of the class the worker is leased
	// to are pipelined, only while no other class waits, and unstarted
	// ones are taken back (recalled) when the running one blocks in Get
	// or another worker is idle.
	PipelineDepth int
	// Process says how workers run: as processes of a binary, or as
	// worker runtimes on goroutines of this process
	// (ProcessConfig.InProcess); required. Workers makes their actors
	// (workerproto.New()); required.
	Process *ProcessConfig
	Workers Workers
	// Cluster, when set, makes the raylet one node of a cluster (placement
	// and forwarding); nil: a single node.
	Cluster *ClusterConfig
}

// DefaultPipelineDepth is Config.PipelineDepth's default.
const DefaultPipelineDepth = 16

// ActorPipelineDepth is how many calls an actor's host may have sent to
// its worker beyond those it runs at once, for a pipeline depth of depth:
// twice it (1 stays 1). A leased worker's tasks are refilled at half
// depth while other workers run theirs; an actor's calls all run on its
// one worker, which writes their results back eight at a time, and with
// one depth of calls it ran out while its caller woke and sent the next.
func ActorPipelineDepth(depth int) int {
	if depth <= 1 {
		return 1
	}
	return 2 * depth
}

func (c Config) withDefaults() (Config, error) {
	if c.Process == nil || c.Workers == nil {
		return c, errs.Invalidf("raylet: Config.Process and Config.Workers are required (workerproto.New())")
	}
	if c.NodeID.IsZero() {
		c.NodeID = ids.NewNodeID()
	}
	if c.Resources == nil {
		c.Resources = Resources{}
	} else {
		c.Resources = c.Resources.Clone()
	}
	if _, ok := c.Resources[CPU]; !ok {
		c.Resources[CPU] = float64(runtime.NumCPU())
	}
	if c.Resources[CPU] < 0 {
		return c, errs.Invalidf("raylet: negative CPU count %g", c.Resources[CPU])
	}
	if c.PipelineDepth <= 0 {
		c.PipelineDepth = DefaultPipelineDepth
	}
	if c.NumWorkers <= 0 {
		c.NumWorkers = int(c.Resources[CPU])
		if c.NumWorkers < 1 {
			c.NumWorkers = 1
		}
	}
	if c.MaxWorkers <= 0 {
		c.MaxWorkers = 1024
	}
	if c.TimelineCap <= 0 {
		c.TimelineCap = TimelineCap
	}
	if c.MaxWorkers < c.NumWorkers {
		c.MaxWorkers = c.NumWorkers
	}
	if c.ArgsFraction == 0 {
		c.ArgsFraction = 0.7
	}
	if c.ArgsFraction < 0 || c.ArgsFraction > 1 {
		return c, errs.Invalidf("raylet: ArgsFraction %g outside (0, 1]", c.ArgsFraction)
	}
	if c.Saturation == 0 {
		c.Saturation = 1
	}
	if c.Saturation < 0 || math.IsNaN(c.Saturation) {
		return c, errs.Invalidf("raylet: Saturation %g must be positive", c.Saturation)
	}
	if c.IdleTimeout <= 0 {
		c.IdleTimeout = 10 * time.Second
	}
	if c.TracerProvider == nil {
		c.TracerProvider = noop.NewTracerProvider()
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.OnWorkerDeath == nil {
		c.OnWorkerDeath = func(ids.WorkerID) {}
	}
	p, err := c.Process.withDefaults()
	if err != nil {
		return c, err
	}
	c.Process = p
	if c.Cluster != nil && (c.Cluster.Forward == nil || c.Cluster.CallActor == nil || c.Cluster.Cancel == nil || c.Cluster.KillActor == nil) {
		return c, errs.Invalidf("raylet: ClusterConfig needs Forward, CallActor, Cancel and KillActor")
	}
	if c.ReportActor == nil {
		c.ReportActor = func(*atollpb.ActorInfo) {}
	}
	return c, nil
}
