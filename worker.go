package atoll

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
	"github.com/atoll-runtime/atoll/internal/nodeconfig"
	"github.com/atoll-runtime/atoll/internal/objectstore"
	"github.com/atoll-runtime/atoll/internal/owner"
	"github.com/atoll-runtime/atoll/internal/raylet"
	"github.com/atoll-runtime/atoll/internal/telemetry"
	"github.com/atoll-runtime/atoll/internal/workerconn"
)

// IsWorker reports whether atoll started this process to serve: a worker
// process (the raylet re-executed your binary to run tasks) or a cluster
// node started through nodeconfig.EnvNode (internal/testcluster runs test binaries
// as nodes). In such a process Init serves and never returns, so call
// Init at the top of main, before any work it should not repeat; use
// IsWorker to skip setup that only the driver needs (a TestMain, for
// instance).
func IsWorker() bool {
	return os.Getenv(raylet.EnvWorker) == "1" || os.Getenv(nodeconfig.EnvNode) != ""
}

// serveWorker turns this process into a worker and never returns: it
// exits when the raylet closes the connection or asks it to.
func serveWorker(cfg config) {
	rt, srv, err := newWorkerCore(cfg)
	if err != nil {
		fmt.Fprintf(os.Stderr, "atoll worker: %v\n", err)
		os.Exit(3)
	}
	current_.Store(rt)
	workerProfileStop = profileWorker(rt.log)
	_ = srv.conn.Send(&atollpb.Frame{Body: &atollpb.Frame_Hello{Hello: &atollpb.WorkerHello{WorkerId: rt.workerID.Bytes(), Pid: int32(os.Getpid())}}})
	srv.loop()
	rt.exitWorker()
}

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

func newWorkerCore(cfg config) (*core, *workerServer, error) {
	workerID, err := ids.FromBytes(unhex(os.Getenv(raylet.EnvWorkerID)))
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", raylet.EnvWorkerID, err)
	}
	nodeID, _ := ids.FromBytes(unhex(os.Getenv(raylet.EnvNodeID)))
	size, err := strconv.ParseUint(os.Getenv(raylet.EnvArenaSize), 10, 64)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", raylet.EnvArenaSize, err)
	}
	arena, err := objectstore.OpenArena(os.NewFile(raylet.ArenaFD, "atoll-arena"), size)
	if err != nil {
		return nil, nil, err
	}
	nc, err := net.FileConn(os.NewFile(raylet.ConnFD, "atoll-raylet"))
	if err != nil {
		return nil, nil, fmt.Errorf("raylet connection: %w", err)
	}
	if cfg.inlineThreshold == 0 {
		cfg.inlineThreshold = DefaultInlineThreshold
	}
	if cfg.namespace == "" {
		cfg.namespace = "default"
	}
	rt := &core{cfg: cfg, nodeID: nodeID, workerID: workerID, jobID: ids.NewJobID(), putTask: ids.NewTaskID(), arena: arena, isWorker: true}
	rt.workerBinary, _ = os.Executable()
	rt.log = cfg.node.Logger
	if rt.log == nil {
		rt.log = slog.Default()
	}
	rt.log = slog.New(telemetry.NewLogHandler(rt.log.Handler())).With("component", "atoll-worker", "worker", workerID.Short())
	telemetry.SetIdentity(telemetry.Identity{Role: telemetry.RoleWorker, NodeID: nodeID.String(), WorkerID: workerID.String()})
	tp := cfg.node.TracerProvider
	if tp == nil {
		if own, err := telemetry.ProviderFromEnv(context.Background()); err == nil && own != nil {
			rt.ownTP, tp = own, own
		} else {
			tp = otel.GetTracerProvider()
		}
	}
	rt.tracer = telemetry.Tracer(tp)
	rt.system = actors.NewSystem(rt.log)
	rt.owner = newOwnerShell(owner.Config{Worker: workerID, Node: nodeID}, rt.applyOwnerEffect)
	rt.owner.dropsDue = rt.postBorrowFlush
	if rt.ownerPID, err = rt.system.Root.SpawnNamed(actor.PropsFromProducer(func() actor.Actor { return &ownerActor{rt: rt} }), "owner"); err != nil {
		return nil, nil, err
	}
	// The connection starts reading at once: everything its handler
	// touches must exist first.
	srv := &workerServer{rt: rt, wake: make(chan struct{}, 1), running: map[ids.TaskID]context.CancelCauseFunc{}}
	ready := make(chan struct{})
	srv.conn = workerconn.New(nc, func(f *atollpb.Frame) { <-ready; srv.handle(f) })
	rt.link = &workerLink{conn: srv.conn}
	rt.store = objectstore.NewTransportClient(objectstore.NewFrameTransport(srv.conn), arena, workerID)
	rt.gcs = &frameGCS{conn: srv.conn}
	close(ready)
	return rt, srv, nil
}

// workerServer runs the tasks and actor calls the raylet pushes, in
// arrival order: one at a time, or for an actor with concurrency, up to
// each concurrency group's limit at once. The raylet may push several
// before the first ends (pipelining); those not started wait in queue,
// where a recall or a cancel can still take them out.
type workerServer struct {
	rt   *core
	conn *workerconn.Conn
	wake chan struct{} // a frame was queued

	mu       sync.Mutex
	queue    []pushed // pushed and not started, in arrival order
	running  map[ids.TaskID]context.CancelCauseFunc
	instance any         // the actor this worker hosts, if any
	groups   *callGroups // its concurrency groups, if it runs calls concurrently
	// broken is set once a method panicked: the host restarts the actor
	// in a new process, and the calls pushed after it must not run on
	// the broken instance (the host sends them again to the new one).
	broken atomic.Bool
}

// pushed is a frame for the task loop; a task comes with its context,
// whose cancel is registered in running as the frame arrives (a cancel
// frame may follow it before the loop takes it).
type pushed struct {
	f      *atollpb.Frame
	spec   *atollpb.TaskSpec
	ctx    context.Context
	cancel context.CancelCauseFunc
}

// handle receives frames on the connection's reader goroutine.
func (s *workerServer) handle(f *atollpb.Frame) {
	switch b := f.Body.(type) {
	case *atollpb.Frame_CreateActor:
		s.enqueue(pushed{f: f})
	case *atollpb.Frame_PushTask:
		spec := b.PushTask.GetSpec()
		ctx, cancel := context.WithCancelCause(context.Background())
		if id, err := ids.FromBytes(spec.GetTaskId()); err == nil {
			s.mu.Lock()
			s.running[id] = cancel
			s.mu.Unlock()
		}
		s.enqueue(pushed{f: f, spec: spec, ctx: ctx, cancel: cancel})
	case *atollpb.Frame_RecallTask:
		p, ok := s.unqueue(b.RecallTask.GetTaskId(), b.RecallTask.GetAttempt(), true)
		if ok {
			p.cancel(nil)
		}
		_ = s.conn.Reply(f.Id, &atollpb.Frame{Body: &atollpb.Frame_RecallReply{RecallReply: &atollpb.RecallReply{Recalled: ok}}})
	case *atollpb.Frame_TaskResult:
		s.rt.system.Root.Send(s.rt.ownerPID, b.TaskResult)
	case *atollpb.Frame_ActorEvent:
		s.rt.system.Root.Send(s.rt.ownerPID, b.ActorEvent)
	case *atollpb.Frame_BorrowReport:
		// A borrower's report on objects this process owns: applied in
		// the owner actor's mailbox, after the results before it.
		s.rt.system.Root.Send(s.rt.ownerPID, b.BorrowReport)
	case *atollpb.Frame_CancelTask:
		// A task that has not started is answered at once; a running
		// one sees its context cancelled.
		if p, ok := s.unqueue(b.CancelTask.GetTaskId(), 0, false); ok {
			p.cancel(nil)
			err := &errs.CancelledError{TaskName: p.spec.GetName(), TaskID: hex.EncodeToString(p.spec.GetTaskId())}
			_ = s.conn.Send(&atollpb.Frame{Body: &atollpb.Frame_TaskResult{TaskResult: &atollpb.TaskResult{
				TaskId: p.spec.GetTaskId(), Attempt: p.spec.GetAttempt(), Error: errs.ToProto(err), WorkerId: s.rt.workerID.Bytes()}}})
			return
		}
		s.mu.Lock()
		cancel := s.running[ids.MustFromBytes(b.CancelTask.TaskId)]
		s.mu.Unlock()
		if cancel != nil {
			cancel(errs.CancelCause(b.CancelTask.GetNonRecursive()))
		}
	case *atollpb.Frame_GeneratorAck:
		if id, err := ids.FromBytes(b.GeneratorAck.GetTaskId()); err == nil {
			runningGens.ack(id, b.GeneratorAck.GetAttempt(), b.GeneratorAck.GetConsumed())
		}
	case *atollpb.Frame_Exit:
		s.rt.exitWorker()
	}
}

func (s *workerServer) enqueue(p pushed) {
	s.mu.Lock()
	s.queue = append(s.queue, p)
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// unqueue takes a task that has not started out of the queue (of the
// given attempt, if byAttempt), and forgets its cancel.
func (s *workerServer) unqueue(taskID []byte, attempt int32, byAttempt bool) (pushed, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, p := range s.queue {
		if p.spec != nil && p.spec.GetType() != atollpb.TaskType_ACTOR_TASK && string(p.spec.GetTaskId()) == string(taskID) &&
			(!byAttempt || p.spec.GetAttempt() == attempt) {
			s.queue = append(s.queue[:i], s.queue[i+1:]...)
			if id, err := ids.FromBytes(taskID); err == nil {
				delete(s.running, id)
			}
			return p, true
		}
	}
	return pushed{}, false
}

// next takes the first queued frame, waiting for one; false once the
// connection ended.
func (s *workerServer) next() (pushed, bool) {
	for {
		s.mu.Lock()
		if len(s.queue) > 0 {
			p := s.queue[0]
			s.queue[0] = pushed{}
			s.queue = s.queue[1:]
			s.mu.Unlock()
			return p, true
		}
		s.mu.Unlock()
		select {
		case <-s.wake:
		case <-s.conn.Done():
			return pushed{}, false
		}
	}
}

func (s *workerServer) loop() {
	w := raylet.Worker{ID: s.rt.workerID, NodeID: s.rt.nodeID}
	ex := (*executor)(s.rt)
	for {
		p, ok := s.next()
		if !ok {
			return
		}
		f := p.f
		if spec := f.GetCreateActor(); spec != nil {
			if id, err := ids.FromBytes(spec.GetActorId()); err == nil {
				s.rt.hostedActor.Store(&id)
			}
			inst, err := ex.NewActor(context.Background(), w, spec)
			s.instance = inst
			if err == nil {
				s.groups = newCallGroups(spec.GetActorCreation(), func(p pushed) { s.runCall(w, p) })
			}
			_ = s.conn.Reply(f.Id, &atollpb.Frame{Body: &atollpb.Frame_Status{Status: errs.ToProto(err)}})
			continue
		}
		if p.spec.Type == atollpb.TaskType_ACTOR_TASK {
			switch {
			case s.groups != nil:
				if err := s.groups.route(p); err != nil {
					s.finish(p, failed(p.spec, w, err))
				}
			case p.spec.GetConcurrencyGroup() != "":
				s.finish(p, failed(p.spec, w, errs.Invalidf("actor call %s: the actor has no concurrency group %q", p.spec.GetName(), p.spec.GetConcurrencyGroup())))
			default:
				s.runCall(w, p)
			}
			continue
		}
		s.finish(p, ex.RunTask(p.ctx, w, p.spec))
	}
}

// runCall runs one actor call, unless an earlier one panicked.
func (s *workerServer) runCall(w raylet.Worker, p pushed) {
	if s.broken.Load() {
		p.cancel(nil)
		return
	}
	res, panicked := (*executor)(s.rt).RunActorTask(p.ctx, w, s.instance, p.spec)
	if panicked {
		s.broken.Store(true)
	}
	s.finish(p, res)
}

// finish forgets a task's cancel and sends its result.
func (s *workerServer) finish(p pushed, res *atollpb.TaskResult) {
	if id, err := ids.FromBytes(p.spec.GetTaskId()); err == nil {
		s.mu.Lock()
		delete(s.running, id)
		s.mu.Unlock()
	}
	p.cancel(nil)
	_ = s.conn.Send(&atollpb.Frame{Body: &atollpb.Frame_TaskResult{TaskResult: res}})
}

// workerLink reaches the raylet over the worker's connection.
type workerLink struct{ conn *workerconn.Conn }

func (l *workerLink) submitTask(spec *atollpb.TaskSpec) {
	_ = l.conn.Send(&atollpb.Frame{Body: &atollpb.Frame_SubmitTask{SubmitTask: &atollpb.SubmitTask{Spec: spec}}})
}

func (l *workerLink) cancelTask(id ids.TaskID, nonRecursive bool) {
	_ = l.conn.Send(&atollpb.Frame{Body: &atollpb.Frame_CancelTask{CancelTask: &atollpb.CancelTask{TaskId: id.Bytes(), NonRecursive: nonRecursive}}})
}

func (l *workerLink) setBlocked(id ids.TaskID, blocked bool) {
	if blocked {
		_ = l.conn.Send(&atollpb.Frame{Body: &atollpb.Frame_WorkerBlocked{WorkerBlocked: &atollpb.WorkerBlocked{TaskId: id.Bytes()}}})
	} else {
		_ = l.conn.Send(&atollpb.Frame{Body: &atollpb.Frame_WorkerUnblocked{WorkerUnblocked: &atollpb.WorkerUnblocked{TaskId: id.Bytes()}}})
	}
}

func (l *workerLink) callActor(address string, spec *atollpb.TaskSpec) {
	_ = l.conn.Send(&atollpb.Frame{Body: &atollpb.Frame_ActorCall{ActorCall: &atollpb.ActorCall{Address: address, Spec: spec}}})
}

func (l *workerLink) sendBorrows(m *atollpb.BorrowReport) {
	_ = l.conn.Send(&atollpb.Frame{Body: &atollpb.Frame_BorrowReport{BorrowReport: m}})
}

func (l *workerLink) killActor(m *atollpb.KillActor) {
	_ = l.conn.Send(&atollpb.Frame{Body: &atollpb.Frame_KillActor{KillActor: m}})
}

func (l *workerLink) killWorker(m *atollpb.KillWorker) {
	_ = l.conn.Send(&atollpb.Frame{Body: &atollpb.Frame_KillWorker{KillWorker: m}})
}

// callTimeout bounds a request to the raylet that has no deadline of its
// own.
const callTimeout = 2 * time.Minute

func rayletCall(ctx context.Context, conn *workerconn.Conn, f *atollpb.Frame) (*atollpb.Frame, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, callTimeout)
		defer cancel()
	}
	r, err := conn.Call(ctx, f)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, errs.Unavailablef("raylet connection: %v", err)
	}
	if st := r.GetStatus(); st != nil && st.Code != atollpb.ErrorCode_ERROR_CODE_UNSPECIFIED {
		return nil, errs.FromProto(st)
	}
	return r, nil
}

func unhex(s string) []byte {
	b, _ := hex.DecodeString(s)
	return b
}

func (l *workerLink) fetch(ctx context.Context, refs []*atollpb.ObjectRef) error {
	_, err := rayletCall(ctx, l.conn, &atollpb.Frame{Body: &atollpb.Frame_FetchObjects{FetchObjects: &atollpb.FetchObjects{Refs: refs}}})
	return err
}
