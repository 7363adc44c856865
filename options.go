package atoll

import (
	"io"
	"log/slog"
	"time"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/atoll-runtime/atoll/faultplan"
	"github.com/atoll-runtime/atoll/internal/actors"
	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/nodeconfig"
	"github.com/atoll-runtime/atoll/internal/objectstore"
	"github.com/atoll-runtime/atoll/sim"
)

// Resources is a task's or actor's resource demand, or a node's capacity.
type Resources struct {
	// CPU slots (fractions allowed).
	CPU float64
	// Memory in bytes (a scheduling hint; it is not enforced).
	Memory float64
	// Custom resources by name, e.g. {"GPU": 1}.
	Custom map[string]float64
}

// oneCPU is the resources of a task that asks for none: one map shared
// by every such spec, which nothing writes (the schedulers copy what they
// subtract from).
var oneCPU = map[string]float64{"CPU": 1}

func (r Resources) toMap() map[string]float64 {
	m := map[string]float64{}
	if r.CPU != 0 {
		m["CPU"] = r.CPU
	}
	if r.Memory != 0 {
		m["memory"] = r.Memory
	}
	for k, v := range r.Custom {
		m[k] = v
	}
	return m
}

// DefaultInlineThreshold is the size up to which values travel inside
// task messages and live in the owner's memory instead of the shared
// object store (Ray's max_direct_call_object_size is 100 KiB).
const DefaultInlineThreshold = 100 << 10

// MaxInlineTotal bounds the inline bytes of one task's results, and of
// the value arguments a driver submits with one task: past it, values
// under the inline threshold go to the object store too (Ray's
// task_rpc_inlined_bytes_limit). Without it many small values add up
// past what one message can carry (NATS's 1 MiB max payload between
// nodes): a task with 16 returns of 64 KiB failed.
const MaxInlineTotal = 512 << 10

// Option configures Init.
type Option func(*config)

type config struct {
	// node is the settings of the node Init starts: an Option that sets
	// one writes its field (nodeConfig adds what Init decides).
	node nodeconfig.Config
	// What only the driver uses.
	inlineThreshold int
	lineageBudget   int
	namespace       string
	workerMode      WorkerMode
	noLogToDriver   bool // WithoutLogToDriver (workeroutput.go)
	faults          *FaultInjector
	faultPlan       *faultplan.Plan
	faultPoints     *faultplan.Points
	noSignalHandler bool
	// simulation, if set, runs the program on a simulated cluster
	// (WithSimulation).
	simulation *sim.Config
}

// WorkerMode says where tasks and actors run.
type WorkerMode int

const (
	// ProcessWorkers runs tasks and actors in worker processes: your own
	// binary, re-executed in worker mode, mapping the node's shared-memory
	// arena. Isolation (a crash or kill takes one worker, not the
	// program), real fault injection. The default.
	ProcessWorkers WorkerMode = iota
	// InProcessWorkers runs each worker as a worker runtime on
	// goroutines of the driver, speaking the same protocol to the node
	// over an in-memory connection: lowest latency, no isolation (a task
	// that ignores its context keeps running after a kill; memory, Go
	// globals and the Go runtime are shared with the driver). Actors,
	// concurrency groups, generators, cancellation and fault points
	// behave as with processes.
	InProcessWorkers
)

// String names the mode as the -mode flags of the samples do.
func (m WorkerMode) String() string {
	if m == InProcessWorkers {
		return "inprocess"
	}
	return "process"
}

// ParseWorkerMode reads a mode as String writes it ("process" or
// "inprocess"), for -mode flags; anything else is ErrInvalidArgument.
func ParseWorkerMode(s string) (WorkerMode, error) {
	switch s {
	case "process":
		return ProcessWorkers, nil
	case "inprocess":
		return InProcessWorkers, nil
	}
	return ProcessWorkers, errs.Invalidf("worker mode %q: want process or inprocess", s)
}

// WithWorkerMode chooses process workers (the default) or in-process
// workers.
func WithWorkerMode(m WorkerMode) Option { return func(c *config) { c.workerMode = m } }

// WithWorkerBinary sets the program worker processes run (default: this
// program, os.Executable()). It must register the same functions and
// actor types, and call Init early in main.
func WithWorkerBinary(path string) Option { return func(c *config) { c.node.WorkerBinary = path } }

// WithIdleWorkerTimeout sets how long a worker beyond one per CPU (the
// pool grows while tasks wait on their children) may stay idle before it
// is stopped (default 10s).
func WithIdleWorkerTimeout(d time.Duration) Option {
	return func(c *config) { c.node.IdleWorkerTimeout = d }
}

// WithWorkerHeapFloor sets the garbage a worker process may build up
// before its collector runs, at least, however little it holds (default
// 8 MiB; one byte gives Go's default behaviour): a task that computes
// over tens of MiB of fresh buffers then costs about one collection
// instead of several, at the cost of up to that much more garbage held by
// each busy worker (an idle one gives it back after a second). GOGC or
// GOMEMLIMIT set in the environment turns it off, leaving the workers to
// those settings.
func WithWorkerHeapFloor(bytes uint64) Option {
	return func(c *config) { c.node.WorkerHeapFloor = bytes }
}

// WithSpillDirs sets the directories objects are spilled to when the
// object store fills (round-robin; default: a directory in the session
// directory, removed at Shutdown). Spill files hold no name on disk:
// their space comes back as their objects are freed, and when the process
// ends, even by kill -9. Spilling stops short of filling the directories'
// file system (a small reserve lets Gets of spilled objects make room).
func WithSpillDirs(dirs ...string) Option { return func(c *config) { c.node.SpillDirs = dirs } }

// WithoutSignalHandler keeps Init from handling SIGINT and SIGTERM. By
// default a driver that gets one of them shuts atoll down (stopping its
// workers, removing its spill files and session directory, bounded to
// 10 s) and then dies of the signal as it would have without atoll. A
// program that handles these signals itself passes this option and calls
// Shutdown on its own way out; what a process that died without Shutdown
// left on disk is removed by the next Init or node start on the machine.
func WithoutSignalHandler() Option { return func(c *config) { c.noSignalHandler = true } }

// WithoutSpilling turns spilling off: a full store makes creations wait,
// then fail with ObjectStoreFull.
func WithoutSpilling() Option { return func(c *config) { c.node.NoSpill = true } }

// WithSaturation bounds root tasks — tasks with no ObjectRef arguments,
// which create new data — to saturation × CPU slots running at once, and
// runs tasks that consume existing objects first, so a pipeline does not
// flood memory with inputs faster than it can consume them (Dask's
// worker-saturation setting). Default 1.0; math.Inf(1) disables it.
func WithSaturation(saturation float64) Option {
	return func(c *config) { c.node.Saturation = saturation }
}

// WithPipelineDepth sets how many tasks a worker process may hold at once
// (default 16): it starts the next as soon as one ends, with no round trip
// to the raylet. Only tasks of one scheduling class are pipelined to a
// worker, and those not started are taken back when the running one
// blocks in Get or another worker is idle. 1 turns pipelining off.
// A driver's tasks that take no objects as arguments and run short (each
// of the last n of a kind under a millisecond) are held twice as deep,
// in half as many writes, until one runs longer or the node wants the
// worker back for another caller. An
// actor's process holds twice this many calls beyond those it runs at
// once (its calls all run there, and the caller refills them while it
// runs the rest).
func WithPipelineDepth(n int) Option { return func(c *config) { c.node.PipelineDepth = n } }

// WithWorkerOutput sets where worker processes' stdout and stderr go
// (default os.Stderr).
func WithWorkerOutput(w io.Writer) Option { return func(c *config) { c.node.WorkerOutput = w } }

// WithNumCPUs sets the node's CPU count (default: runtime.NumCPU()); one
// pool worker starts per CPU.
func WithNumCPUs(n float64) Option { return func(c *config) { c.node.NumCPUs = n } }

// WithResources declares the node's custom resources, e.g. {"GPU": 1}.
func WithResources(r map[string]float64) Option { return func(c *config) { c.node.Resources = r } }

// WithObjectStoreMemory sets the object store's hard limit in bytes
// (default 30% of physical memory, as Ray).
func WithObjectStoreMemory(bytes uint64) Option {
	return func(c *config) { c.node.ObjectStoreMemory = bytes }
}

// WithStoreFullTimeout sets how long a creation waits for space before it
// fails with ObjectStoreFull (default 10s).
func WithStoreFullTimeout(d time.Duration) Option {
	return func(c *config) { c.node.StoreFullTimeout = d }
}

// WithPrefaultedStore touches every page of the object store at start, so
// that writes never page-fault (as Ray's preallocation): faster puts, at
// the cost of holding the whole store's memory from the start.
func WithPrefaultedStore() Option { return func(c *config) { c.node.PrefaultStore = true } }

// HugePages says whether the object store's shared memory is backed by
// 2 MiB pages, which make scans of large objects faster: HugePagesAuto
// (the default) where the system allows them for shared memory
// (/sys/kernel/mm/transparent_hugepage/shmem_enabled set to advise or
// always), HugePagesOn to require them (Init fails, saying how to allow
// them, where the system does not), HugePagesOff for 4 KiB pages.
type HugePages = objectstore.HugePages

// The HugePages settings.
const (
	HugePagesAuto = objectstore.HugePagesAuto
	HugePagesOn   = objectstore.HugePagesOn
	HugePagesOff  = objectstore.HugePagesOff
)

// ParseHugePages reads a HugePages setting as its String writes it:
// "auto", "on" or "off".
func ParseHugePages(s string) (HugePages, error) { return objectstore.ParseHugePages(s) }

// WithStoreHugePages sets whether the object store uses huge pages
// (default HugePagesAuto).
func WithStoreHugePages(h HugePages) Option { return func(c *config) { c.node.StoreHugePages = h } }

// WithInlineThreshold sets the largest value kept inline instead of in
// the shared object store (default DefaultInlineThreshold; 0 keeps the
// default, a negative value stores everything in the object store).
func WithInlineThreshold(bytes int) Option { return func(c *config) { c.inlineThreshold = bytes } }

// WithLineageBudget bounds the bytes of lineage (the specs of finished
// tasks whose outputs are still referenced) the driver keeps to rebuild
// objects lost with their node, like Ray's max_lineage_bytes (default
// 64 MiB; the oldest lineage goes first). Objects whose lineage went fail
// with ObjectReconstructionFailedError when lost.
func WithLineageBudget(bytes int) Option { return func(c *config) { c.lineageBudget = bytes } }

// WithTracerProvider sets where spans go. Default: an OTLP exporter when
// the standard OTEL_EXPORTER_OTLP_* variables are set, else the global
// provider (otel.GetTracerProvider()).
func WithTracerProvider(tp trace.TracerProvider) Option {
	return func(c *config) { c.node.TracerProvider = tp }
}

// WithMeterProvider sets where the node's metrics go (object store bytes,
// spilled bytes, queue lengths, workers); default the global provider
// (otel.GetMeterProvider()), a no-op unless the program installs one (a
// Prometheus exporter, an OTLP reader).
func WithMeterProvider(mp metric.MeterProvider) Option {
	return func(c *config) { c.node.MeterProvider = mp }
}

// FaultInjector drops, delays and duplicates messages between the node's
// actors (WithFaultInjector). Make one with actors.NewFaultInjector and add
// rules with its Drop, Delay and Duplicate methods and the actors package's
// matchers (actors.MessageType[*atollpb.TaskResult]() and the like); see
// actors.FaultInjector for the semantics.
type FaultInjector = actors.FaultInjector

// WithFaultInjector installs fi on the node's actors — the GCS, the object
// store, the raylet, the owner, every worker and actor host — so a test
// can drop, delay or duplicate the messages between them (atollpb types:
// SubmitTask, TaskResult, PushTask, CreateObjectRequest, ...) while the
// program runs.
func WithFaultInjector(fi *FaultInjector) Option { return func(c *config) { c.faults = fi } }

// WithFaultPlan applies a seeded fault plan (package faultplan): its
// message rules for the driver's node go into the node's fault injector
// (WithFaultInjector's, or a new one), and its timed rules (fail-creates,
// kill-node) run from Init until Shutdown. Node processes apply the
// plan's rules for their role when started with faultplan.EnvPlan naming
// the plan's file. FaultLog reports what was injected.
func WithFaultPlan(p *faultplan.Plan) Option { return func(c *config) { c.faultPlan = p } }

// WithSimulation runs the program on a simulated cluster (package sim)
// instead of a real one: nodes, stores, workers and the network are
// simulated in this process, one goroutine at a time, on a simulated
// clock, every choice drawn from cfg.Seed, with cfg's faults; the tasks
// and actors run your registered functions. The goroutine that calls Init
// is the driver's; Shutdown ends the run, prints its verdict (the
// checkers of package sim) and returns its failure, if one. Limits: SDK
// calls from other goroutines, real time (sim.Sleep is simulated) and
// real I/O in tasks are not simulated; streaming generators are refused.
// The other options are ignored.
func WithSimulation(cfg sim.Config) Option { return func(c *config) { c.simulation = &cfg } }

// WithLogger sets the runtime's logger (default slog.Default()). Records
// logged with a task's context carry trace_id, span_id and task_id.
func WithLogger(l *slog.Logger) Option { return func(c *config) { c.node.Logger = l } }

// WithSessionDir sets the directory for the session's files (JetStream
// state); default a fresh directory under os.TempDir(), removed at
// Shutdown.
func WithSessionDir(dir string) Option { return func(c *config) { c.node.SessionDir = dir } }

// WithNamespace sets the namespace of named actors (default "default").
func WithNamespace(ns string) Option { return func(c *config) { c.namespace = ns } }

// WithAddress connects the driver to a running cluster instead of starting
// the embedded one: address is the head's host:port (or nats:// URL), or
// "auto" for the cluster `atoll start --head` recorded on this machine.
// Without it Init reads ATOLL_ADDRESS. The driver then runs a node of its
// own that holds the objects it puts and gets; it gives that node no CPUs
// unless WithNumCPUs says otherwise, so its tasks run on the cluster.
func WithAddress(address string) Option { return func(c *config) { c.node.Address = address } }

// WithSecret is the cluster's secret (64 hex digits, as `atoll start
// --head` generates it) for a driver joining a cluster. Without it Init
// reads ATOLL_SECRET, then the file ATOLL_SECRET_FILE names, then the
// head's secret file on this machine; a cluster that refuses the secret
// (or none found) fails Init with ErrUnauthenticated.
func WithSecret(secret string) Option { return func(c *config) { c.node.Secret = secret } }

// WithFailureTimeout bounds the time the cluster takes to declare a failed
// node dead (default 5 s, at least 1.2 s).
func WithFailureTimeout(d time.Duration) Option { return func(c *config) { c.node.FailureTimeout = d } }

// WithNodeIP is the address other nodes reach the driver's node at (to
// pull the objects it holds) when connected to a cluster; default
// 127.0.0.1, right for a cluster on one machine.
func WithNodeIP(ip string) Option { return func(c *config) { c.node.NodeIP = ip } }

// nodeConfig is the configuration of the node Init starts: the settings
// the options wrote, for a driver's own node when Init joins a cluster.
func (cfg *config) nodeConfig() nodeconfig.Config {
	nc := cfg.node
	nc.Driver = nc.Address != ""
	return nc
}
