package runtime

import (
	"context"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	goruntime "runtime"
	"runtime/pprof"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"go.opentelemetry.io/otel"
	"google.golang.org/protobuf/proto"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/actors"
	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/gcfloor"
	"github.com/atoll-runtime/atoll/internal/ids"
	"github.com/atoll-runtime/atoll/internal/objectstore"
	"github.com/atoll-runtime/atoll/internal/owner"
	"github.com/atoll-runtime/atoll/internal/raylet"
	"github.com/atoll-runtime/atoll/internal/telemetry"
	"github.com/atoll-runtime/atoll/internal/workerconn"
	"github.com/atoll-runtime/atoll/internal/workerproto"
)

// Worker is the runtime of a worker: the user's binary re-executed by its
// raylet to run tasks and host an actor (a worker process), or the same
// runtime on goroutines of the driver's process (an in-process worker,
// inprocess.go). Its Runtime reaches the node over its connection to the
// raylet (workerLink, an objectstore.Client over frames, frameGCS),
// whichever transport that is; the connection's server
// (workerproto.Server) runs what the raylet pushes with the executor
// (executor.go). It owns the refs its tasks create, and borrows those
// their owners lend them (borrow.go).
type Worker struct {
	*Runtime
	srv    *workerproto.Server
	client workerproto.Client
	// inProcess: the worker runs in a process with other runtimes (the
	// driver's): ending it ends the runtime, not the process.
	inProcess bool
	// done is closed when the runtime ended (an in-process worker).
	done    chan struct{}
	endOnce sync.Once

	// decoded and borrowSeq serve the borrower protocol (borrow.go).
	decoded   decodedRefs
	borrowSeq atomic.Uint64
	// borrowFlushPosted: a flushBorrows waits in the owner actor's
	// mailbox; borrowFlushTimer: a forced flush is armed. hostedActor is
	// the actor this process hosts, if any: its standalone reports name
	// it (owners key an actor's borrows by the actor).
	borrowFlushPosted atomic.Bool
	borrowFlushTimer  atomic.Bool
	hostedActor       atomic.Pointer[ids.ActorID]
	// tasksRunning counts the tasks running in this process: while any
	// runs, drops wait for its end's flush (one report per lender for a
	// task that drops many refs).
	tasksRunning atomic.Int32

	exitOnce sync.Once
	// procs sizes a worker process's Go scheduler to the CPUs its task
	// or actor holds (procs.go); nil in an in-process worker. actorCPU
	// is the CPUs of the actor it hosts (math.Float64bits).
	procs    *procs
	actorCPU atomic.Uint64
	// profileStop ends the CPU profile EnvWorkerCPUProfile started, if
	// any: exit calls it so that a worker asked to exit still writes its
	// profile.
	profileStop func()
}

var _ role = (*Worker)(nil)

// serveWorker turns this process into a worker and never returns: it
// exits when the raylet closes the connection or asks it to.
func serveWorker(s Settings) {
	wc, err := workerFromEnv()
	if err != nil {
		fmt.Fprintf(os.Stderr, "atoll worker: %v\n", err)
		os.Exit(3)
	}
	telemetry.SetIdentity(telemetry.Identity{Role: telemetry.RoleWorker, NodeID: wc.NodeID.String(), WorkerID: wc.WorkerID.String()})
	w, err := NewWorker(s, wc)
	if err != nil {
		fmt.Fprintf(os.Stderr, "atoll worker: %v\n", err)
		os.Exit(3)
	}
	process.mu.Lock()
	install(w.Runtime)
	process.mu.Unlock()
	w.profileStop = profileWorker(w.log)
	startHeapFloor(w.log)
	w.procs = newProcs()
	w.Serve()
	w.exit()
}

// startHeapFloor gives the collector the floor the raylet passed
// (EnvHeapFloor; package gcfloor), unless the environment sets GOGC or
// GOMEMLIMIT: the user's own policy.
func startHeapFloor(log *slog.Logger) {
	floor, err := strconv.ParseUint(os.Getenv(raylet.EnvHeapFloor), 10, 64)
	switch {
	case err != nil || floor == 0:
		return
	case os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "":
		log.Debug("heap floor off: GOGC or GOMEMLIMIT set", "floor", floor)
		return
	}
	gcfloor.Start(floor) // for the life of the process
}

// WorkerConfig is what a worker runtime is given by its raylet: its
// identity, its mapping of the node's arena and its connection to the
// raylet.
type WorkerConfig struct {
	WorkerID ids.WorkerID
	NodeID   ids.NodeID
	Arena    *objectstore.Arena
	// Conn is the worker's end of its connection: a socket pair's (a
	// worker process) or an in-memory pipe's (an in-process worker).
	Conn workerconn.Endpoint
	// Binary is the program that runs the job's tasks, hashed for the
	// tasks the worker submits (default this process's).
	Binary string
	// InProcess: the worker shares its process with other runtimes (the
	// driver's, on goroutines of the driver's process). When it ends, it
	// ends its runtime, not the process, and leaves the process's
	// telemetry (its span routes, its identity) alone.
	InProcess bool
}

// workerFromEnv is what a worker process's raylet passed it: its ids in
// the environment (raylet.EnvWorkerID and the rest), the arena and the
// connection as inherited file descriptors.
func workerFromEnv() (WorkerConfig, error) {
	workerID, err := ids.FromBytes(unhex(os.Getenv(raylet.EnvWorkerID)))
	if err != nil {
		return WorkerConfig{}, fmt.Errorf("%s: %w", raylet.EnvWorkerID, err)
	}
	nodeID, _ := ids.FromBytes(unhex(os.Getenv(raylet.EnvNodeID)))
	size, err := strconv.ParseUint(os.Getenv(raylet.EnvArenaSize), 10, 64)
	if err != nil {
		return WorkerConfig{}, fmt.Errorf("%s: %w", raylet.EnvArenaSize, err)
	}
	arena, err := objectstore.OpenArena(os.NewFile(raylet.ArenaFD, "atoll-arena"), size)
	if err != nil {
		return WorkerConfig{}, err
	}
	nc, err := net.FileConn(os.NewFile(raylet.ConnFD, "atoll-raylet"))
	if err != nil {
		return WorkerConfig{}, fmt.Errorf("raylet connection: %w", err)
	}
	return WorkerConfig{WorkerID: workerID, NodeID: nodeID, Arena: arena, Conn: workerconn.Socket(nc)}, nil
}

// NewWorker builds a worker runtime over its connection to the raylet:
// its connection reader starts at once (frames wait for Serve), its task
// loop with Serve. It does not make itself the process's current
// runtime.
func NewWorker(s Settings, wc WorkerConfig) (*Worker, error) {
	rt := newRuntime(s, wc.NodeID, wc.WorkerID)
	w := &Worker{Runtime: rt, profileStop: func() {}, inProcess: wc.InProcess, done: make(chan struct{})}
	rt.role = w
	rt.workerBinary = wc.Binary
	if rt.workerBinary == "" {
		rt.workerBinary, _ = os.Executable()
	}
	// The binary is hashed when the process first submits a task (its
	// node may forward it to a node that checks it). Nil if the file
	// cannot be read: nodes with a worker binary of their own still run
	// the task, the others refuse it.
	rt.hashBinary = func() []byte {
		if sum, err := raylet.HashFile(rt.workerBinary); err == nil {
			return sum[:]
		}
		return nil
	}
	rt.log = s.Logger
	if rt.log == nil {
		rt.log = slog.Default()
	}
	rt.log = slog.New(telemetry.NewLogHandler(rt.log.Handler())).With("component", "atoll-worker", "worker", wc.WorkerID.Short())
	tp := s.TracerProvider
	if tp == nil {
		if own, err := telemetry.ProviderFromEnv(context.Background()); err == nil && own != nil {
			rt.ownTP, tp = own, own
		} else {
			tp = otel.GetTracerProvider()
		}
	}
	rt.tracer, rt.traceAll = telemetry.Tracer(tp), telemetry.Records(tp)
	rt.system = actors.NewSystem(rt.log)
	rt.startOwner(owner.Config{Worker: wc.WorkerID, Node: wc.NodeID, Group: watchGroup})
	rt.owner.dropsDue = w.postBorrowFlush
	var err error
	if rt.ownerPID, err = rt.system.Root.SpawnNamed(actor.PropsFromProducer(func() actor.Actor {
		return &workerOwnerActor{ownerActor: ownerActor{rt: rt}, w: w}
	}), "owner"); err != nil {
		return nil, err
	}
	w.srv = workerproto.NewServer(wc.Conn, workerproto.ServerConfig{
		WorkerID: wc.WorkerID,
		Executor: w,
		Deliver:  func(m proto.Message) { rt.post(m) },
		GeneratorAck: func(m *atollpb.GeneratorAck) {
			if id, err := ids.FromBytes(m.GetTaskId()); err == nil {
				rt.gens.ack(id, m.GetAttempt(), m.GetConsumed(), m.GetReceived())
			}
		},
		HostsActor: func(id ids.ActorID) { w.hostedActor.Store(&id) },
		Exit:       w.exit,
	})
	if wc.InProcess {
		scope.shared.Add(1) // decode.go; until end
	}
	w.client = w.srv.Client()
	rt.link = &workerLink{Client: w.client}
	rt.store = objectstore.NewTransportClient(objectstore.NewFrameTransport(w.srv.Conn()), wc.Arena, wc.WorkerID)
	rt.frees = storeFreer{rt.store}
	rt.gcs = &frameGCS{client: w.client}
	return w, nil
}

// Serve registers the worker with its raylet and runs the tasks and the
// actor the raylet sends it until the connection ends (which ends the
// worker: exit).
func (w *Worker) Serve() { w.srv.Serve(os.Getpid()) }

// workerOwnerActor is a worker process's owner actor: it also sends the
// borrow reports due (flushBorrows).
type workerOwnerActor struct {
	ownerActor
	w *Worker
}

func (a *workerOwnerActor) Receive(ctx actor.Context) {
	if m, ok := ctx.Message().(*flushBorrows); ok {
		a.w.flushBorrows(m)
		return
	}
	a.ownerActor.Receive(ctx)
}

// taskStarted is called as the worker starts running spec: the refs the
// task's owner lent with it are registered as borrowed; at the task's end
// reportBorrows is given them, and its result reports those still held
// (borrow.go).
func (w *Worker) taskStarted(spec *atollpb.TaskSpec) (lent []ids.ObjectID) {
	w.tasksRunning.Add(1) // until reportBorrows
	return w.lend(spec)
}

// argsReleased is called once a task's argument views are released:
// views the task dropped unpin soon.
func (w *Worker) argsReleased() { w.viewsAfterTask() }

// handOver is called with the refs the encoding of a task's outputs (its
// returns, or one of a generator's items) took, and whether encoding them
// failed: the objects this worker created that they hold refs to go to
// the task's owner, returned to be sent with the result (the references
// the encoding took are dropped either way).
func (w *Worker) handOver(spec *atollpb.TaskSpec, refs []ids.ObjectID, failed bool) ([]*atollpb.ReturnObject, error) {
	if failed {
		w.owner.dropRef(refs...)
		return nil, nil
	}
	return w.exportRefs(spec, refs)
}

// refDecoded implements role: a ref decoded in a task is dropped at the
// task's end if it did not escape (borrow.go).
func (w *Worker) refDecoded(h *Ref) {
	if w.sim != nil {
		return // tracked as it was made (newRef), swept at the task's end
	}
	w.decoded.add(h)
}

// driver implements role: a worker has none.
func (w *Worker) driver(op string) (*Driver, error) {
	return nil, errs.Invalidf("%s: call it from the driver, not in a task or an actor", op)
}

// stop implements role: a task of this worker called Shutdown. The
// worker goes on serving tasks; the runtime refuses calls from now on.
func (w *Worker) stop(ctx context.Context) error {
	w.closed.Store(true)
	w.stopOwner()
	return w.shutdownTracing(ctx)
}

// workerFlushTimeout bounds the export of a worker process's last spans
// when it exits (within workerproto.ExitGrace, after which its raylet
// kills it).
const workerFlushTimeout = 2 * time.Second

// exit ends the worker: the raylet asked it to exit or its connection
// ended (workerproto.ServerConfig.Exit; the contexts of its tasks are
// cancelled already). A worker process exports the spans it still holds
// first (those of the jobs it ran, to each job's collector, and its own)
// and exits. An in-process worker ends its runtime only (end).
func (w *Worker) exit() {
	if w.inProcess {
		w.end()
		return
	}
	w.exitOnce.Do(func() {
		w.profileStop()
		ctx, cancel := context.WithTimeout(context.Background(), workerFlushTimeout)
		defer cancel()
		_ = telemetry.ShutdownRoutes(ctx)
		_ = w.shutdownTracing(ctx)
		os.Exit(0)
	})
	select {} // another goroutine is exiting the process
}

// EnvWorkerCPUProfile names a directory: each worker process writes a CPU
// profile there (atoll.EnvWorkerCPUProfile); EnvWorkerCPUProfileSeconds
// is how many seconds it covers (default 10). EnvWorkerMemProfile names a
// directory each worker process writes its allocation profile to when it
// exits (atoll.EnvWorkerMemProfile), sampled every
// EnvWorkerMemProfileRate bytes allocated.
const (
	EnvWorkerCPUProfile        = "ATOLL_WORKER_CPUPROFILE"
	EnvWorkerCPUProfileSeconds = "ATOLL_WORKER_CPUPROFILE_SECONDS"
	EnvWorkerMemProfile        = "ATOLL_WORKER_MEMPROFILE"
	EnvWorkerMemProfileRate    = "ATOLL_WORKER_MEMPROFILE_RATE"
)

// profileWorker starts the profiles EnvWorkerCPUProfile and
// EnvWorkerMemProfile ask for and returns what ends them: the CPU
// profile stops (if its seconds have not passed) and the allocation
// profile is written.
func profileWorker(log *slog.Logger) (stop func()) {
	cpu := profileWorkerCPU(log)
	mem := profileWorkerMem(log)
	return func() {
		cpu()
		mem()
	}
}

// profileWorkerMem sets the allocation profile's rate EnvWorkerMemProfile
// asks for and returns what writes the profile (worker-PID.allocs).
func profileWorkerMem(log *slog.Logger) (write func()) {
	dir := os.Getenv(EnvWorkerMemProfile)
	if dir == "" {
		return func() {}
	}
	if rate, err := strconv.Atoi(os.Getenv(EnvWorkerMemProfileRate)); err == nil && rate > 0 {
		goruntime.MemProfileRate = rate
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			goruntime.GC() // the profile counts what the last cycle saw
			f, err := os.Create(filepath.Join(dir, fmt.Sprintf("worker-%d.allocs", os.Getpid())))
			if err == nil {
				err = pprof.Lookup("allocs").WriteTo(f, 0)
				if cerr := f.Close(); err == nil {
					err = cerr
				}
			}
			if err != nil {
				log.Warn("worker allocation profile not written", "err", err)
			}
		})
	}
}

// profileWorkerCPU starts the CPU profile EnvWorkerCPUProfile asks for
// and returns what stops it.
func profileWorkerCPU(log *slog.Logger) (stop func()) {
	dir := os.Getenv(EnvWorkerCPUProfile)
	if dir == "" {
		return func() {}
	}
	f, err := os.Create(filepath.Join(dir, fmt.Sprintf("worker-%d.prof", os.Getpid())))
	if err == nil {
		err = pprof.StartCPUProfile(f)
	}
	if err != nil {
		log.Warn("worker CPU profile not started", "err", err)
		return func() {}
	}
	var once sync.Once
	stop = func() {
		once.Do(func() {
			pprof.StopCPUProfile()
			_ = f.Close()
		})
	}
	secs, err := strconv.Atoi(os.Getenv(EnvWorkerCPUProfileSeconds))
	if err != nil || secs <= 0 {
		secs = 10
	}
	time.AfterFunc(time.Duration(secs)*time.Second, stop)
	return stop
}

func unhex(s string) []byte {
	b, _ := hex.DecodeString(s)
	return b
}
