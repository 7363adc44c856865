package runtime

import (
	"context"
	"encoding/hex"
	"sync"
	"sync/atomic"
	"time"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/ids"
	"github.com/atoll-runtime/atoll/internal/raylet"
	"github.com/atoll-runtime/atoll/internal/workerconn"
)

// workerServer runs the tasks and actor calls the raylet pushes, in
// arrival order: one at a time, or for an actor with concurrency, up to
// each concurrency group's limit at once. The raylet may push several
// before the first ends (pipelining); those not started wait in queue,
// where a recall or a cancel can still take them out.
type workerServer struct {
	w    *Worker
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
		s.w.post(b.TaskResult)
	case *atollpb.Frame_ActorEvent:
		s.w.post(b.ActorEvent)
	case *atollpb.Frame_BorrowReport:
		// A borrower's report on objects this process owns: applied in
		// the owner actor's mailbox, after the results before it.
		s.w.post(b.BorrowReport)
	case *atollpb.Frame_CancelTask:
		// A task that has not started is answered at once; a running
		// one sees its context cancelled.
		if p, ok := s.unqueue(b.CancelTask.GetTaskId(), 0, false); ok {
			p.cancel(nil)
			err := &errs.CancelledError{TaskName: p.spec.GetName(), TaskID: hex.EncodeToString(p.spec.GetTaskId())}
			_ = s.conn.Send(&atollpb.Frame{Body: &atollpb.Frame_TaskResult{TaskResult: &atollpb.TaskResult{
				TaskId: p.spec.GetTaskId(), Attempt: p.spec.GetAttempt(), Error: errs.ToProto(err), WorkerId: s.w.workerID.Bytes()}}})
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
			s.w.gens.ack(id, b.GeneratorAck.GetAttempt(), b.GeneratorAck.GetConsumed())
		}
	case *atollpb.Frame_Exit:
		s.w.exit()
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
	w := raylet.Worker{ID: s.w.workerID, NodeID: s.w.nodeID}
	ex := (*executor)(s.w.Runtime)
	for {
		p, ok := s.next()
		if !ok {
			return
		}
		f := p.f
		if spec := f.GetCreateActor(); spec != nil {
			if id, err := ids.FromBytes(spec.GetActorId()); err == nil {
				s.w.hostedActor.Store(&id)
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
	res, panicked := (*executor)(s.w.Runtime).RunActorTask(p.ctx, w, s.instance, p.spec)
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

func (l *workerLink) reportItem(res *atollpb.TaskResult) error {
	// The owner is another process: it adopts the objects the item
	// hands over and references the refs its value holds.
	res.GeneratorItem.FromBorrower = true
	return l.conn.Send(&atollpb.Frame{Body: &atollpb.Frame_TaskResult{TaskResult: res}})
}

func (l *workerLink) generatorAck(m *atollpb.GeneratorAck) {
	_ = l.conn.Send(&atollpb.Frame{Body: &atollpb.Frame_GeneratorAck{GeneratorAck: m}})
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

func (l *workerLink) fetch(ctx context.Context, refs []*atollpb.ObjectRef) error {
	_, err := rayletCall(ctx, l.conn, &atollpb.Frame{Body: &atollpb.Frame_FetchObjects{FetchObjects: &atollpb.FetchObjects{Refs: refs}}})
	return err
}

// frameGCS asks the GCS through the raylet.
type frameGCS struct{ conn *workerconn.Conn }

func (g *frameGCS) do(ctx context.Context, req *atollpb.GcsRequest) (*atollpb.GcsReply, error) {
	r, err := rayletCall(ctx, g.conn, &atollpb.Frame{Body: &atollpb.Frame_GcsRequest{GcsRequest: req}})
	if err != nil {
		return nil, err
	}
	reply := r.GetGcsReply()
	if reply.GetError() != nil {
		return nil, errs.FromProto(reply.Error)
	}
	return reply, nil
}

func (g *frameGCS) RegisterActor(ctx context.Context, info *atollpb.ActorInfo) error {
	_, err := g.do(ctx, &atollpb.GcsRequest{Op: &atollpb.GcsRequest_RegisterActor{RegisterActor: info}})
	return err
}

func (g *frameGCS) GetNamedActor(ctx context.Context, namespace, name string) (*atollpb.ActorInfo, error) {
	r, err := g.do(ctx, &atollpb.GcsRequest{Op: &atollpb.GcsRequest_GetNamedActor{GetNamedActor: &atollpb.GetNamedActor{Name: name, Namespace: namespace}}})
	if err != nil {
		return nil, err
	}
	if len(r.Actors) == 0 {
		return nil, errs.NotFoundf("no actor named %q in namespace %q", name, namespace)
	}
	return r.Actors[0], nil
}

// GetActor asks the GCS for an actor by id through the raylet.
func (g *frameGCS) GetActor(ctx context.Context, actorID []byte) (*atollpb.ActorInfo, error) {
	r, err := g.do(ctx, &atollpb.GcsRequest{Op: &atollpb.GcsRequest_GetActor{GetActor: actorID}})
	if err != nil {
		return nil, err
	}
	if len(r.Actors) == 0 {
		return nil, errs.NotFoundf("no actor %x", actorID)
	}
	return r.Actors[0], nil
}
