package node

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
	"github.com/nats-io/nats.go"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/faultplan"
	"github.com/atoll-runtime/atoll/internal/actors"
	"github.com/atoll-runtime/atoll/internal/autoscaler"
	"github.com/atoll-runtime/atoll/internal/cluster"
	"github.com/atoll-runtime/atoll/internal/dashboard"
	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/gcs"
	"github.com/atoll-runtime/atoll/internal/ids"
	"github.com/atoll-runtime/atoll/internal/lockfile"
	"github.com/atoll-runtime/atoll/internal/natsembed"
	"github.com/atoll-runtime/atoll/internal/nodeconfig"
	"github.com/atoll-runtime/atoll/internal/nodemetrics"
	"github.com/atoll-runtime/atoll/internal/objectstore"
	"github.com/atoll-runtime/atoll/internal/partition"
	"github.com/atoll-runtime/atoll/internal/raylet"
	"github.com/atoll-runtime/atoll/internal/telemetry"
	"github.com/atoll-runtime/atoll/internal/workerproto"
)

const (
	// gcsReadyTimeout bounds Start's wait for the GCS to answer.
	gcsReadyTimeout = 30 * time.Second
	// peersTimeout bounds a driver's node's wait for every node's first
	// load report: a node that died without the GCS knowing yet delays
	// Start by this much at most.
	peersTimeout = 3 * time.Second
)

// Node is a running node: its actor system and the actors on it (GCS where
// it runs one, object store, raylet, actor reporter, gateway in a
// cluster), its NATS connection and its arena. Its methods are safe for
// concurrent use.
type Node struct {
	cfg   nodeconfig.Config // defaults applied
	hooks Hooks
	id    ids.NodeID
	log   *slog.Logger
	ownTP *sdktrace.TracerProvider // created from the environment; shut down on Stop

	sessionDir     string
	ownSessionDir  bool
	sessionLock    *lockfile.Lock // held while the node runs (see session.go)
	gcsLock        *lockfile.Lock // a head's GCS directory (gcsdir.go)
	dead           chan struct{}  // closed when the cluster declared it dead (dead.go)
	workers        workerproto.Workers
	deadOnce       sync.Once
	deadWhy        atomic.Pointer[string] // failStop's reason (dead.go)
	nats           *natsembed.Server      // embedded default and head without NATSURL
	nc             *nats.Conn
	clusterAddress string
	sec            nodeconfig.Security // resolved Config.Credentials (security.go)
	// partition is the node's network switch (a node dialing a cluster's
	// NATS; nil otherwise): fault plans cut it off through it.
	partition *partition.Switch

	system      *actor.ActorSystem
	gcsPID      *actor.PID // nil unless this node runs the GCS
	gcsClient   *gcs.Client
	arena       *objectstore.Arena
	storePID    *actor.PID
	store       *objectstore.Client // the node's own (metrics)
	reporterPID *actor.PID
	rayletPID   *actor.PID
	gateway     *cluster.Gateway // nil on an embedded node
	amm         *cluster.AMM     // the head's Active Memory Manager, if on
	ammPID      *actor.PID
	// placementPID is the placement actor where the node runs the GCS;
	// bundleSubs the node's subscriptions for its bundles (bundles.go).
	placementPID *actor.PID
	bundleSubs   []*nats.Subscription
	// The head's autoscaler and its node provider (autoscaler.go), with a
	// cluster file.
	autoscaler    *autoscaler.Autoscaler
	autoscalerPID *actor.PID
	provider      autoscaler.NodeProvider
	unsubscribe   func()                              // the raylet's actor events
	metrics       atomic.Pointer[nodemetrics.Metrics] // set once Start registered them (metrics.go)
	activity      *activity                           // transfers, spills and restores → timeline and spans
	logSub        *nats.Subscription                  // log requests (logs.go); cluster nodes
	dashboard     *dashboard.Server                   // a head's, if it serves one (dashboard.go)
	// rejoinCancel ends the goroutines of rejoin.go; rejoinWG waits for them.
	rejoinCancel context.CancelFunc
	rejoinWG     sync.WaitGroup

	workerStores sync.Map    // ids.WorkerID -> *objectstore.Client
	workerLogs   *workerLogs // a cluster node's worker output (workerlogs.go); nil elsewhere

	// mu guards what callers add after Start: actors spawned with
	// SpawnNamed and actor-event subscriptions. Never held across I/O.
	mu      sync.Mutex
	stopped bool
	spawned []*actor.PID
	events  map[string]func() // PID id (or "own-death") -> unsubscribe

	stopOnce sync.Once
	stopErr  error
}

// Hooks are what the process running a node plugs into it beyond its
// settings: the SDK's driver (atoll.Init) sets them for the node it runs
// for itself; node processes and programs embedding a node set none.
type Hooks struct {
	// InProcess, when set, runs the node's workers in this process: it
	// is called for each worker the raylet starts and must start a worker
	// runtime (runtime.NewWorker) serving the worker's end of its
	// in-memory connection on goroutines of its own, and return at once.
	// Nil runs workers as processes. Embedded nodes only.
	InProcess func(InProcessWorker) error
	// Deliver, if set, hands a task's or call's result straight to its
	// owner when that owner lives in this process (the driver's owner
	// table), skipping the owner's mailbox (raylet.Config.Deliver).
	Deliver func(owner *actor.PID, res *atollpb.TaskResult) bool
	// DeliverBorrows, if set, hands a borrower's standalone report to
	// the owner in this process (raylet.Config.DeliverBorrows).
	DeliverBorrows func(*atollpb.BorrowReport) bool
	// Faults, when set, is installed on the node's actors (GCS, store,
	// raylet and what the raylet spawns, actors spawned with SpawnNamed).
	// A node process without one loads faultplan.EnvPlan's (faultplan.go).
	Faults *actors.FaultInjector
	// FaultPoints, when set, are a fault plan's rules at points for this
	// node (faultplan.Plan.Points): kill-worker rules go to the raylet's
	// worker processes, spill-full and spill-slow to the store's spiller.
	// Their faults go to Faults' log.
	FaultPoints *faultplan.Points
}

// Start starts a node as cfg describes (see nodeconfig.Config) and
// returns once it serves: the GCS answers, the raylet runs, a cluster
// node has joined the gossip and registered, a driver's node has heard
// from every live node. The environment applies first
// (nodeconfig.Config.ApplyEnv), then cfg's defaults
// (nodeconfig.Config.WithDefaults). On error everything started so far
// is stopped again.
func Start(ctx context.Context, cfg nodeconfig.Config) (*Node, error) {
	return StartWith(ctx, cfg, Hooks{})
}

// StartWith is Start with hooks (a driver's).
func StartWith(ctx context.Context, cfg nodeconfig.Config, hooks Hooks) (*Node, error) {
	if err := cfg.ApplyEnv(); err != nil {
		return nil, err
	}
	cfg, err := cfg.WithDefaults()
	if err != nil {
		return nil, err
	}
	if hooks.InProcess != nil && !cfg.Embedded() {
		return nil, errs.Invalidf("node.Hooks: in-process workers (InProcess) are for an embedded node; cluster nodes run worker processes")
	}
	n := &Node{cfg: cfg, hooks: hooks, id: ids.NewNodeID(), events: map[string]func(){}, dead: make(chan struct{})}
	if err := n.start(ctx); err != nil {
		_ = n.Stop(context.Background())
		return nil, err
	}
	return n, nil
}

func (n *Node) start(ctx context.Context) error {
	cfg := &n.cfg
	n.log = slog.New(telemetry.NewLogHandler(cfg.Logger.Handler())).With("component", "atoll")
	telemetry.DefaultIdentity(telemetry.Identity{Role: telemetry.RoleNode, NodeID: n.id.String()})
	tp, own, err := telemetry.ResolveProvider(ctx, cfg.TracerProvider)
	if err != nil {
		return err
	}
	n.ownTP = own
	n.sessionDir = cfg.SessionDir
	if n.sessionDir == "" {
		reapSessions(os.TempDir(), n.log)
		dir, lock, err := newSessionDir()
		if err != nil {
			return err
		}
		n.sessionDir, n.ownSessionDir, n.sessionLock = dir, true, lock
	}
	if err := n.loadFaultPlan(); err != nil {
		return err
	}
	n.traceMessageFaults(tp)
	if err := n.resolveSecurity(); err != nil {
		return err
	}
	if err := n.connectControlPlane(); err != nil {
		return err
	}
	n.system = actors.NewSystem(n.log)
	root := n.system.Root
	if cfg.RunsGCS() {
		gcsProps, err := gcs.NewProps(gcs.Config{Conn: n.nc, Logger: quiet(n.log), TracerProvider: tp})
		if err != nil {
			return err
		}
		gcsProps = gcsProps.Configure(actors.RestartForever(n.log, "gcs"))
		if n.gcsPID, err = root.SpawnNamed(n.withFaults(gcsProps), "gcs"); err != nil {
			return fmt.Errorf("atoll: start GCS: %w", err)
		}
	}
	if cfg.RunsGCS() {
		if err := n.startPlacement(); err != nil { // bundles.go
			return err
		}
	}
	n.gcsClient = gcs.NewClient(n.nc, gcs.ClientOptions{WaitForServer: true})
	wctx, cancel := context.WithTimeout(ctx, gcsReadyTimeout)
	_, err = n.gcsClient.ListNodes(wctx)
	cancel()
	if err != nil {
		return fmt.Errorf("atoll: GCS not ready: %w", err)
	}

	n.activity = n.newActivity(tp)
	storeCfg := objectstore.Config{Capacity: cfg.ObjectStoreMemory, CreateTimeout: cfg.StoreFullTimeout, Prefault: cfg.PrefaultStore, HugePages: cfg.StoreHugePages,
		SpillFaults: n.spillFaults(), OnIO: n.activity.storeIO,
		// With in-process workers no other process maps the arena, so it
		// is this process's own memory, which reads faster than a memfd.
		Private: n.hooks.InProcess != nil}
	if !cfg.NoSpill {
		storeCfg.SpillDirs = cfg.SpillDirs
		if len(storeCfg.SpillDirs) == 0 {
			storeCfg.SpillDirs = []string{filepath.Join(n.sessionDir, "spill")}
		}
	}
	if n.arena, err = storeCfg.NewArena("atoll-" + n.id.Short()); err != nil {
		var coded *errs.CodeError
		if errors.As(err, &coded) {
			return err // already a user's error, saying what to change
		}
		return fmt.Errorf("atoll: object store arena: %w", err)
	}
	storeProps, err := objectstore.NewProps(storeCfg, n.arena)
	if err != nil {
		return err
	}
	// Its state lives outside the actor instance, so a restart loses
	// nothing: whatever a worker's request makes it fail with, it goes on.
	storeProps = storeProps.Configure(actors.RestartForever(n.log, "objectstore"))
	if n.storePID, err = root.SpawnNamed(n.withFaults(storeProps), "objectstore"); err != nil {
		return fmt.Errorf("atoll: start object store: %w", err)
	}
	n.store = objectstore.NewClient(root, n.storePID, n.arena, ids.NewWorkerID())
	reporter := &actorReporter{gcs: n.gcsClient, log: n.log}
	if n.reporterPID, err = root.SpawnNamed(actor.PropsFromProducer(func() actor.Actor { return reporter }), "actor-reporter"); err != nil {
		return fmt.Errorf("atoll: start actor reporter: %w", err)
	}

	res := raylet.Resources{}
	for k, v := range cfg.Resources {
		res[k] = v
	}
	res[raylet.CPU] = cfg.NumCPUs
	if _, ok := res[raylet.Memory]; !ok && cfg.NumCPUs > 0 {
		// A node without CPUs (a driver's, by default) advertises
		// nothing, so placement never picks it for work the cluster's
		// nodes can do.
		res[raylet.Memory] = float64(totalMemory())
	}
	host, _ := os.Hostname()
	info := &atollpb.NodeInfo{NodeId: n.id.Bytes(), Address: "raylet", Resources: res, State: atollpb.NodeState_NODE_ALIVE,
		StartTimeUnixMs: time.Now().UnixMilli(), ObjectStoreBytes: n.arena.Size(), Hostname: host,
		IsHead: cfg.RunsGCS(), IsDriver: cfg.Driver || cfg.Embedded(), NodeType: cfg.NodeType, InstanceId: cfg.InstanceID,
		FaultInjection: cfg.Head && (cfg.FaultInjection || cfg.NATSURL != "")}
	var clusterCfg *raylet.ClusterConfig
	if !cfg.Embedded() {
		n.gateway = n.newGateway(info) // started once the raylet runs
		clusterCfg = n.gateway.RayletConfig(0)
		if !cfg.Driver {
			if n.workerLogs, err = newWorkerLogs(n); err != nil { // workerlogs.go
				return err
			}
		}
	}
	reporterPID := n.reporterPID
	n.workers = workerproto.New()
	rayletProps, err := raylet.NewProps(raylet.Config{
		NodeID:         n.id,
		Resources:      res,
		IdleTimeout:    cfg.IdleWorkerTimeout,
		TimelineCap:    cfg.TimelineCap,
		StoreCapacity:  n.arena.Size(),
		Saturation:     cfg.Saturation,
		PipelineDepth:  cfg.PipelineDepth,
		TracerProvider: tp,
		Logger:         n.log,
		OnWorkerDeath:  n.workerDied,
		OnTaskEvent:    n.taskFinished,
		ReportActor:    func(info *atollpb.ActorInfo) { root.Send(reporterPID, info) },
		Process:        n.withKillPoints(n.processConfig(), tp),
		Workers:        n.workers,
		Deliver:        n.hooks.Deliver,
		DeliverBorrows: n.hooks.DeliverBorrows,
		Middleware:     n.faultMiddleware(),
		Cluster:        clusterCfg,
	})
	if err != nil {
		return err
	}
	// Its queues, workers and running tasks live in the actor instance: a
	// raylet that fails stops, and the node with it (failStop), so that
	// the cluster retries its work elsewhere instead of a fresh raylet
	// forgetting it.
	rayletProps = rayletProps.Configure(actors.StopOnFailure(n.log, "raylet", func(reason any) {
		n.failStop(fmt.Sprintf("its raylet failed (%v)", reason))
	}))
	if n.rayletPID, err = root.SpawnNamed(n.withFaults(rayletProps), "raylet"); err != nil {
		return fmt.Errorf("atoll: start raylet: %w", err)
	}
	// The node's own ports before it joins: a port that is taken fails
	// the start before the GCS has a record of the node.
	if err := n.startMetrics(ctx); err != nil {
		return fmt.Errorf("atoll: metrics: %w", err)
	}
	if err := n.startDashboard(); err != nil {
		return err
	}
	if n.gateway != nil {
		// After the raylet: the gateway sends to it, and a message sent
		// to an actor while it is being spawned races in protoactor.
		if err := n.gateway.Start(); err != nil {
			return fmt.Errorf("atoll: join the cluster: %w", err)
		}
	}
	if cfg.Head {
		if err := n.startAMM(); err != nil {
			return err
		}
		if cfg.Autoscaler != "" {
			if err := n.startAutoscaler(); err != nil { // autoscaler.go
				return err
			}
		}
	}
	if n.gateway != nil {
		if err := n.watchOwnDeath(); err != nil {
			return fmt.Errorf("atoll: subscribe to node events: %w", err)
		}
		n.startRejoin()
	}
	if n.gateway != nil && !cfg.Driver {
		if err := n.startJobs(); err != nil { // jobs.go
			return fmt.Errorf("start the job service: %w", err)
		}
	}
	if n.gateway != nil && cfg.Driver {
		// A driver's first tasks should see the whole cluster, not the
		// first node it heard of.
		wctx, cancel := context.WithTimeout(ctx, peersTimeout)
		if err := n.gateway.WaitPeers(wctx); err != nil {
			n.log.Warn("starting before hearing from every node", "err", err)
		}
		cancel()
	}
	if err := n.serveBundles(); err != nil {
		return fmt.Errorf("atoll: serve bundle requests: %w", err)
	}
	rayletPID := n.rayletPID
	if n.unsubscribe, err = n.gcsClient.SubscribeActorEvents(func(info *atollpb.ActorInfo) {
		root.Send(rayletPID, info) // for callers inside worker processes
	}); err != nil {
		return fmt.Errorf("atoll: subscribe to actor events: %w", err)
	}
	if n.gateway != nil {
		if err := n.serveLogs(); err != nil {
			return fmt.Errorf("atoll: serve log requests: %w", err)
		}
	}
	if cfg.Embedded() {
		// A cluster node registers through its gateway (with its
		// addresses); an embedded one directly.
		if err := n.gcsClient.RegisterNode(ctx, info); err != nil {
			return fmt.Errorf("atoll: register node: %w", err)
		}
	}
	n.log.Debug("node started", "node", n.id.String(), "head", cfg.RunsGCS(), "cpus", cfg.NumCPUs, "store_bytes", n.arena.Size())
	return nil
}

// Stop stops the node: a cluster node leaves the cluster gracefully
// (a last load report, then it leaves the gossip); running tasks are
// cancelled, worker processes stopped, the actors stopped (the raylet
// first, then the actors spawned with SpawnNamed, the reporter, the store
// and the GCS), the NATS connection closed and the embedded nats-server
// shut down, the arena unmapped and a session directory Start created
// removed. Later calls return the first call's result.
func (n *Node) Stop(ctx context.Context) error {
	n.stopOnce.Do(func() { n.stopErr = n.stop(ctx) })
	return n.stopErr
}

func (n *Node) stop(ctx context.Context) error {
	n.mu.Lock()
	n.stopped = true
	spawned := n.spawned
	events := n.events
	n.events = nil
	n.mu.Unlock()
	for _, unsubscribe := range events {
		unsubscribe()
	}
	if n.dashboard != nil {
		_ = n.dashboard.Close(ctx)
	}
	if n.logSub != nil {
		_ = n.logSub.Unsubscribe()
	}
	n.stopRejoin()
	if n.unsubscribe != nil {
		n.unsubscribe()
	}
	n.stopMetrics(ctx)
	for _, sub := range n.bundleSubs {
		_ = sub.Unsubscribe()
	}
	if n.autoscalerPID != nil {
		_ = n.system.Root.StopFuture(n.autoscalerPID).Wait()
	}
	if n.provider != nil {
		_ = n.provider.Close()
	}
	if n.ammPID != nil {
		_ = n.system.Root.StopFuture(n.ammPID).Wait()
	}
	if n.gateway != nil {
		reason := "" // stopped, or drained
		if n.cfg.Driver {
			reason = "its driver ended"
		}
		n.gateway.Stop(reason)
	}
	if n.system != nil {
		pids := append(append([]*actor.PID{n.rayletPID}, spawned...), n.reporterPID, n.storePID, n.placementPID, n.gcsPID)
		for _, pid := range pids {
			if pid != nil {
				_ = n.system.Root.StopFuture(pid).Wait()
			}
		}
		n.system.Shutdown()
		if k := n.workers.Reap(workerproto.ExitGrace); k > 0 {
			n.log.Warn("workers were still running after their actors stopped; killed them", slog.String("node", n.id.String()), slog.Int("workers", k))
		}
	}
	if n.nc != nil {
		n.nc.Close()
	}
	if n.nats != nil {
		n.nats.Shutdown()
	}
	var errList []error
	if err := n.gcsLock.Release(); err != nil { // after the server wrote its last
		errList = append(errList, err)
	}
	if n.arena != nil {
		if err := n.arena.Close(); err != nil {
			errList = append(errList, err)
		}
	}
	if n.ownSessionDir {
		if err := os.RemoveAll(n.sessionDir); err != nil {
			errList = append(errList, err)
		}
		if err := n.sessionLock.Release(); err != nil {
			errList = append(errList, err)
		}
	}
	// The spans this node made for jobs exporting elsewhere.
	if err := telemetry.FlushRoutes(ctx); err != nil {
		errList = append(errList, err)
	}
	if n.ownTP != nil {
		if err := n.ownTP.Shutdown(ctx); err != nil {
			errList = append(errList, err)
		}
	}
	return errors.Join(errList...)
}

// ID is the node's id.
func (n *Node) ID() ids.NodeID { return n.id }

// Address is the cluster address to give other nodes and drivers (the
// head's NATS host:port, or the URL a node joined); "" on an embedded
// node.
func (n *Node) Address() string { return n.clusterAddress }

// System is the node's actor system: the driver's owner actor lives there
// too (SpawnNamed).
func (n *Node) System() *actor.ActorSystem { return n.system }

// Store is the object-store actor.
func (n *Node) Store() *actor.PID { return n.storePID }

// Raylet is the raylet actor.
func (n *Node) Raylet() *actor.PID { return n.rayletPID }

// ActorHosts is the registry of the actor hosts this node's raylet runs,
// through which a driver in this process calls its actors directly
// (workerproto.Hosts.Call).
func (n *Node) ActorHosts() *workerproto.Hosts { return n.workers.Hosts() }

// Arena is the node's shared-memory arena, mapped in this process.
func (n *Node) Arena() *objectstore.Arena { return n.arena }

// GCS is the node's GCS client.
func (n *Node) GCS() *gcs.Client { return n.gcsClient }

// Gateway connects the node to its cluster; nil on an embedded node.
func (n *Node) Gateway() *cluster.Gateway { return n.gateway }

// Conn is the node's NATS connection (the control plane).
func (n *Node) Conn() *nats.Conn { return n.nc }

// SessionDir holds the node's spill files (and an embedded node's NATS
// data).
func (n *Node) SessionDir() string { return n.sessionDir }

// StoreClient returns the object-store client of worker w (a goroutine
// worker of this process, or the driver itself): the store accounts pins
// and creations to w, and reclaims them when w dies. Clients are kept per
// worker and forgotten when the raylet reports the worker's death.
func (n *Node) StoreClient(w ids.WorkerID) *objectstore.Client {
	if c, ok := n.workerStores.Load(w); ok {
		return c.(*objectstore.Client)
	}
	c, _ := n.workerStores.LoadOrStore(w, objectstore.NewClient(n.system.Root, n.storePID, n.arena, w))
	return c.(*objectstore.Client)
}

// SpawnNamed spawns an actor of the caller's (the driver's owner) on the
// node's actor system, with the node's fault injector if it has one.
// Stop stops it after the raylet (so no result arrives at a stopped
// actor) and before the store.
func (n *Node) SpawnNamed(props *actor.Props, name string) (*actor.PID, error) {
	n.mu.Lock()
	defer n.mu.Unlock() // spawning does no I/O: it only starts the actor
	if n.stopped {
		return nil, errs.Unavailablef("node %s stopped", n.id.Short())
	}
	pid, err := n.system.Root.SpawnNamed(n.withFaults(props), name)
	if err != nil {
		return nil, err
	}
	n.spawned = append(n.spawned, pid)
	return pid, nil
}

// SubscribeActorEvents sends pid every actor state change the GCS
// publishes (*atollpb.ActorInfo), until UnsubscribeActorEvents(pid) or
// Stop.
func (n *Node) SubscribeActorEvents(pid *actor.PID) error {
	root := n.system.Root
	unsubscribe, err := n.gcsClient.SubscribeActorEvents(func(info *atollpb.ActorInfo) { root.Send(pid, info) })
	if err != nil {
		return fmt.Errorf("atoll: subscribe to actor events: %w", err)
	}
	n.mu.Lock()
	if n.stopped {
		n.mu.Unlock()
		unsubscribe()
		return errs.Unavailablef("node %s stopped", n.id.Short())
	}
	old := n.events[pid.Id]
	n.events[pid.Id] = unsubscribe
	n.mu.Unlock()
	if old != nil {
		old()
	}
	return nil
}

// UnsubscribeActorEvents stops SubscribeActorEvents(pid).
func (n *Node) UnsubscribeActorEvents(pid *actor.PID) {
	n.mu.Lock()
	unsubscribe := n.events[pid.Id]
	delete(n.events, pid.Id)
	n.mu.Unlock()
	if unsubscribe != nil {
		unsubscribe()
	}
}

// withFaults installs the node's fault injector on props, if it has one.
func (n *Node) withFaults(props *actor.Props) *actor.Props {
	if mw := n.faultMiddleware(); mw != nil {
		return props.Clone(actor.WithReceiverMiddleware(mw...))
	}
	return props
}

// faultMiddleware returns the fault injector's middleware, if any.
func (n *Node) faultMiddleware() []actor.ReceiverMiddleware {
	if n.hooks.Faults == nil {
		return nil
	}
	return []actor.ReceiverMiddleware{n.hooks.Faults.ReceiverMiddleware()}
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
