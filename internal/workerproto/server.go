package workerproto

import (
	"context"
	"encoding/hex"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/ids"
	"github.com/atoll-runtime/atoll/internal/workerconn"
)

// Executor runs a worker's user code (the worker runtime implements it).
type Executor interface {
	// RunTask runs one attempt of a normal task and returns its result.
	// It should return promptly once ctx is cancelled.
	RunTask(ctx context.Context, spec *atollpb.TaskSpec) *atollpb.TaskResult
	// NewActor runs an actor's constructor.
	NewActor(ctx context.Context, spec *atollpb.TaskSpec) (instance any, err error)
	// RunActorTask runs one method call on instance; panicked: the method
	// panicked (no later call runs on the instance).
	RunActorTask(ctx context.Context, instance any, spec *atollpb.TaskSpec) (res *atollpb.TaskResult, panicked bool)
}

// ServerConfig is what a worker's Server serves with.
type ServerConfig struct {
	// WorkerID is the worker's id (in its hello and its results).
	WorkerID ids.WorkerID
	// Executor runs the tasks, the constructor and the calls.
	Executor Executor
	// Deliver receives what the node sends the worker's own owner: the
	// results of tasks and calls it submitted (*atollpb.TaskResult),
	// actor events (*atollpb.ActorInfo) and borrowers' reports on the
	// objects it owns (*atollpb.BorrowReport). It runs on the
	// connection's reader: it must not block.
	Deliver func(proto.Message)
	// GeneratorAck passes an owner's ack to the generator attempt it
	// names, running here; on the reader, it must not block.
	GeneratorAck func(*atollpb.GeneratorAck)
	// HostsActor, if set, is told the actor this worker hosts before
	// its constructor runs.
	HostsActor func(ids.ActorID)
	// Exit is called once when the worker must end: its raylet asked (a
	// WorkerExit frame) or the connection ended. The contexts of the
	// tasks it runs are cancelled first. A process exits; an in-process
	// worker ends its runtime (its goroutines still running user code
	// run on with cancelled contexts, and what they send is dropped).
	Exit func()
}

// ErrWorkerStopped is the cause of the contexts of the tasks a worker
// runs when it ends (its raylet stopped or killed it).
var ErrWorkerStopped = errors.New("atoll: the worker running this task stopped")

// Server is the worker's end of the protocol: it queues the tasks and
// actor calls its raylet pushes and runs them in arrival order — one at
// a time, or for an actor with concurrency, up to each concurrency
// group's limit at once (groups.go). The raylet may push several before
// the first ends (pipelining); those not started wait in the queue,
// where a recall or a cancel can still take them out. Client sends the
// worker's own requests over the same connection.
//
// A task (or a call of an actor without concurrency) that arrives while
// nothing runs and nothing is queued runs on the connection's reader, the
// goroutine that read it, with no hand-off to the task loop; its result
// is deferred and written at the end of the burst of frames the reader
// read (WithBurstEnd), with the results of the others of the burst. So
// that the reader is never held by it, the task runs as yielding work
// (workerconn.Conn.Yielding): if it runs past InlineFor, or waits for a
// reply on the connection (its own store or GCS requests), another
// goroutine becomes the reader and the frames behind it are queued for
// the task loop, which starts them once it ends.
type Server struct {
	cfg    ServerConfig
	conn   *workerconn.Conn
	ready  chan struct{} // closed by Serve: frames wait for it
	wake   chan struct{} // a frame was queued
	exited sync.Once
	// runMu is held while a task or call runs on the task loop or
	// inline, so that they run one at a time and in order.
	runMu sync.Mutex
	// inlineFrame wraps an inline task's result for Defer, which encodes
	// it before it returns: one frame for them all (runMu).
	inlineFrame atollpb.Frame
	inlineBody  atollpb.Frame_TaskResult
	// watchdog hands the reading over when an inline task runs past
	// InlineFor: armed when one starts and none is armed (not once per
	// task), it looks at inlineSince (when the inline task running
	// began, zero when none runs) when it fires and arms itself again
	// for the rest while a task runs inline.
	watchdog    *time.Timer
	armed       atomic.Bool
	inlineSince atomic.Int64

	mu       sync.Mutex
	queue    []pushed // pushed and not started, in arrival order
	running  map[ids.TaskID]TaskContext
	instance any         // the actor this worker hosts, if any (set under mu)
	groups   *callGroups // its concurrency groups, if it runs calls concurrently (set under mu)
	// broken is set once a method panicked: the host restarts the actor
	// in a new worker, and the calls pushed after it must not run on
	// the broken instance (the host sends them again to the new one).
	broken atomic.Bool
	// deferred counts the results deferred since the last flush
	// (flushEvery)
	deferred atomic.Int32
}

// pushed is a frame for the task loop; a task comes with its context,
// whose cancel is registered in running as the frame arrives (a cancel
// frame may follow it before the loop takes it).
type pushed struct {
	f    *atollpb.Frame
	spec *atollpb.TaskSpec
	ctx  TaskContext
}

// InlineFor is how long a task runs on the connection's reader before
// another goroutine takes the reading over; the result of one that ran
// past flushAfter is written at once rather than with its burst's.
const (
	InlineFor  = time.Millisecond
	flushAfter = 50 * time.Microsecond
	// flushEvery is the results of short actor calls a burst writes at
	// once: half the default pipeline depth
	flushEvery = 8
)

// NewServer opens the worker's end of its connection. Frames that arrive
// wait until Serve.
func NewServer(end workerconn.Endpoint, cfg ServerConfig) *Server {
	s := &Server{cfg: cfg, ready: make(chan struct{}), wake: make(chan struct{}, 1), running: map[ids.TaskID]TaskContext{}}
	s.watchdog = time.AfterFunc(time.Hour, s.watch)
	s.watchdog.Stop()
	s.conn = workerconn.Open(end, func(f *atollpb.Frame) { <-s.ready; s.handle(f) },
		workerconn.WithBurstEnd(func() { s.deferred.Store(0); s.conn.TryFlush() }))
	go func() {
		<-s.conn.Done()
		s.exit()
	}()
	return s
}

// Conn is the worker's connection (its store client's transport).
func (s *Server) Conn() *workerconn.Conn { return s.conn }

// Client sends the worker's own requests to its raylet.
func (s *Server) Client() Client { return Client{conn: s.conn} }

// Serve registers the worker with its raylet (hello, with pid, the
// process id) and runs the tasks and the actor it sends until the
// connection ends. The connection's end calls Exit without waiting for
// Serve: a task that ignores its cancelled context holds Serve, not the
// worker's end.
func (s *Server) Serve(pid int) {
	close(s.ready)
	_ = s.Client().Hello(s.cfg.WorkerID, pid)
	s.loop()
	s.mu.Lock()
	groups := s.groups
	s.mu.Unlock()
	if groups != nil {
		groups.close()
	}
}

// exit cancels every task and calls Exit, once.
func (s *Server) exit() {
	s.exited.Do(func() {
		s.mu.Lock()
		running := make([]TaskContext, 0, len(s.running))
		for _, ctx := range s.running {
			running = append(running, ctx)
		}
		s.mu.Unlock()
		for _, ctx := range running {
			ctx.Cancel(ErrWorkerStopped)
		}
		if s.cfg.Exit != nil {
			s.cfg.Exit()
		}
	})
}

// handle receives frames on the connection's reader goroutine.
func (s *Server) handle(f *atollpb.Frame) {
	switch b := f.Body.(type) {
	case *atollpb.Frame_CreateActor:
		if _, err := ids.FromBytes(b.CreateActor.GetTaskId()); err != nil {
			_ = s.conn.Reply(f.Id, &atollpb.Frame{Body: &atollpb.Frame_Status{Status: errs.ToProto(errs.Invalidf("create_actor without a task id"))}})
			return
		}
		s.enqueue(pushed{f: f})
	case *atollpb.Frame_PushTask:
		spec := b.PushTask.GetSpec()
		id, err := ids.FromBytes(spec.GetTaskId())
		if err != nil {
			return // not a task: nobody waits for its result
		}
		ctx := s.taskContext(spec)
		s.mu.Lock()
		s.running[id] = ctx
		s.mu.Unlock()
		p := pushed{f: f, spec: spec, ctx: ctx}
		if !s.inline(p) {
			s.enqueue(p)
		}
	case *atollpb.Frame_RecallTask:
		p, ok := s.unqueue(b.RecallTask.GetTaskId(), b.RecallTask.GetAttempt(), true)
		if ok {
			p.ctx.Cancel(nil)
		}
		_ = s.conn.Reply(f.Id, &atollpb.Frame{Body: &atollpb.Frame_RecallReply{RecallReply: &atollpb.RecallReply{Recalled: ok}}})
	case *atollpb.Frame_TaskResult:
		s.deliver(b.TaskResult)
	case *atollpb.Frame_ActorEvent:
		s.deliver(b.ActorEvent)
	case *atollpb.Frame_BorrowReport:
		// A borrower's report on objects this worker owns: applied in
		// its owner's mailbox, after the results before it.
		s.deliver(b.BorrowReport)
	case *atollpb.Frame_CancelTask:
		// A task that has not started is answered at once; a running
		// one sees its context cancelled.
		if p, ok := s.unqueue(b.CancelTask.GetTaskId(), 0, false); ok {
			p.ctx.Cancel(nil)
			err := &errs.CancelledError{TaskName: p.spec.GetName(), TaskID: hex.EncodeToString(p.spec.GetTaskId())}
			_ = s.conn.Send(&atollpb.Frame{Body: &atollpb.Frame_TaskResult{TaskResult: &atollpb.TaskResult{
				TaskId: p.spec.GetTaskId(), Attempt: p.spec.GetAttempt(), Error: errs.ToProto(err), WorkerId: s.cfg.WorkerID.Bytes()}}})
			return
		}
		id, err := ids.FromBytes(b.CancelTask.GetTaskId())
		if err != nil {
			return
		}
		s.mu.Lock()
		ctx := s.running[id]
		s.mu.Unlock()
		if ctx != nil {
			ctx.Cancel(errs.CancelCause(b.CancelTask.GetNonRecursive()))
		}
	case *atollpb.Frame_GeneratorAck:
		if s.cfg.GeneratorAck != nil {
			s.cfg.GeneratorAck(b.GeneratorAck)
		}
	case *atollpb.Frame_Exit:
		s.exit()
	}
}

func (s *Server) deliver(m proto.Message) {
	if s.cfg.Deliver != nil {
		s.cfg.Deliver(m)
	}
}

func (s *Server) enqueue(p pushed) {
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
func (s *Server) unqueue(taskID []byte, attempt int32, byAttempt bool) (pushed, bool) {
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

// pop takes the first queued frame, if any.
func (s *Server) pop() (pushed, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.queue) == 0 {
		return pushed{}, false
	}
	p := s.queue[0]
	s.queue[0] = pushed{}
	s.queue = s.queue[1:]
	return p, true
}

// loop runs the queued frames in order, holding runMu while it takes and
// runs one (a task the reader runs inline holds it too), until the
// connection ends.
func (s *Server) loop() {
	for {
		s.runMu.Lock()
		p, ok := s.pop()
		if ok {
			s.run(p)
			s.runMu.Unlock()
			continue
		}
		s.runMu.Unlock()
		select {
		case <-s.wake:
		case <-s.conn.Done():
			return
		}
	}
}

// run runs one queued frame on the task loop (runMu is held).
func (s *Server) run(p pushed) {
	if spec := p.f.GetCreateActor(); spec != nil {
		s.construct(p.f.Id, spec)
		return
	}
	if p.spec.GetType() == atollpb.TaskType_ACTOR_TASK {
		s.mu.Lock()
		instance, groups := s.instance, s.groups
		s.mu.Unlock()
		switch {
		case instance == nil:
			s.finish(p, s.failed(p.spec, errs.Invalidf("actor call %s: this worker hosts no actor", p.spec.GetName())))
		case groups != nil:
			if err := groups.route(p); err != nil {
				s.finish(p, s.failed(p.spec, err))
			}
		case p.spec.GetConcurrencyGroup() != "":
			s.finish(p, s.failed(p.spec, errs.Invalidf("actor call %s: the actor has no concurrency group %q", p.spec.GetName(), p.spec.GetConcurrencyGroup())))
		default:
			s.runCall(p)
		}
		return
	}
	s.finish(p, s.cfg.Executor.RunTask(p.ctx, p.spec))
}

// inline runs p on the reader, if nothing runs or waits before it and it
// is a task or a call of an actor without concurrency, and reports
// whether it did. Its result is deferred to the burst's end.
func (s *Server) inline(p pushed) bool {
	if !s.runMu.TryLock() {
		return false
	}
	s.mu.Lock()
	ok := len(s.queue) == 0
	call := p.spec.GetType() == atollpb.TaskType_ACTOR_TASK
	instance := s.instance
	if call {
		ok = ok && instance != nil && s.groups == nil && p.spec.GetConcurrencyGroup() == "" && !s.broken.Load()
	}
	s.mu.Unlock()
	if !ok {
		s.runMu.Unlock()
		return false
	}
	done := s.conn.Yielding()
	start := time.Now()
	s.inlineSince.Store(start.UnixNano())
	if !s.armed.Swap(true) {
		s.watchdog.Reset(InlineFor)
	}
	var res *atollpb.TaskResult
	if call {
		var panicked bool
		res, panicked = s.cfg.Executor.RunActorTask(p.ctx, instance, p.spec)
		if panicked {
			s.broken.Store(true)
		}
	} else {
		res = s.cfg.Executor.RunTask(p.ctx, p.spec)
	}
	s.inlineSince.Store(0)
	done()
	s.forget(p)
	s.inlineBody.TaskResult = res
	s.inlineFrame.Body = &s.inlineBody
	_ = s.conn.Defer(&s.inlineFrame)
	s.inlineBody.TaskResult = nil
	switch {
	case time.Since(start) > flushAfter:
		s.deferred.Store(0)
		s.conn.TryFlush() // not a short task: its result does not wait for the burst's others
	case call && s.deferred.Add(1) >= flushEvery:
		// a long burst of calls' results go back a part at a time, so
		// that the caller refills the actor's window while this worker
		// runs the rest (flushed at the burst's end only, the window
		// empties before the caller hears of any result, and each side
		// waits for the other in turn). Tasks keep to the burst's end:
		// they run on a lease per worker, and the driver's CPU, not a
		// worker's idling, bounds them; more writes cost it.
		s.deferred.Store(0)
		s.conn.TryFlush()
	}
	s.runMu.Unlock()
	s.mu.Lock()
	more := len(s.queue) > 0
	s.mu.Unlock()
	if more { // frames queued behind it (another reader took over)
		select {
		case s.wake <- struct{}{}:
		default:
		}
	}
	return true
}

// watch is the watchdog going off: the task running inline since before
// InlineFor ago gives the reading up; one that started since is watched
// again for the rest of its InlineFor.
func (s *Server) watch() {
	s.armed.Store(false)
	since := s.inlineSince.Load()
	if since == 0 {
		return
	}
	ran := time.Duration(time.Now().UnixNano() - since)
	if ran >= InlineFor {
		s.conn.Handoff()
		return
	}
	if !s.armed.Swap(true) {
		s.watchdog.Reset(InlineFor - ran)
	}
}

// forget drops a finished task's cancel.
func (s *Server) forget(p pushed) {
	s.mu.Lock()
	if id, err := ids.FromBytes(p.spec.GetTaskId()); err == nil {
		delete(s.running, id)
	}
	s.mu.Unlock()
	p.ctx.Cancel(nil)
}

// construct runs the actor's constructor and answers the host. A worker
// hosts one actor, constructed once.
func (s *Server) construct(req uint64, spec *atollpb.TaskSpec) {
	s.mu.Lock()
	hosting := s.instance != nil
	s.mu.Unlock()
	if hosting {
		_ = s.conn.Reply(req, &atollpb.Frame{Body: &atollpb.Frame_Status{Status: errs.ToProto(errs.Invalidf("this worker hosts an actor already"))}})
		return
	}
	if id, err := ids.FromBytes(spec.GetActorId()); err == nil && s.cfg.HostsActor != nil {
		s.cfg.HostsActor(id)
	}
	ctx := s.taskContext(spec)
	if id, err := ids.FromBytes(spec.GetTaskId()); err == nil {
		s.mu.Lock()
		s.running[id] = ctx
		s.mu.Unlock()
		defer func() {
			s.mu.Lock()
			delete(s.running, id)
			s.mu.Unlock()
		}()
	}
	inst, err := s.cfg.Executor.NewActor(ctx, spec)
	ctx.Cancel(nil)
	var groups *callGroups
	if err == nil {
		groups = newCallGroups(spec.GetActorCreation(), s.runCall)
	}
	s.mu.Lock()
	s.instance, s.groups = inst, groups
	s.mu.Unlock()
	_ = s.conn.Reply(req, &atollpb.Frame{Body: &atollpb.Frame_Status{Status: errs.ToProto(err)}})
}

// runCall runs one actor call, unless an earlier one panicked.
func (s *Server) runCall(p pushed) {
	if s.broken.Load() {
		p.ctx.Cancel(nil)
		return
	}
	s.mu.Lock()
	instance := s.instance
	s.mu.Unlock()
	res, panicked := s.cfg.Executor.RunActorTask(p.ctx, instance, p.spec)
	if panicked {
		s.broken.Store(true)
	}
	s.finish(p, res)
}

// finish forgets a task's cancel and sends its result: at once when
// nothing else is queued (the caller may wait for it), else queued for
// the connection's flusher, so that the results of pipelined tasks
// leave a few to a write while the next ones run.
func (s *Server) finish(p pushed, res *atollpb.TaskResult) {
	s.mu.Lock()
	if id, err := ids.FromBytes(p.spec.GetTaskId()); err == nil {
		delete(s.running, id)
	}
	more := len(s.queue) > 0
	s.mu.Unlock()
	p.ctx.Cancel(nil)
	f := &atollpb.Frame{Body: &atollpb.Frame_TaskResult{TaskResult: res}}
	if more {
		_ = s.conn.Queue(f)
		return
	}
	_ = s.conn.Send(f)
}

// failed is the result of a task that fails before it runs.
func (s *Server) failed(spec *atollpb.TaskSpec, err error) *atollpb.TaskResult {
	e := errs.ToProto(err)
	if e.TaskName == "" {
		e.TaskName = spec.Name
	}
	if len(e.TaskId) == 0 {
		e.TaskId = spec.TaskId
	}
	return &atollpb.TaskResult{TaskId: spec.TaskId, Attempt: spec.Attempt, Error: e, WorkerId: s.cfg.WorkerID.Bytes()}
}
