package atoll

import (
	"context"
	"log/slog"

	"github.com/atoll-runtime/atoll/faultplan"
	"github.com/atoll-runtime/atoll/internal/actors"
	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/nodeconfig"
	"github.com/atoll-runtime/atoll/internal/runtime"
	"github.com/atoll-runtime/atoll/internal/telemetry"
	"github.com/atoll-runtime/atoll/sim"
)

// Init starts atoll. With no address (WithAddress, else $ATOLL_ADDRESS) it
// starts the embedded local cluster inside this process: an embedded NATS
// server with JetStream, the GCS, the shared-memory object store, and a
// raylet with one worker per CPU. With an address it joins that cluster
// with a node of its own that holds the driver's objects. Call Shutdown
// when done. Init fails with ErrAlreadyStarted if atoll is already running
// in this process.
//
// In a process atoll started to serve (IsWorker), Init never returns: a
// worker process (your binary, re-executed by a raylet) runs the tasks
// and the actor its raylet sends it, with these options' logger, tracer
// provider, inline threshold and namespace, until the raylet lets it go;
// a cluster node process (test and sample binaries that internal tooling
// starts as nodes) runs its node until it is stopped. That is why Init
// goes at the top of main, before any work the program should not
// repeat.
func Init(ctx context.Context, opts ...Option) error {
	cfg := config{workerMode: ProcessWorkers}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.simulation != nil {
		return sim.StartProgram(*cfg.simulation)
	}
	runtime.Serve(cfg.settings()) // never returns in a worker or node process
	return runtime.StartDriver(ctx, func() (runtime.DriverConfig, error) {
		if cfg.node.Address == "" {
			cfg.node.Address = nodeconfig.AddressFromEnv()
		}
		if cfg.node.Address != "" && cfg.workerMode != ProcessWorkers {
			return runtime.DriverConfig{}, errs.Invalidf("WithAddress: a driver connected to a cluster runs its tasks in worker processes (InProcessWorkers is for the embedded cluster)")
		}
		if cfg.node.NumCPUs < 0 {
			return runtime.DriverConfig{}, errs.Invalidf("WithNumCPUs(%g): must not be negative", cfg.node.NumCPUs)
		}
		cfg.installFaultPlan()
		return runtime.DriverConfig{
			Settings: cfg.settings(), Address: cfg.node.Address, WorkerBinary: cfg.node.WorkerBinary, LineageBudget: cfg.lineageBudget,
			Node: cfg.nodeConfig(), SignalHandler: !cfg.noSignalHandler,
			FaultPlan: cfg.faultPlan, Faults: cfg.faults, FaultPoints: cfg.faultPoints,
			WorkerOutput: cfg.node.WorkerOutput, LogToDriver: !cfg.noLogToDriver,
		}, nil
	})
}

// settings are the runtime's settings from the options, with their
// defaults.
func (cfg *config) settings() runtime.Settings {
	s := runtime.Settings{Logger: cfg.node.Logger, TracerProvider: cfg.node.TracerProvider, InlineThreshold: cfg.inlineThreshold,
		Namespace: cfg.namespace, InProcessWorkers: cfg.workerMode == InProcessWorkers}
	if s.InlineThreshold == 0 {
		s.InlineThreshold = DefaultInlineThreshold
	}
	if s.Namespace == "" {
		s.Namespace = "default"
	}
	return s
}

// installFaultPlan installs the plan's message rules and rules at points
// in cfg (before the node's configuration is made from it).
func (cfg *config) installFaultPlan() {
	if cfg.faultPlan == nil {
		return
	}
	if cfg.faults == nil {
		cfg.faults = actors.NewFaultInjector()
	}
	cfg.faultPlan.Install(cfg.faults, faultplan.Driver)
	cfg.faultPoints = cfg.faultPlan.Points(faultplan.Driver, cfg.faults)
}

// Shutdown stops atoll: running tasks are cancelled, actors stopped, the
// object store and its shared memory released. Views returned by Get are
// invalid afterwards. Shutdown without Init is a no-op.
func Shutdown(ctx context.Context) error { return runtime.Shutdown(ctx) }

// IsWorker reports whether atoll started this process to serve: a worker
// process (the raylet re-executed your binary to run tasks) or a cluster
// node started through internal tooling (internal/testcluster runs test
// binaries as nodes). In such a process Init serves and never returns, so
// call Init at the top of main, before any work it should not repeat; use
// IsWorker to skip setup that only the driver needs (a TestMain, for
// instance).
func IsWorker() bool { return runtime.Serving() }

// EnvWorkerCPUProfile names a directory: each worker process writes a CPU
// profile there (worker-PID.prof), for finding where a worker's time goes
// (`go tool pprof BINARY FILE`). A profile covers the worker's first
// EnvWorkerCPUProfileSeconds seconds (default 10), or until the raylet
// closes the connection if that comes first (a worker killed earlier
// leaves an empty file).
const (
	EnvWorkerCPUProfile        = "ATOLL_WORKER_CPUPROFILE"
	EnvWorkerCPUProfileSeconds = "ATOLL_WORKER_CPUPROFILE_SECONDS"
)

// EnvWorkerMemProfile names a directory: each worker process writes its
// allocation profile there (worker-PID.allocs) when it exits, for
// finding what a worker allocates (`go tool pprof -sample_index
// alloc_objects BINARY FILE`). EnvWorkerMemProfileRate sets how many
// bytes allocated a sample stands for (runtime.MemProfileRate; Go's
// default, 512 KiB, when unset; 1 records every allocation, and slows the
// worker). A worker killed, rather than told to exit, writes nothing.
const (
	EnvWorkerMemProfile     = "ATOLL_WORKER_MEMPROFILE"
	EnvWorkerMemProfileRate = "ATOLL_WORKER_MEMPROFILE_RATE"
)

// EnvLogToDriver set to "0" keeps a driver from printing its tasks'
// output (as WithoutLogToDriver).
const EnvLogToDriver = "ATOLL_LOG_TO_DRIVER"

// WithoutLogToDriver keeps a driver in a cluster from printing what its
// tasks and actors write to stdout and stderr on the cluster's nodes. By
// default each line arrives prefixed with the task (or actor type), the
// worker's process id and its node, as Ray does:
//
//	(square pid=4242, node=1a2b3c4d) computing 7
//
// on the driver's stdout or stderr as the worker wrote it (to
// WithWorkerOutput's writer if given). The nodes keep every worker's
// output anyway (`atoll logs`).
func WithoutLogToDriver() Option { return func(c *config) { c.noLogToDriver = true } }

// ClusterAddress is the address of the cluster this driver is connected
// to, or "" when it runs the embedded single-node cluster (or in a worker
// process).
func ClusterAddress() string {
	d, err := runtime.DriverOf(context.Background(), "ClusterAddress")
	if err != nil {
		return ""
	}
	return d.ClusterAddress()
}

// CurrentNodeID is the id (hex) of the node this code runs on: inside a
// task or actor, its node; in a driver, the driver's own node.
func CurrentNodeID() string {
	rt := runtime.Current()
	if rt == nil {
		return ""
	}
	return rt.NodeID().String()
}

// CurrentWorkerID returns the id of the worker running the task or actor
// call under ctx, or "" outside a task.
func CurrentWorkerID(ctx context.Context) string {
	if w, _, ok := runtime.TaskOf(ctx); ok {
		return w.String()
	}
	return ""
}

// CurrentAttempt returns which attempt of its task the code under ctx
// is: 0 for the first, n after n retries (a worker or node that died,
// a lost forward, an application error with RetryExceptions) or
// reconstructions of lost outputs; 0 outside a task. Side effects of a
// task (calls to actors, files) happen once per attempt; a history that
// records them can key them by attempt.
func CurrentAttempt(ctx context.Context) int {
	_, attempt, _ := runtime.TaskOf(ctx)
	return attempt
}

// LogHandler wraps h so that records logged with a context (InfoContext,
// ...) carry trace_id, span_id and, inside a task, task_id:
//
//	slog.SetDefault(slog.New(atoll.LogHandler(slog.NewJSONHandler(os.Stderr, nil))))
//	...
//	slog.InfoContext(ctx, "processing", "rows", n) // in a task: trace_id=... task_id=...
func LogHandler(h slog.Handler) slog.Handler { return telemetry.NewLogHandler(h) }
