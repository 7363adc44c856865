package runtime

import (
	"context"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"go.opentelemetry.io/otel"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/actors"
	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/ids"
	"github.com/atoll-runtime/atoll/internal/objectstore"
	"github.com/atoll-runtime/atoll/internal/owner"
	"github.com/atoll-runtime/atoll/internal/raylet"
	"github.com/atoll-runtime/atoll/internal/telemetry"
	"github.com/atoll-runtime/atoll/internal/workerconn"
)

// Worker is the runtime of a worker process: the user's binary
// re-executed by its raylet to run tasks and host an actor. Its Runtime
// reaches the node over the connection to the raylet (workerLink, an
// objectstore.Client over frames, frameGCS); it owns the refs its tasks
// create, and borrows those their owners lend them (borrow.go).
type Worker struct {
	*Runtime
	srv *workerServer

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
	w.Serve()
	w.exit()
}

// WorkerConfig is what a worker runtime is given by its raylet: its
// identity, its mapping of the node's arena and its connection to the
// raylet.
type WorkerConfig struct {
	WorkerID ids.WorkerID
	NodeID   ids.NodeID
	Arena    *objectstore.Arena
	Conn     net.Conn
	// Binary is the program that runs the job's tasks, hashed for the
	// tasks the worker submits (default this process's).
	Binary string
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
	return WorkerConfig{WorkerID: workerID, NodeID: nodeID, Arena: arena, Conn: nc}, nil
}

// NewWorker builds a worker runtime over its connection to the raylet:
// its connection reader starts at once, its task loop with Serve. It
// does not make itself the process's current runtime.
func NewWorker(s Settings, wc WorkerConfig) (*Worker, error) {
	rt := newRuntime(s, wc.NodeID, wc.WorkerID)
	w := &Worker{Runtime: rt, profileStop: func() {}}
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
	rt.tracer = telemetry.Tracer(tp)
	rt.system = actors.NewSystem(rt.log)
	rt.startOwner(owner.Config{Worker: wc.WorkerID, Node: wc.NodeID})
	rt.owner.dropsDue = w.postBorrowFlush
	var err error
	if rt.ownerPID, err = rt.system.Root.SpawnNamed(actor.PropsFromProducer(func() actor.Actor {
		return &workerOwnerActor{ownerActor: ownerActor{rt: rt}, w: w}
	}), "owner"); err != nil {
		return nil, err
	}
	// The connection starts reading at once: everything its handler
	// touches must exist first.
	srv := &workerServer{w: w, wake: make(chan struct{}, 1), running: map[ids.TaskID]context.CancelCauseFunc{}}
	ready := make(chan struct{})
	srv.conn = workerconn.New(wc.Conn, func(f *atollpb.Frame) { <-ready; srv.handle(f) })
	w.srv = srv
	rt.link = &workerLink{conn: srv.conn}
	rt.store = objectstore.NewTransportClient(objectstore.NewFrameTransport(srv.conn), wc.Arena, wc.WorkerID)
	rt.frees = storeFreer{rt.store}
	rt.gcs = &frameGCS{conn: srv.conn}
	close(ready)
	return w, nil
}

// Serve registers the worker with its raylet and runs the tasks and the
// actor the raylet sends it until the connection ends.
func (w *Worker) Serve() {
	_ = w.srv.conn.Send(&atollpb.Frame{Body: &atollpb.Frame_Hello{Hello: &atollpb.WorkerHello{WorkerId: w.workerID.Bytes(), Pid: int32(os.Getpid())}}})
	w.srv.loop()
}

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

// storeFor implements role: the process's one store client.
func (w *Worker) storeFor(ids.WorkerID) storeAPI { return w.store }

// taskStarted implements role: the refs the task's owner lent with it
// are registered as borrowed; at the task's end its result reports those
// still held (borrow.go).
func (w *Worker) taskStarted(spec *atollpb.TaskSpec) func(*atollpb.TaskResult) {
	w.tasksRunning.Add(1) // until reportBorrows
	lent := w.lend(spec)
	return func(res *atollpb.TaskResult) { w.reportBorrows(spec, lent, res) }
}

// argsReleased implements role: views the task dropped unpin soon.
func (w *Worker) argsReleased() { w.viewsAfterTask() }

// handOver implements role: the objects this process created that the
// task's outputs hold refs to go to the task's owner (the references the
// encoding took are dropped either way).
func (w *Worker) handOver(spec *atollpb.TaskSpec, refs []ids.ObjectID, failed bool) ([]*atollpb.ReturnObject, error) {
	if failed {
		w.owner.dropRef(refs...)
		return nil, nil
	}
	return w.exportRefs(spec, refs)
}

// refDecoded implements role: a ref decoded in a task is dropped at the
// task's end if it did not escape (borrow.go).
func (w *Worker) refDecoded(h *Ref) { w.decoded.add(h) }

// driver implements role: a worker process has none.
func (w *Worker) driver(op string) (*Driver, error) {
	return nil, errs.Invalidf("%s: call it from the driver, not in a task or an actor", op)
}

// stop implements role: a task in this process called Shutdown. The
// process goes on serving tasks; the runtime refuses calls from now on.
func (w *Worker) stop(ctx context.Context) error {
	w.closed.Store(true)
	w.stopOwner()
	return w.shutdownTracing(ctx)
}

// workerFlushTimeout bounds the export of a worker process's last spans
// when it exits (within workerproc.ExitGrace, after which its raylet
// kills it).
const workerFlushTimeout = 2 * time.Second

// exit ends the worker process: the raylet asked it to exit or closed
// its connection. The spans it still holds are exported first: those of
// the jobs it ran (to each job's collector) and its own.
func (w *Worker) exit() {
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
// is how many seconds it covers (default 10).
const (
	EnvWorkerCPUProfile        = "ATOLL_WORKER_CPUPROFILE"
	EnvWorkerCPUProfileSeconds = "ATOLL_WORKER_CPUPROFILE_SECONDS"
)

// profileWorker starts the CPU profile EnvWorkerCPUProfile asks for and
// returns what stops it.
func profileWorker(log *slog.Logger) (stop func()) {
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
