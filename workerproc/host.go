package workerproc

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/ids"
	"github.com/atoll-runtime/atoll/raylet"
)

// hostState is the part of a process actor host that survives its
// restarts: the process generation and the calls not yet answered.
type hostState struct {
	gen   uint64
	queue []*queuedCall // calls waiting for the process, in arrival order

	// mu guards busy, which the process connection's reader takes when
	// the call's result arrives (it delivers the result to the caller
	// itself, then tells the host with callDone).
	mu   sync.Mutex
	busy *queuedCall // the call the process is running
}

// takeBusy takes the running call if res answers it (any call when res is
// nil).
func (s *hostState) takeBusy(res *atollpb.TaskResult) *queuedCall {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.busy
	if c == nil || res != nil && (string(c.spec.TaskId) != string(res.GetTaskId()) || c.spec.Attempt != res.GetAttempt()) {
		return nil
	}
	s.busy = nil
	return c
}

// peekBusy returns the running call if res answers it, leaving it busy.
func (s *hostState) peekBusy(res *atollpb.TaskResult) *queuedCall {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.busy
	if c == nil || string(c.spec.TaskId) != string(res.GetTaskId()) || c.spec.Attempt != res.GetAttempt() {
		return nil
	}
	return c
}

func (s *hostState) setBusy(c *queuedCall) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.busy != nil {
		return false
	}
	s.busy = c
	return true
}

// callDone tells a host that its process's call finished and its result
// went to the caller.
type callDone struct{ gen uint64 }

type queuedCall struct {
	caller *actor.PID
	spec   *atollpb.TaskSpec
	sent   time.Time // when it went to the process (the timeline's start)
}

// actorHost hosts one actor in a worker process of its own. Calls are
// queued here and sent to the process one at a time, so a crash loses
// only the call that was running: the rest run on the restarted actor.
// When the process dies or a method panics, the host fails the running
// call (the caller may retry it) and panics, so the raylet's supervisor
// strategy restarts it — a new process, the constructor again — or stops
// it when the actor's restarts are spent.
type actorHost struct {
	id     ids.ActorID
	spec   *atollpb.TaskSpec
	worker raylet.Worker
	cfg    *raylet.ProcessConfig
	raylet *actor.PID
	proxy  proxy
	state  *hostState
	p      *workerProcess
	gen    uint64
	ready  bool
	// deliver gives a result to its caller (see raylet.deliver).
	deliver func(caller *actor.PID, res *atollpb.TaskResult)
}

func (h *actorHost) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		h.start(ctx)
	case *atollpb.PushTask:
		h.state.queue = append(h.state.queue, &queuedCall{caller: ctx.Sender(), spec: m.Spec})
		h.pump()
	case *procFrame:
		if m.gen != h.gen {
			return
		}
		if res := m.frame.GetTaskResult(); res != nil {
			h.finished(ctx, res)
		}
	case *callDone:
		if m.gen == h.gen {
			h.pump()
		}
	case *processExited:
		if m.gen != h.gen {
			return
		}
		h.crash(ctx, exitReason(m.err))
	case *raylet.CrashActor:
		h.p.kill() // processExited follows and restarts the actor
	case *actor.Restarting, *actor.Stopping:
		if h.p != nil {
			if _, stopping := m.(*actor.Stopping); stopping {
				h.p.stop() // exits on its own first: its spans are exported
			} else {
				h.p.kill()
			}
			h.p.conn.Close()
			// The dead process's pins and unsealed objects go with it; the
			// next process reuses the worker id.
			ctx.Send(h.cfg.Store, &atollpb.ClientDisconnected{ClientId: h.worker.ID.Bytes()})
		}
	default:
		if h.p != nil {
			forwardDown(h.p.conn, m)
		}
	}
}

// start launches a process and runs the constructor in it; on failure the
// raylet records the cause and stops the host.
func (h *actorHost) start(ctx actor.Context) {
	h.state.gen++
	h.gen = h.state.gen
	system, self, state, gen, deliver, killAt, rayletPID, worker := ctx.ActorSystem(), ctx.Self(), h.state, h.gen, h.deliver, h.cfg.KillAt, h.raylet, h.worker.ID
	var proc atomic.Pointer[workerProcess]
	// A call's result goes from the connection reader to its caller; the
	// host only hears that it may send the next call. A crash report
	// stays with the host (it fails the call and restarts the actor). A
	// kill-worker fault at AfterExecute kills the process instead: its
	// exit fails the call.
	onResult := func(res *atollpb.TaskResult) {
		if c := state.peekBusy(res); c != nil && killAt != nil && !res.ActorCrashed && killAt(raylet.AfterExecute, c.spec) {
			proc.Load().kill()
			return
		}
		if res.ActorCrashed {
			system.Root.Send(self, &procFrame{gen: gen, frame: &atollpb.Frame{Body: &atollpb.Frame_TaskResult{TaskResult: res}}})
			return
		}
		if c := state.takeBusy(res); c != nil {
			system.Root.Send(self, &callDone{gen: gen})
			deliver(c.caller, res)
			system.Root.Send(rayletPID, callEvent(c, worker, res.GetError() != nil))
		}
	}
	p, err := startProcess(ctx.ActorSystem(), ctx.Self(), h.gen, h.cfg, &h.proxy, h.worker.ID, h.worker.NodeID, onResult)
	if err == nil {
		h.p = p
		proc.Store(p)
		err = p.waitHello(h.cfg.StartTimeout)
	}
	created := time.Now()
	if err == nil {
		var reply *atollpb.Frame
		cctx, cancel := context.WithTimeout(context.Background(), h.cfg.StartTimeout)
		reply, err = p.conn.Call(cctx, &atollpb.Frame{Body: &atollpb.Frame_CreateActor{CreateActor: h.spec}})
		cancel()
		if err == nil && reply.GetStatus().GetCode() != atollpb.ErrorCode_ERROR_CODE_UNSPECIFIED {
			err = errs.FromProto(reply.GetStatus())
		}
	}
	ctx.Send(h.raylet, &raylet.ActorStarted{ID: h.id, Err: err})
	ctx.Send(h.raylet, &raylet.AddTimelineEvent{Event: raylet.TaskEvent{TaskID: taskIDOf(h.spec), Name: h.spec.Name,
		Worker: h.worker.ID, Start: created, End: time.Now(), Failed: err != nil, Kind: raylet.EventActorCreation}})
	if err != nil {
		return
	}
	h.ready = true
	// A call that was running when the previous process died was failed;
	// the queue runs on.
	h.state.takeBusy(nil)
	h.pump()
}

func (h *actorHost) pump() {
	if !h.ready || len(h.state.queue) == 0 || !h.state.setBusy(h.state.queue[0]) {
		return
	}
	c := h.state.queue[0]
	h.state.queue = h.state.queue[1:]
	if h.cfg.KillAt != nil && h.cfg.KillAt(raylet.BeforeExecute, c.spec) {
		h.p.kill() // its exit fails the call (busy) and restarts the actor
		return
	}
	c.sent = time.Now()
	_ = h.p.conn.Send(&atollpb.Frame{Body: &atollpb.Frame_PushTask{PushTask: &atollpb.PushTask{Spec: c.spec}}})
}

func taskIDOf(spec *atollpb.TaskSpec) ids.TaskID {
	id, _ := ids.FromBytes(spec.GetTaskId())
	return id
}

// callEvent is the timeline's record of an actor call that finished.
func callEvent(c *queuedCall, worker ids.WorkerID, failed bool) *raylet.AddTimelineEvent {
	return &raylet.AddTimelineEvent{Event: raylet.TaskEvent{TaskID: taskIDOf(c.spec), Name: c.spec.Name, Worker: worker, Start: c.sent, End: time.Now(),
		Failed: failed, Kind: raylet.EventActorCall}}
}

// finished handles a result the reader left to the host: a crashed call.
func (h *actorHost) finished(ctx actor.Context, res *atollpb.TaskResult) {
	c := h.state.takeBusy(res)
	if c == nil {
		return
	}
	h.deliver(c.caller, res)
	ctx.Send(h.raylet, callEvent(c, h.worker.ID, res.GetError() != nil || res.ActorCrashed))
	if res.ActorCrashed {
		panic(fmt.Sprintf("actor %s: method %s panicked: %s", h.id.Short(), c.spec.Function, res.GetError().GetMessage()))
	}
	h.pump()
}

// crash fails the running call and hands the host to its supervisor.
func (h *actorHost) crash(ctx actor.Context, reason string) {
	h.ready = false
	if c := h.state.takeBusy(nil); c != nil {
		died := &errs.ActorDiedError{ActorID: h.id.String(), Name: h.spec.GetActorCreation().GetName(),
			Message: "the actor's worker process died while running this call: " + reason}
		ctx.Send(c.caller, &atollpb.TaskResult{TaskId: c.spec.TaskId, Attempt: c.spec.Attempt, Error: errs.ToProto(died), ActorCrashed: true})
	}
	panic(fmt.Sprintf("actor %s: %s", h.id.Short(), reason))
}
