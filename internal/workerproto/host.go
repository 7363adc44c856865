package workerproto

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
	"github.com/atoll-runtime/atoll/internal/raylet"
)

// hostState is the part of an actor host that survives its restarts: its
// core and the incarnation count.
type hostState struct {
	// mu guards core: the host actor steps it, and so does the
	// connection reader when a result arrives (Finish). It is a leaf:
	// effects are applied after it is released.
	mu   sync.Mutex
	core *HostCore
	gen  uint64
}

// step runs f on the core under its lock and returns its effects.
func (s *hostState) step(f func(*HostCore) []HostEffect) []HostEffect {
	s.mu.Lock()
	defer s.mu.Unlock()
	return f(s.core)
}

// Messages of the host to itself.
type (
	// created is the constructor's answer for incarnation gen.
	created struct {
		gen uint64
		err error
	}
	// callDone: a call of incarnation gen finished, its result went to
	// its caller, and calls wait for its place (PumpDue).
	callDone struct{ gen uint64 }
	// crashedResult is a result that says its method panicked.
	crashedResult struct {
		gen uint64
		res *atollpb.TaskResult
	}
	// gapTick is the core's gap timer going off.
	gapTick struct{}
)

// actorHost hosts one actor in a worker of its own: the shell of a
// HostCore. Calls arrive in its mailbox (atollpb.PushTask, sent by their
// callers); the core orders them and says when each goes to the worker.
// A call's result goes from the connection's reader straight to its
// caller; the host only hears that it may send the next. The actor never
// blocks on its worker: the hello and the constructor's answer come back
// as messages, so while the constructor runs the host still forwards to
// it the results of the tasks and calls it makes. When the worker dies
// or a method panics, the core settles the calls in flight and the host
// panics, so the raylet's supervisor strategy restarts it — a new
// worker, the constructor again — or stops it when the actor's restarts
// are spent.
type actorHost struct {
	id     ids.ActorID
	spec   *atollpb.TaskSpec
	worker raylet.Worker
	cfg    *raylet.ProcessConfig
	raylet *actor.PID
	proxy  proxy
	state  *hostState
	p      *incarnation
	gen    uint64
	// created is when the constructor was sent (the timeline's start).
	created time.Time
	// deliver gives a result to its caller (see raylet.deliver).
	deliver func(caller *actor.PID, res *atollpb.TaskResult)
}

func (h *actorHost) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		h.start(ctx)
	case *helloResult:
		if m.gen == h.gen {
			h.hello(ctx, m.err)
		}
	case *created:
		if m.gen == h.gen {
			h.constructed(ctx, m.err)
		}
	case *atollpb.PushTask:
		call := &Call{Spec: m.Spec, Caller: ctx.Sender()}
		h.apply(ctx, h.state.step(func(c *HostCore) []HostEffect { return c.Arrive(time.Now(), call) }))
	case *gapTick:
		h.apply(ctx, h.state.step(func(c *HostCore) []HostEffect { return c.Tick(time.Now()) }))
	case *callDone:
		if m.gen == h.gen {
			h.apply(ctx, h.state.step(func(c *HostCore) []HostEffect { return c.Pump(time.Now()) }))
		}
	case *crashedResult:
		if m.gen == h.gen {
			h.panicked(ctx, m.res)
		}
	case *procFrame:
		// Nothing else of the worker's frames is the host's.
	case *processExited:
		if m.gen == h.gen {
			h.crash(ctx, exitReason(m))
		}
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
			// The dead worker's pins and unsealed objects go with it; the
			// next incarnation reuses the worker id.
			ctx.Send(h.cfg.Store, &atollpb.ClientDisconnected{ClientId: h.worker.ID.Bytes()})
		}
	default:
		if h.p != nil {
			forwardDown(h.p.conn, m)
		}
	}
}

// start launches a new incarnation of the actor's worker; its hello and
// then the constructor's answer come back as messages.
func (h *actorHost) start(ctx actor.Context) {
	h.state.mu.Lock()
	h.state.gen++
	h.gen = h.state.gen
	h.state.mu.Unlock()
	system, self, state, gen, deliver, killAt, rayletPID, worker := ctx.ActorSystem(), ctx.Self(), h.state, h.gen, h.deliver, h.cfg.KillAt, h.raylet, h.worker.ID
	var proc atomic.Pointer[incarnation]
	// A call's result goes from the connection reader to its caller; the
	// host only hears that it may send the next call. A crash report
	// goes to the host (it fails the calls and restarts the actor). A
	// kill-worker fault at AfterExecute kills the worker instead: its
	// end fails the call.
	onResult := func(res *atollpb.TaskResult) {
		if res.GeneratorItem != nil {
			return // actor methods are not generators: not a call's result
		}
		if killAt != nil && !res.ActorCrashed {
			state.mu.Lock()
			c := state.core.Peek(gen, res)
			state.mu.Unlock()
			if c != nil && killAt(raylet.AfterExecute, c.Spec) {
				proc.Load().kill()
				return
			}
		}
		if res.ActorCrashed {
			system.Root.Send(self, &crashedResult{gen: gen, res: res})
			return
		}
		for _, e := range state.step(func(c *HostCore) []HostEffect { return c.Finish(gen, res) }) {
			switch e := e.(type) {
			case Reply:
				deliver(e.Call.Caller.(*actor.PID), res)
				system.Root.Send(rayletPID, callEvent(e.Call, worker, res.GetError() != nil))
			case PumpDue:
				system.Root.Send(self, &callDone{gen: gen})
			}
		}
	}
	spec := h.spec
	p, err := launch(system, self, gen, h.cfg, &h.proxy, h.worker.ID, h.worker.NodeID, onResult, func() *atollpb.TaskSpec { return spec })
	proc.Store(p)
	if err != nil {
		h.started(ctx, err)
		return
	}
	h.p = p
	p.awaitHello(system, self, gen, h.cfg.StartTimeout)
}

// hello: the worker registered (or did not); the constructor is sent.
// Its answer comes back as a message (created): the constructor has no
// deadline, and while it runs the host keeps serving — the results of
// the tasks and calls the constructor makes come back through it.
func (h *actorHost) hello(ctx actor.Context, err error) {
	if err != nil {
		h.started(ctx, err)
		return
	}
	system, self, gen, conn := ctx.ActorSystem(), ctx.Self(), h.gen, h.p.conn
	h.created = time.Now()
	go func() {
		// It ends when the worker answers or its connection ends.
		reply, err := conn.Call(context.Background(), &atollpb.Frame{Body: &atollpb.Frame_CreateActor{CreateActor: h.spec}})
		if err == nil && reply.GetStatus().GetCode() != atollpb.ErrorCode_ERROR_CODE_UNSPECIFIED {
			err = errs.FromProto(reply.GetStatus())
		}
		system.Root.Send(self, &created{gen: gen, err: err})
	}()
}

// constructed: the constructor ran; calls go out if it succeeded.
func (h *actorHost) constructed(ctx actor.Context, err error) {
	ctx.Send(h.raylet, &raylet.AddTimelineEvent{Event: raylet.TaskEvent{TaskID: taskIDOf(h.spec), Name: h.spec.Name,
		Worker: h.worker.ID, Start: h.created, End: time.Now(), Failed: err != nil, Kind: raylet.EventActorCreation}})
	h.started(ctx, err)
	if err != nil {
		return
	}
	gen := h.gen
	h.apply(ctx, h.state.step(func(c *HostCore) []HostEffect { return c.Ready(time.Now(), gen) }))
}

// started tells the raylet the constructor's outcome; on an error it
// records the cause and stops the host.
func (h *actorHost) started(ctx actor.Context, err error) {
	ctx.Send(h.raylet, &raylet.ActorStarted{ID: h.id, Err: err})
}

// apply performs the core's effects, on the host's goroutine.
func (h *actorHost) apply(ctx actor.Context, effects []HostEffect) {
	var frames []*atollpb.Frame
	killed := false
	for _, e := range effects {
		switch e := e.(type) {
		case Send:
			if killed {
				continue // in flight: the worker's end settles it
			}
			if h.cfg.KillAt != nil && h.cfg.KillAt(raylet.BeforeExecute, e.Call.Spec) {
				h.p.kill() // its end fails the call (in flight) and restarts the actor
				killed = true
				continue
			}
			frames = append(frames, &atollpb.Frame{Body: &atollpb.Frame_PushTask{PushTask: &atollpb.PushTask{Spec: e.Call.Spec}}})
		case Reply:
			h.deliver(e.Call.Caller.(*actor.PID), e.Result)
			ctx.Send(h.raylet, callEvent(e.Call, h.worker.ID, e.Result.GetError() != nil || e.Result.ActorCrashed))
		case Fail:
			died := &errs.ActorDiedError{ActorID: h.id.String(), Name: h.spec.GetActorCreation().GetName(), Message: e.Reason}
			h.deliver(e.Call.Caller.(*actor.PID), &atollpb.TaskResult{TaskId: e.Call.Spec.TaskId, Attempt: e.Call.Spec.Attempt,
				Error: errs.ToProto(died), ActorCrashed: true})
		case Drop:
			ctx.Logger().Warn("actor host: dropped a call delivered twice", "actor", h.id.Short(), "task", e.Call.Spec.GetName(),
				"seq", e.Call.Spec.GetSequenceNumber())
		case SkipGap:
			ctx.Logger().Warn("actor host: calls missing from a caller's sequence; starting the later ones", "actor", h.id.Short(),
				"missing_from", e.From, "missing_to", e.To)
		case ArmTimer:
			system, self := ctx.ActorSystem(), ctx.Self()
			time.AfterFunc(e.After, func() { system.Root.Send(self, &gapTick{}) })
		case PumpDue:
			// Only Finish says so, and the host's own Finish (a panicked
			// call) is followed by Crash: nothing to send.
		}
	}
	if len(frames) > 0 && h.p != nil {
		_ = h.p.conn.SendAll(frames...)
	}
}

// panicked handles a result that says its method panicked: the call is
// answered with it, the calls in flight settled, and the host panics to
// be restarted.
func (h *actorHost) panicked(ctx actor.Context, res *atollpb.TaskResult) {
	gen := h.gen
	msg := res.GetError().GetMessage()
	fx := h.state.step(func(c *HostCore) []HostEffect {
		return append(c.Finish(gen, res), c.Crash("an earlier call's method panicked: "+msg, false)...)
	})
	h.apply(ctx, fx)
	panic(fmt.Sprintf("actor %s: method %s panicked: %s", h.id.Short(), res.GetError().GetTaskName(), msg))
}

// crash settles the calls in flight of a worker that is gone and hands
// the host to its supervisor.
func (h *actorHost) crash(ctx actor.Context, reason string) {
	h.apply(ctx, h.state.step(func(c *HostCore) []HostEffect {
		return c.Crash("the actor's worker died while running this call: "+reason, true)
	}))
	panic(fmt.Sprintf("actor %s: %s", h.id.Short(), reason))
}

func taskIDOf(spec *atollpb.TaskSpec) ids.TaskID {
	id, _ := ids.FromBytes(spec.GetTaskId())
	return id
}

// callEvent is the timeline's record of an actor call that finished.
func callEvent(c *Call, worker ids.WorkerID, failed bool) *raylet.AddTimelineEvent {
	return &raylet.AddTimelineEvent{Event: raylet.TaskEvent{TaskID: taskIDOf(c.Spec), Name: c.Spec.Name, Worker: worker, Start: c.Sent, End: time.Now(),
		Failed: failed, Kind: raylet.EventActorCall}}
}
