package atoll

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	goruntime "runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/nats-io/nats.go"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/atoll-runtime/atoll/actors"
	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/cluster"
	"github.com/atoll-runtime/atoll/gcs"
	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/ids"
	"github.com/atoll-runtime/atoll/internal/natsembed"
	"github.com/atoll-runtime/atoll/internal/telemetry"
	"github.com/atoll-runtime/atoll/objectstore"
	"github.com/atoll-runtime/atoll/raylet"
)

// core is one process's runtime: in the embedded default it is the whole
// local cluster (NATS, GCS, object store, raylet) plus the driver's owner
// state (object table, pending tasks, actor handles).
type core struct {
	cfg    config
	log    *slog.Logger
	tracer trace.Tracer
	ownTP  *sdktrace.TracerProvider

	sessionDir    string
	ownSessionDir bool
	nats          *natsembed.Server
	nc            *nats.Conn
	system        *actor.ActorSystem
	gcs           gcsAPI
	gcsClient     *gcs.Client
	arena         *objectstore.Arena
	storePID      *actor.PID
	gcsPID        *actor.PID
	rayletPID     *actor.PID
	ownerPID      *actor.PID
	reporterPID   *actor.PID
	store         storeAPI
	link          nodeLink

	nodeID   ids.NodeID
	jobID    ids.JobID
	workerID ids.WorkerID
	putTask  ids.TaskID
	putSeq   atomic.Uint32

	objects *objectTable
	tasks   *taskTable
	actors  *actorTable

	workerStores sync.Map // ids.WorkerID -> *objectstore.Client
	unsubscribe  func()
	metrics      metric.Registration
	closed       atomic.Bool
	// isWorker: this core serves a worker process (see worker.go).
	isWorker bool
	// clusterAddress is the NATS address of the cluster this core joined
	// or heads (empty in the embedded default).
	clusterAddress string
	// workerBinary is the program that runs this job's tasks (sent with
	// every task, for nodes started without one).
	workerBinary string
	gateway      *cluster.Gateway
}

var (
	currentMu sync.Mutex
	current_  atomic.Pointer[core]
)

func current() *core { return current_.Load() }

func running() (*core, error) {
	rt := current()
	if rt == nil || rt.closed.Load() {
		return nil, errs.ErrNotInitialized
	}
	return rt, nil
}

// Init starts atoll. With no address it starts the embedded local
// cluster inside this process: an embedded NATS server with JetStream, the
// GCS, the shared-memory object store, and a raylet with one goroutine
// worker per CPU. Call Shutdown when done. Init fails with
// ErrAlreadyStarted if atoll is already running in this process.
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
	if os.Getenv(EnvNode) != "" {
		runNodeFromEnv() // never returns
	}
	if cfg.address == "" {
		cfg.address = os.Getenv(EnvAddress)
	}
	if cfg.address != "" && cfg.workerMode != ProcessWorkers {
		return errs.Invalidf("WithAddress: a driver connected to a cluster runs its tasks in worker processes (InProcessWorkers is for the embedded cluster)")
	}
	rt := &core{cfg: cfg, nodeID: ids.NewNodeID(), jobID: ids.NewJobID(), workerID: ids.NewWorkerID(), putTask: ids.NewTaskID()}
	defer func() {
		if err != nil {
			rt.stop(context.Background())
		}
	}()
	if err := rt.start(ctx); err != nil {
		return err
	}
	current_.Store(rt)
	return nil
}

func (rt *core) start(ctx context.Context) error {
	cfg := &rt.cfg
	rt.log = cfg.logger
	if rt.log == nil {
		rt.log = slog.Default()
	}
	rt.log = slog.New(telemetry.NewLogHandler(rt.log.Handler())).With("component", "atoll")
	if cfg.numCPUs == 0 && cfg.address == "" && cfg.node == nil {
		cfg.numCPUs = float64(goruntime.NumCPU()) // a driver's own node in a cluster gets none by default
	}
	rt.workerBinary = cfg.workerBinary
	if rt.workerBinary == "" {
		rt.workerBinary, _ = os.Executable()
	}
	if cfg.numCPUs < 0 {
		return errs.Invalidf("WithNumCPUs(%g): must not be negative", cfg.numCPUs)
	}
	if cfg.inlineThreshold == 0 {
		cfg.inlineThreshold = DefaultInlineThreshold
	}
	if cfg.namespace == "" {
		cfg.namespace = "default"
	}
	tp := cfg.tracerProvider
	if tp == nil {
		own, err := telemetry.ProviderFromEnv(ctx)
		if err != nil {
			return fmt.Errorf("atoll: OTLP exporter: %w", err)
		}
		if own != nil {
			rt.ownTP, tp = own, own
		} else {
			tp = otel.GetTracerProvider()
		}
	}
	cfg.tracerProvider = tp
	rt.tracer = telemetry.Tracer(tp)

	rt.sessionDir = cfg.sessionDir
	if rt.sessionDir == "" {
		dir, err := os.MkdirTemp("", "atoll-session-")
		if err != nil {
			return fmt.Errorf("atoll: session dir: %w", err)
		}
		rt.sessionDir, rt.ownSessionDir = dir, true
	}
	if err := rt.connectControlPlane(); err != nil {
		return err
	}
	rt.system = actors.NewSystem(rt.log)
	root := rt.system.Root
	if rt.runsGCS() {
		gcsProps, err := gcs.NewProps(gcs.Config{Conn: rt.nc, Logger: quiet(rt.log), TracerProvider: tp})
		if err != nil {
			return err
		}
		if rt.gcsPID, err = root.SpawnNamed(rt.withFaults(gcsProps), "gcs"); err != nil {
			return fmt.Errorf("atoll: start GCS: %w", err)
		}
	}
	var err error
	rt.gcsClient = gcs.NewClient(rt.nc, gcs.ClientOptions{WaitForServer: true})
	rt.gcs = rt.gcsClient
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	_, err = rt.gcsClient.ListNodes(wctx)
	cancel()
	if err != nil {
		return fmt.Errorf("atoll: GCS not ready: %w", err)
	}

	storeCfg := objectstore.Config{Capacity: cfg.storeMemory, CreateTimeout: cfg.storeFullTimeout, Prefault: cfg.prefaultStore}
	if !cfg.noSpill {
		storeCfg.SpillDirs = cfg.spillDirs
		if len(storeCfg.SpillDirs) == 0 {
			storeCfg.SpillDirs = []string{filepath.Join(rt.sessionDir, "spill")}
		}
	}
	rt.arena, err = storeCfg.NewArena("atoll-" + rt.nodeID.Short())
	if err != nil {
		return fmt.Errorf("atoll: object store arena: %w", err)
	}
	storeProps, err := objectstore.NewProps(storeCfg, rt.arena)
	if err != nil {
		return err
	}
	if rt.storePID, err = root.SpawnNamed(rt.withFaults(storeProps), "objectstore"); err != nil {
		return fmt.Errorf("atoll: start object store: %w", err)
	}
	rt.store = objectstore.NewClient(root, rt.storePID, rt.arena, rt.workerID)
	rt.objects = newObjectTable(func(stored []ids.ObjectID) {
		if rt.gateway != nil {
			rt.gateway.Free(idsBytes(stored)) // every node's copy
			return
		}
		rt.store.Delete(stored...)
	})
	rt.tasks = newTaskTable()
	rt.actors = newActorTable()

	if rt.ownerPID, err = root.SpawnNamed(rt.withFaults(actor.PropsFromProducer(func() actor.Actor { return &ownerActor{rt: rt} }, actor.WithDispatcher(actors.HotDispatcher))), "owner"); err != nil {
		return fmt.Errorf("atoll: start owner: %w", err)
	}
	if rt.reporterPID, err = root.SpawnNamed(actor.PropsFromProducer(func() actor.Actor { return &actorReporter{gcs: rt.gcsClient, log: rt.log} }), "actor-reporter"); err != nil {
		return fmt.Errorf("atoll: start actor reporter: %w", err)
	}
	res := raylet.Resources{}
	for k, v := range cfg.resources {
		res[k] = v
	}
	res[raylet.CPU] = cfg.numCPUs
	if _, ok := res[raylet.Memory]; !ok && cfg.numCPUs > 0 {
		// A driver's node without CPUs advertises nothing, so placement
		// never picks it for work the cluster's nodes can do.
		res[raylet.Memory] = float64(totalMemory())
	}
	host, _ := os.Hostname()
	info := &atollpb.NodeInfo{NodeId: rt.nodeID.Bytes(), Address: "raylet", Resources: res, State: atollpb.NodeState_NODE_ALIVE,
		StartTimeUnixMs: time.Now().UnixMilli(), ObjectStoreBytes: rt.arena.Size(), Hostname: host,
		IsHead: rt.runsGCS(), IsDriver: cfg.node == nil}
	var clusterCfg *raylet.ClusterConfig
	if rt.clustered() {
		rt.gateway = rt.newGateway(info) // started once the raylet runs
		clusterCfg = rt.gateway.RayletConfig(0)
	}
	rayletProps, err := raylet.NewProps(raylet.Config{
		NodeID:         rt.nodeID,
		Resources:      res,
		Executor:       (*executor)(rt),
		IdleTimeout:    cfg.idleTimeout,
		StoreCapacity:  rt.arena.Size(),
		Saturation:     cfg.saturation,
		TracerProvider: tp,
		Logger:         rt.log,
		OnWorkerDeath:  rt.workerDied,
		ReportActor:    func(info *atollpb.ActorInfo) { root.Send(rt.reporterPID, info) },
		Process:        rt.processConfig(),
		Middleware:     rt.faultMiddleware(),
		Cluster:        clusterCfg,
	})
	if err != nil {
		return err
	}
	if rt.rayletPID, err = root.SpawnNamed(rt.withFaults(rayletProps), "raylet"); err != nil {
		return fmt.Errorf("atoll: start raylet: %w", err)
	}
	if rt.gateway != nil {
		if err := rt.gateway.Start(); err != nil {
			return fmt.Errorf("atoll: join the cluster: %w", err)
		}
	}
	if rt.gateway != nil && cfg.node == nil {
		// A driver's first tasks should see the whole cluster, not the
		// first node it heard of. A node that never reports (it died
		// without the GCS knowing yet) delays Init by 3 s at most.
		wctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		if err := rt.gateway.WaitPeers(wctx); err != nil {
			rt.log.Warn("starting before hearing from every node", "err", err)
		}
		cancel()
	}
	rt.link = &driverLink{system: rt.system, raylet: rt.rayletPID, owner: rt.ownerPID, node: rt.nodeID, gateway: rt.gateway}
	rt.unsubscribe, err = rt.gcsClient.SubscribeActorEvents(func(info *atollpb.ActorInfo) {
		root.Send(rt.ownerPID, info)
		root.Send(rt.rayletPID, info) // for callers inside worker processes
	})
	if err != nil {
		return fmt.Errorf("atoll: subscribe to actor events: %w", err)
	}
	mp := cfg.meterProvider
	if mp == nil {
		mp = otel.GetMeterProvider()
	}
	if rt.metrics, err = rt.registerMetrics(mp); err != nil {
		return fmt.Errorf("atoll: metrics: %w", err)
	}
	if !rt.clustered() {
		if err := rt.gcsClient.RegisterNode(ctx, info); err != nil {
			return fmt.Errorf("atoll: register node: %w", err)
		}
	}
	if cfg.node == nil {
		if err := rt.gcsClient.AddJob(ctx, &atollpb.JobInfo{JobId: rt.jobID.Bytes(), DriverAddress: rt.ownerPID.Id,
			StartTimeUnixMs: time.Now().UnixMilli(), Entrypoint: entrypoint(), WorkerBinary: rt.workerBinary}); err != nil {
			return fmt.Errorf("atoll: register job: %w", err)
		}
	}
	rt.log.Debug("atoll started", "node", rt.nodeID.String(), "cpus", cfg.numCPUs, "store_bytes", rt.arena.Size())
	return nil
}

// Shutdown stops atoll: running tasks are cancelled, actors stopped, the
// object store and its shared memory released. Views returned by Get are
// invalid afterwards. Shutdown without Init is a no-op.
func Shutdown(ctx context.Context) error {
	currentMu.Lock()
	defer currentMu.Unlock()
	rt := current()
	if rt == nil {
		return nil
	}
	current_.Store(nil)
	return rt.stop(ctx)
}

func (rt *core) stop(ctx context.Context) error {
	rt.closed.Store(true)
	var errList []error
	if rt.gcsClient != nil && rt.rayletPID != nil && rt.cfg.node == nil {
		fctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		if err := rt.gcsClient.FinishJob(fctx, rt.jobID.Bytes()); err != nil {
			rt.log.Debug("finish job", "err", err)
		}
		cancel()
	}
	if rt.unsubscribe != nil {
		rt.unsubscribe()
	}
	if rt.metrics != nil {
		_ = rt.metrics.Unregister()
	}
	if rt.objects != nil {
		if rt.gateway != nil && rt.cfg.node == nil {
			// The job ends: its objects go from every node (a single
			// node's store simply closes).
			rt.gateway.Free(idsBytes(rt.objects.storedIDs()))
			for _, id := range rt.actors.ownedLive() {
				rt.gateway.KillActor(&atollpb.KillActor{ActorId: id.Bytes(), NoRestart: true, Reason: "its job ended"})
			}
			rt.gateway.Flush()
		}
		rt.objects.close()
	}
	if rt.tasks != nil {
		rt.tasks.failAll(errs.Unavailablef("atoll shut down"), rt)
	}
	if rt.gateway != nil {
		rt.gateway.Stop()
	}
	if rt.system != nil {
		for _, pid := range []*actor.PID{rt.rayletPID, rt.ownerPID, rt.reporterPID, rt.storePID, rt.gcsPID} {
			if pid != nil {
				_ = rt.system.Root.StopFuture(pid).Wait()
			}
		}
		rt.system.Shutdown()
	}
	if rt.nc != nil {
		rt.nc.Close()
	}
	if rt.nats != nil {
		rt.nats.Shutdown()
	}
	if rt.arena != nil {
		if err := rt.arena.Close(); err != nil {
			errList = append(errList, err)
		}
	}
	if rt.ownSessionDir {
		if err := os.RemoveAll(rt.sessionDir); err != nil {
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

// faultMiddleware returns the fault injector's middleware, if any.
func (rt *core) faultMiddleware() []actor.ReceiverMiddleware {
	if rt.cfg.faults == nil {
		return nil
	}
	return []actor.ReceiverMiddleware{rt.cfg.faults.ReceiverMiddleware()}
}

// withFaults installs the fault injector on props, if there is one.
func (rt *core) withFaults(props *actor.Props) *actor.Props {
	if mw := rt.faultMiddleware(); mw != nil {
		return props.Clone(actor.WithReceiverMiddleware(mw...))
	}
	return props
}

// processConfig returns how the raylet starts worker processes, or nil
// for goroutine workers.
func (rt *core) processConfig() *raylet.ProcessConfig {
	if rt.cfg.workerMode != ProcessWorkers {
		return nil
	}
	pc := &raylet.ProcessConfig{
		Binary: rt.cfg.workerBinary, Arena: rt.arena.File(), ArenaSize: rt.arena.Size(), Store: rt.storePID,
		GCS: rt.gcsClient.Do, Output: rt.cfg.workerOutput,
	}
	if rt.cfg.node != nil {
		// A cluster node runs each job's own binary unless it was given one.
		pc.Binary, pc.PerJobBinary = rt.cfg.node.WorkerBinary, true
		pc.Args = []string{}
	}
	if g := rt.gateway; g != nil {
		pc.Fetch = g.Fetch
		pc.Delete = func(req *atollpb.DeleteObjectsRequest) { g.Free(req.ObjectIds) }
	}
	return pc
}

// workerDied reclaims a dead worker's pins, its unsealed objects and the
// objects it owned.
func (rt *core) workerDied(w ids.WorkerID) {
	rt.workerStores.Delete(w)
	rt.system.Root.Send(rt.storePID, &atollpb.ClientDisconnected{ClientId: w.Bytes()})
	rt.gateway.OwnerExited(w) // other nodes free what it owned there (nil-safe)
}

// storeFor returns the object-store client of a worker.
func (rt *core) storeFor(w ids.WorkerID) storeAPI {
	if rt.isWorker {
		return rt.store
	}
	if c, ok := rt.workerStores.Load(w); ok {
		return c.(*objectstore.Client)
	}
	c, _ := rt.workerStores.LoadOrStore(w, objectstore.NewClient(rt.system.Root, rt.storePID, rt.arena, w))
	return c.(*objectstore.Client)
}

// quiet keeps only warnings and errors of a chatty component.
func quiet(l *slog.Logger) *slog.Logger { return slog.New(minLevel{l.Handler(), slog.LevelWarn}) }

type minLevel struct {
	slog.Handler
	min slog.Level
}

func (h minLevel) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= h.min && h.Handler.Enabled(ctx, l)
}

func (h minLevel) WithAttrs(a []slog.Attr) slog.Handler {
	return minLevel{h.Handler.WithAttrs(a), h.min}
}
func (h minLevel) WithGroup(n string) slog.Handler { return minLevel{h.Handler.WithGroup(n), h.min} }

func entrypoint() string {
	if len(os.Args) > 0 {
		return filepath.Base(os.Args[0])
	}
	return ""
}
