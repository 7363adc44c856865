package workerproto

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/ids"
	"github.com/atoll-runtime/atoll/internal/raylet"
	"github.com/atoll-runtime/atoll/internal/slab"
	"github.com/atoll-runtime/atoll/internal/workerconn"
)

// hostState is the part of an actor host that survives its restarts: its
// core and the incarnation count, and what a caller in this process needs
// to write its calls straight to the actor's worker (Hosts.Call).
type hostState struct {
	// mu guards core, gen, conn, kill, events, stopped and refused: the host actor steps
	// the core, and so do callers in this process (Arrive) and the
	// connection's reader when a result arrives (Finish, Pump). The calls
	// a step sends are appended to the connection's buffer under mu (so
	// that they leave in the order the core sent them, whoever stepped
	// it) and written after it is released; the other effects are
	// applied after it is released. It is a leaf.
	mu   sync.Mutex
	core *HostCore
	gen  uint64
	// conn and kill are the ready incarnation's connection and kill
	// (nil while none is ready: the core sends nothing then).
	conn *workerconn.Conn
	kill func()
	// events are the timeline's records of calls answered on the reader,
	// until the raylet takes them (Workers.TakeEvents) or enough wait to
	// be sent (flushEvents).
	events raylet.EventBatch
	// enc encodes the calls sendLocked writes (under mu).
	enc raylet.PushEncoder
	// fx holds the effects of a call's arrival, or of a pump after a
	// result, while they are applied (under mu; empty between).
	fx []HostEffect
	// calls makes the records of the calls made in this process (under
	// mu), a run at a time: each lives from its arrival to its answer.
	calls slab.Of[Call]
	// stopped is set when the host stops; a restart after it starts no
	// worker, and counts in refused (see actorHost.start).
	stopped bool
	refused int
	// lone: the last call written was a lone one (call): its caller may
	// read its result, so the connection's reader may pause once nothing
	// is in flight (quietNow).
	lone bool

	// Set once, when the host starts.
	system *actor.ActorSystem
	self   *actor.PID
	raylet *actor.PID
	worker ids.WorkerID
	actor  ids.ActorID
	killAt func(raylet.KillPoint, *atollpb.TaskSpec) bool
	log    *slog.Logger
}

// step runs f on the core under its lock, sends the calls it sends, and
// returns its other effects.
func (s *hostState) step(f func(*HostCore) []HostEffect) []HostEffect {
	s.mu.Lock()
	rest, conn := s.sendLocked(f(s.core))
	s.mu.Unlock()
	if conn != nil {
		_ = conn.Flush()
		conn.Wake() // a paused reader reads the answers
	}
	return rest
}

// quietNow reports whether the connection's reader may pause (lazy
// reading): nothing is in flight, and the last call written was a lone
// one, as a caller making calls one at a time writes them.
func (s *hostState) quietNow() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lone && s.core.InFlight() == 0 && s.conn != nil
}

// sendLocked appends the Send effects' calls to the ready incarnation's
// connection (a kill-worker fault at BeforeExecute kills it instead: its
// end settles the call, in flight) and returns the other effects and the
// connection to flush, if it has calls to write; s.mu is held.
func (s *hostState) sendLocked(fx []HostEffect) (rest []HostEffect, flush *workerconn.Conn) {
	killed := false
	for _, e := range fx {
		send, ok := e.(Send)
		if !ok {
			rest = append(rest, e)
			continue
		}
		if killed || s.conn == nil {
			continue // in flight: the worker's end settles it
		}
		if s.killAt != nil && s.killAt(raylet.BeforeExecute, send.Call.Spec) {
			if s.kill != nil {
				s.kill()
			}
			killed = true
			continue
		}
		s.enc.Add(send.Call.Spec)
	}
	if s.enc.Len() > 0 {
		s.lone = false // call sets it again for a lone call
		// Encoded as the submitter's pushes are: a call's shape (its
		// actor, caller, method) marshalled once, only its own fields
		// for each call.
		if s.conn.DeferEncoded(&s.enc) == nil {
			flush = s.conn
		}
		s.enc.Reset()
	}
	return rest, flush
}

// sendKept is sendLocked of effects appended to s.fx, whose array it
// keeps for the next step (rest is a slice of its own); mu is held.
func (s *hostState) sendKept(fx []HostEffect) (rest []HostEffect, flush *workerconn.Conn) {
	rest, flush = s.sendLocked(fx)
	clear(fx)
	s.fx = fx[:0]
	return rest, flush
}

// call takes a call from caller in this process straight into the core
// (no mailbox hop) and writes what it sends; the rare other effects (a
// duplicate dropped, a gap skipped, the gap timer) are applied here too.
//
// A lone call — the only one sent, to an actor with nothing in flight —
// leaves the connection's reader paused and is held in lone (if set) for
// the caller's Get to read its result (workerconn.Lone); any other send
// wakes the reader.
func (s *hostState) call(spec *atollpb.TaskSpec, caller *actor.PID, lone *workerconn.Lone) {
	s.mu.Lock()
	idle := s.core.InFlight() == 0
	c := s.calls.New()
	c.Spec, c.Caller = spec, caller
	rest, conn := s.sendKept(s.core.ArriveTo(s.fx[:0], time.Now(), c))
	held := false
	var task ids.TaskID
	if lone != nil && conn != nil && idle && s.core.InFlight() == 1 {
		if id, err := ids.FromBytes(spec.TaskId); err == nil {
			held, task = true, id
		}
	}
	s.lone = held
	s.mu.Unlock()
	if conn != nil {
		_ = conn.Flush()
		if held {
			lone.Hold(conn, task)
		} else {
			conn.Wake()
		}
	}
	for _, e := range rest {
		switch e := e.(type) {
		case Drop:
			s.log.Warn("actor host: dropped a call delivered twice", "actor", s.actor.Short(), "task", e.Call.Spec.GetName(),
				"seq", e.Call.Spec.GetSequenceNumber())
		case SkipGap:
			s.log.Warn("actor host: calls missing from a caller's sequence; starting the later ones", "actor", s.actor.Short(),
				"missing_from", e.From, "missing_to", e.To)
		case ArmTimer:
			system, self := s.system, s.self
			time.AfterFunc(e.After, func() { system.Root.Send(self, &gapTick{}) })
		}
	}
}

// flushEvents sends the raylet the events of the calls answered if
// raylet.EventBatchSize are waiting, or all are (the host stops). Fewer
// wait until the raylet takes them (Workers.TakeEvents), so that a
// synchronous call wakes no actor.
func (s *hostState) flushEvents(all bool) {
	s.mu.Lock()
	var events []raylet.TaskEvent
	if all || s.events.Len() >= raylet.EventBatchSize {
		events = s.events.Take()
	}
	s.mu.Unlock()
	if len(events) > 0 {
		s.system.Root.Send(s.raylet, &raylet.AddTimelineEvents{Events: events, Recycle: s.recycleEvents})
	}
}

// recycleEvents takes back a batch of events the raylet has copied.
func (s *hostState) recycleEvents(events []raylet.TaskEvent) {
	s.mu.Lock()
	s.events.Recycle(events)
	s.mu.Unlock()
}

// takeEvents returns the events of the calls answered and not sent yet,
// and forgets them; the caller gives the batch back (recycleEvents) once
// it has copied them.
func (s *hostState) takeEvents() []raylet.TaskEvent {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.events.Take()
}

// Hosts finds the actor hosts of a node's raylet by their local
// addresses, so that a caller in the raylet's process writes its calls
// straight to an actor's worker (Call): its host's core orders them
// (HostCore.Arrive, under the host state's lock) and the calls it sends
// are written on the caller's goroutine, with no mailbox hop; results
// come back on the connection's reader, which sends the calls waiting for
// their places (Pump) with the next write.
type Hosts struct {
	mu sync.RWMutex
	m  map[string]*hostState
}

// NewHosts returns an empty registry.
func NewHosts() *Hosts { return &Hosts{m: map[string]*hostState{}} }

func (h *Hosts) add(id string, s *hostState) {
	h.mu.Lock()
	h.m[id] = s
	h.mu.Unlock()
}

func (h *Hosts) remove(id string, s *hostState) {
	h.mu.Lock()
	if h.m[id] == s {
		delete(h.m, id)
	}
	h.mu.Unlock()
}

// Call hands spec, a call from caller, to the host at local address
// local, and reports whether it did (false: no such host here; send it
// to the host's mailbox).
func (h *Hosts) Call(local string, spec *atollpb.TaskSpec, caller *actor.PID, lone *workerconn.Lone) bool {
	if h == nil {
		return false
	}
	h.mu.RLock()
	s := h.m[local]
	h.mu.RUnlock()
	if s == nil {
		return false
	}
	s.call(spec, caller, lone)
	return true
}

// Messages of the host to itself.
type (
	// created is the constructor's answer for incarnation gen.
	created struct {
		gen uint64
		err error
	}
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
	// hosts registers the host for direct calls (nil: none).
	hosts *Hosts
	live  *live
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
		call := &Call{Spec: m.Spec, Caller: ctx.Sender(), Lossy: true}
		h.apply(ctx, h.state.step(func(c *HostCore) []HostEffect { return c.Arrive(time.Now(), call) }))
	case *gapTick:
		h.apply(ctx, h.state.step(func(c *HostCore) []HostEffect { return c.Tick(time.Now()) }))
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
	case *actor.Stopped:
		h.hosts.removeHost(ctx.Self().Id, h.state)
		if h.state.system != nil {
			h.state.flushEvents(true)
		}
	case *actor.Restarting, *actor.Stopping:
		_, stopping := m.(*actor.Stopping)
		h.state.mu.Lock()
		h.state.conn, h.state.kill = nil, nil
		h.state.stopped = h.state.stopped || stopping
		h.state.mu.Unlock()
		if h.p != nil {
			if stopping {
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
//
// An actor that stopped can still be restarted: protoactor acts on a
// Restart its parent's supervisor sent after the Stop (the host crashed
// while being stopped, or while its raylet stopped), and the actor runs
// again with no parent to stop it. Such a host starts no worker.
func (h *actorHost) start(ctx actor.Context) {
	h.state.mu.Lock()
	if h.state.stopped {
		h.state.refused++
		h.state.mu.Unlock()
		ctx.Logger().Debug("actor host: not restarted: it stopped", "actor", h.id.Short())
		return
	}
	h.state.gen++
	h.gen = h.state.gen
	h.state.conn, h.state.kill = nil, nil
	h.state.system, h.state.self, h.state.raylet, h.state.worker, h.state.actor = ctx.ActorSystem(), ctx.Self(), h.raylet, h.worker.ID, h.id
	h.state.killAt, h.state.log = h.cfg.KillAt, ctx.Logger()
	h.state.mu.Unlock()
	h.hosts.addHost(ctx.Self().Id, h.state)
	system, self, state, gen, deliver, killAt, worker := ctx.ActorSystem(), ctx.Self(), h.state, h.gen, h.deliver, h.cfg.KillAt, h.worker.ID
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
		// The calls waiting for the place this one freed are sent with
		// the burst's end (the reader never waits on a write); the
		// timeline hears of the calls once per burst, or per full batch.
		state.mu.Lock()
		reply, pumpDue := state.core.FinishCall(gen, res)
		full := false
		if reply != nil {
			full = state.events.Add(callEvent(reply, worker, res.GetError() != nil))
		}
		if pumpDue {
			state.sendKept(state.core.PumpTo(state.fx[:0], time.Now())) // sends only
		}
		state.mu.Unlock()
		if full {
			state.flushEvents(false)
		}
		if reply != nil {
			deliver(reply.Caller.(*actor.PID), res)
			for _, a := range reply.Also() {
				deliver(a.Caller.(*actor.PID), AnswerFor(a, res))
			}
		}
	}
	burstEnd := func() {
		if p := proc.Load(); p != nil {
			p.conn.TryFlush()
		}
		state.flushEvents(false)
	}
	spec := h.spec
	p, err := launch(system, self, gen, h.cfg, &h.proxy, h.live, h.worker.ID, h.worker.NodeID, onResult, burstEnd, func() *atollpb.TaskSpec { return spec })
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
	h.state.mu.Lock()
	h.state.conn, h.state.kill, h.state.lone = h.p.conn, h.p.kill, false
	h.state.mu.Unlock()
	h.p.conn.SetQuiet(h.state.quietNow)
	h.apply(ctx, h.state.step(func(c *HostCore) []HostEffect { return c.Ready(time.Now(), gen) }))
}

// started tells the raylet the constructor's outcome; on an error it
// records the cause and stops the host.
func (h *actorHost) started(ctx actor.Context, err error) {
	ctx.Send(h.raylet, &raylet.ActorStarted{ID: h.id, Err: err})
}

// apply performs the core's effects but its sends (hostState.step wrote
// them), on the host's goroutine.
func (h *actorHost) apply(ctx actor.Context, effects []HostEffect) {
	for _, e := range effects {
		switch e := e.(type) {
		case Reply:
			h.deliver(e.Call.Caller.(*actor.PID), e.Result)
			for _, a := range e.Call.Also() {
				h.deliver(a.Caller.(*actor.PID), AnswerFor(a, e.Result))
			}
			ctx.Send(h.raylet, &raylet.AddTimelineEvent{Event: callEvent(e.Call, h.worker.ID, e.Result.GetError() != nil || e.Result.ActorCrashed)})
		case Fail:
			died := &errs.ActorDiedError{ActorID: h.id.String(), Name: h.spec.GetActorCreation().GetName(), Message: e.Reason}
			h.deliver(e.Call.Caller.(*actor.PID), &atollpb.TaskResult{TaskId: e.Call.Spec.TaskId, Attempt: e.Call.Spec.Attempt,
				Error: errs.ToProto(died), ActorCrashed: true})
		case Drop:
			if e.Why != DropDuplicate {
				ctx.Logger().Warn("actor host: dropped an attempt of a call retried while it ran or waited", "actor", h.id.Short(), "task", e.Call.Spec.GetName(),
					"attempt", e.Call.Spec.GetAttempt())
				break
			}
			ctx.Logger().Warn("actor host: dropped a call delivered twice", "actor", h.id.Short(), "task", e.Call.Spec.GetName(),
				"seq", e.Call.Spec.GetSequenceNumber())
		case AlreadyRan:
			ctx.Logger().Warn("actor host: a retry of a call that ran already answered without running it again (its result was lost)",
				"actor", h.id.Short(), "task", e.Call.Spec.GetName(), "attempt", e.Call.Spec.GetAttempt())
			h.deliver(e.Call.Caller.(*actor.PID), AlreadyRanResult(e.Call.Spec))
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
}

// panicked handles a result that says its method panicked: the call is
// answered with it, the calls in flight settled, and the host panics to
// be restarted.
func (h *actorHost) panicked(ctx actor.Context, res *atollpb.TaskResult) {
	gen := h.gen
	msg := res.GetError().GetMessage()
	h.state.mu.Lock()
	h.state.conn, h.state.kill = nil, nil // no call goes to the broken instance
	h.state.mu.Unlock()
	fx := h.state.step(func(c *HostCore) []HostEffect {
		return append(c.Finish(gen, res), c.Crash("an earlier call's method panicked: "+msg, false)...)
	})
	h.apply(ctx, fx)
	panic(fmt.Sprintf("actor %s: method %s panicked: %s", h.id.Short(), res.GetError().GetTaskName(), msg))
}

// crash settles the calls in flight of a worker that is gone and hands
// the host to its supervisor.
func (h *actorHost) crash(ctx actor.Context, reason string) {
	h.state.mu.Lock()
	h.state.conn, h.state.kill = nil, nil
	h.state.mu.Unlock()
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
func callEvent(c *Call, worker ids.WorkerID, failed bool) raylet.TaskEvent {
	return raylet.TaskEvent{TaskID: taskIDOf(c.Spec), Name: c.Spec.Name, Worker: worker, Start: c.Sent, End: time.Now(),
		Failed: failed, Kind: raylet.EventActorCall}
}

func (h *Hosts) addHost(id string, s *hostState) {
	if h != nil {
		h.add(id, s)
	}
}

func (h *Hosts) removeHost(id string, s *hostState) {
	if h != nil {
		h.remove(id, s)
	}
}
