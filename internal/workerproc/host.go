package workerproc

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/ids"
	"github.com/atoll-runtime/atoll/internal/raylet"
)

// hostState is the part of a process actor host that survives its
// restarts: the process generation, the calls not yet answered, and
// where each caller's calls are in their order.
type hostState struct {
	gen uint64
	// queues hold the calls ready for the process, per concurrency group
	// ("" is the default group), in the order they start.
	queues map[string][]*queuedCall
	// callers orders each caller's calls by sequence number: a call that
	// arrives before an earlier one of its caller waits here.
	callers map[string]*callerOrder

	// mu guards inflight, the calls sent to the process and not
	// answered, in the order they were sent: the connection reader takes
	// a call when its result arrives (it delivers the result to the
	// caller itself, then tells the host with callDone).
	mu       sync.Mutex
	inflight []*queuedCall
	inGroup  map[string]int // calls in flight per group
}

// push queues a call at the tail of its group's queue.
func (s *hostState) push(c *queuedCall) {
	if s.queues == nil {
		s.queues = map[string][]*queuedCall{}
	}
	s.queues[c.group] = append(s.queues[c.group], c)
}

// callerOrder is where one caller's calls to this actor are: next is the
// sequence number the host starts next; held are later ones that arrived
// first.
type callerOrder struct {
	next uint64
	held map[uint64]*queuedCall
	// since is when the oldest held call arrived (gap timeout); last
	// when a call of the caller last arrived.
	since, last time.Time
}

// Bounds of the reordering: calls held per caller for an earlier one
// that has not arrived, and how long the host waits for it before it
// takes it for lost (a dropped message) and starts the later ones.
const (
	maxHeldCalls = 1 << 12
	gapTimeout   = 5 * time.Second
)

// maxCallers bounds the callers a host remembers; past it, those idle
// for callerIdle with no call held are forgotten (a forgotten caller
// that calls again is taken as new: its calls are ordered from the first
// that arrives, or from 1 after a gap timeout).
const (
	maxCallers = 1 << 12
	callerIdle = time.Minute
)

// admit takes a call in its caller's order: it queues it, and the held
// calls that follow it, or holds it until the calls before it arrive. A
// call without a sequence number is queued as it comes; one with a number
// already passed (a duplicate delivery) is dropped: a call runs at most
// once.
func (s *hostState) admit(c *queuedCall, log *slog.Logger) (held bool) {
	seq := c.spec.GetSequenceNumber()
	if seq == 0 {
		s.push(c)
		return false
	}
	if s.callers == nil {
		s.callers = map[string]*callerOrder{}
	}
	caller := string(c.spec.GetCallerId())
	o := s.callers[caller]
	now := time.Now()
	if o == nil {
		if len(s.callers) >= maxCallers {
			s.forgetIdle(now)
		}
		o = &callerOrder{next: 1, held: map[uint64]*queuedCall{}}
		s.callers[caller] = o
	}
	o.last = now
	switch {
	case seq < o.next || o.held[seq] != nil:
		log.Warn("actor host: dropped a call delivered twice", "task", c.spec.GetName(), "seq", seq)
		return false
	case seq > o.next:
		if len(o.held) == 0 {
			o.since = time.Now()
		}
		o.held[seq] = c
		if len(o.held) > maxHeldCalls {
			s.skipGap(o, log)
		}
		return len(o.held) > 0
	}
	s.push(c)
	o.next++
	s.release(o)
	return false
}

// forgetIdle forgets the callers idle for callerIdle with no call held.
func (s *hostState) forgetIdle(now time.Time) {
	for id, o := range s.callers {
		if len(o.held) == 0 && now.Sub(o.last) >= callerIdle {
			delete(s.callers, id)
		}
	}
}

// release queues the held calls that now come next.
func (s *hostState) release(o *callerOrder) {
	for {
		c := o.held[o.next]
		if c == nil {
			break
		}
		delete(o.held, o.next)
		s.push(c)
		o.next++
	}
	if len(o.held) > 0 {
		o.since = time.Now()
	}
}

// skipGap gives up on the calls missing before the held ones: they were
// lost on the way (their callers time out), and the later ones start.
func (s *hostState) skipGap(o *callerOrder, log *slog.Logger) {
	first := uint64(0)
	for seq := range o.held {
		if first == 0 || seq < first {
			first = seq
		}
	}
	log.Warn("actor host: calls missing from a caller's sequence; starting the later ones", "missing_from", o.next, "missing_to", first-1)
	o.next = first
	s.release(o)
}

// skipStaleGaps skips the gaps held longer than gapTimeout.
func (s *hostState) skipStaleGaps(now time.Time, log *slog.Logger) (waiting bool) {
	for _, o := range s.callers {
		if len(o.held) > 0 && now.Sub(o.since) >= gapTimeout {
			s.skipGap(o, log)
		}
		waiting = waiting || len(o.held) > 0
	}
	return waiting
}

// takeCall takes the in-flight call res answers.
func (s *hostState) takeCall(res *atollpb.TaskResult) *queuedCall {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, c := range s.inflight {
		if string(c.spec.TaskId) == string(res.GetTaskId()) && c.spec.Attempt == res.GetAttempt() {
			s.inflight = append(s.inflight[:i], s.inflight[i+1:]...)
			s.inGroup[c.group]--
			return c
		}
	}
	return nil
}

// peekCall returns the in-flight call res answers, leaving it in flight.
func (s *hostState) peekCall(res *atollpb.TaskResult) *queuedCall {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.inflight {
		if string(c.spec.TaskId) == string(res.GetTaskId()) && c.spec.Attempt == res.GetAttempt() {
			return c
		}
	}
	return nil
}

// takeAll takes every call in flight, in the order they were sent.
func (s *hostState) takeAll() []*queuedCall {
	s.mu.Lock()
	defer s.mu.Unlock()
	all := s.inflight
	s.inflight = nil
	clear(s.inGroup)
	return all
}

func (s *hostState) sent(c *queuedCall) {
	s.mu.Lock()
	s.inflight = append(s.inflight, c)
	if s.inGroup == nil {
		s.inGroup = map[string]int{}
	}
	s.inGroup[c.group]++
	s.mu.Unlock()
}

// inFlight counts the calls of group in flight.
func (s *hostState) inFlight(group string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.inGroup[group]
}

// callDone tells a host that its process's call finished and its result
// went to the caller.
type callDone struct{ gen uint64 }

// checkGaps is the host's tick while calls wait for earlier ones.
type checkGaps struct{}

type queuedCall struct {
	caller *actor.PID
	spec   *atollpb.TaskSpec
	group  string    // its concurrency group ("" the default)
	sent   time.Time // when it went to the process (the timeline's start)
}

// actorHost hosts one actor in a worker process of its own. Calls are
// queued here, in each caller's order, and sent to the process up to a
// window at a time: the calls it runs at once (the actor's concurrency)
// and the pipeline depth beyond them, so the next call is there when one
// ends. When the process dies or a method panics, the host fails the
// calls that may have run (the caller may retry them), puts back at the
// head of the queue those that cannot have started, and panics, so the
// raylet's supervisor strategy restarts it — a new process, the
// constructor again — or stops it when the actor's restarts are spent.
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
	// groups are the actor's concurrency groups: how many calls of each
	// may be in the process at once, and which group each method is in;
	// concurrent: the actor runs more than one call at a time.
	groups     *hostGroups
	concurrent bool
	gapTimer   bool
	// deliver gives a result to its caller (see raylet.deliver).
	deliver func(caller *actor.PID, res *atollpb.TaskResult)
}

// hostGroups are an actor's concurrency groups as its host sees them:
// each group has its own window of calls in the process — those it runs
// at once plus depth-1 waiting — so a group that is full never holds
// back another's calls.
type hostGroups struct {
	names    []string // "" (the default group) first, then in declared order
	window   map[string]int
	byMethod map[string]string
}

func newHostGroups(spec *atollpb.ActorCreationSpec, depth int) (g *hostGroups, concurrent bool) {
	depth = max(1, depth)
	def := max(1, int(spec.GetMaxConcurrency()))
	g = &hostGroups{names: []string{""}, window: map[string]int{"": def + depth - 1}, byMethod: map[string]string{}}
	running := def
	for _, cg := range spec.GetConcurrencyGroups() {
		limit := max(1, int(cg.GetMaxConcurrency()))
		running += limit
		g.names = append(g.names, cg.GetName())
		g.window[cg.GetName()] = limit + depth - 1
		for _, m := range cg.GetMethods() {
			g.byMethod[m] = cg.GetName()
		}
	}
	return g, running > 1
}

// of returns the group a call runs in: the one it names, else its
// method's, else the default (a group the actor lacks is the default
// here: the process fails the call).
func (g *hostGroups) of(spec *atollpb.TaskSpec) string {
	if name := spec.GetConcurrencyGroup(); name != "" {
		if _, ok := g.window[name]; ok {
			return name
		}
		return ""
	}
	_, method := splitMethod(spec.GetFunction())
	return g.byMethod[method]
}

func splitMethod(fn string) (typeName, method string) {
	if i := strings.LastIndexByte(fn, '.'); i >= 0 {
		return fn[:i], fn[i+1:]
	}
	return fn, ""
}

func (h *actorHost) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		h.start(ctx)
	case *atollpb.PushTask:
		if h.state.admit(&queuedCall{caller: ctx.Sender(), spec: m.Spec, group: h.groups.of(m.Spec)}, ctx.Logger()) {
			h.armGapTimer(ctx)
		}
		h.pump()
	case *checkGaps:
		h.gapTimer = false
		if h.state.skipStaleGaps(time.Now(), ctx.Logger()) {
			h.armGapTimer(ctx)
		}
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
		if res.GeneratorItem != nil {
			return // actor methods are not generators: not a call's result
		}
		if c := state.peekCall(res); c != nil && killAt != nil && !res.ActorCrashed && killAt(raylet.AfterExecute, c.spec) {
			proc.Load().kill()
			return
		}
		if res.ActorCrashed {
			system.Root.Send(self, &procFrame{gen: gen, frame: &atollpb.Frame{Body: &atollpb.Frame_TaskResult{TaskResult: res}}})
			return
		}
		if c := state.takeCall(res); c != nil {
			system.Root.Send(self, &callDone{gen: gen})
			deliver(c.caller, res)
			system.Root.Send(rayletPID, callEvent(c, worker, res.GetError() != nil))
		}
	}
	spec := h.spec
	p, err := startProcess(ctx.ActorSystem(), ctx.Self(), h.gen, h.cfg, &h.proxy, h.worker.ID, h.worker.NodeID, onResult,
		func() *atollpb.TaskSpec { return spec })
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
	h.pump()
}

func (h *actorHost) armGapTimer(ctx actor.Context) {
	if h.gapTimer {
		return
	}
	h.gapTimer = true
	system, self := ctx.ActorSystem(), ctx.Self()
	time.AfterFunc(gapTimeout, func() { system.Root.Send(self, &checkGaps{}) })
}

// pump sends queued calls to the process while their groups' windows
// have room.
func (h *actorHost) pump() {
	for _, g := range h.groups.names {
		for h.ready && len(h.state.queues[g]) > 0 && h.state.inFlight(g) < h.groups.window[g] {
			q := h.state.queues[g]
			c := q[0]
			q[0] = nil
			h.state.queues[g] = q[1:]
			h.state.sent(c)
			if h.cfg.KillAt != nil && h.cfg.KillAt(raylet.BeforeExecute, c.spec) {
				h.p.kill() // its exit fails the call (in flight) and restarts the actor
				return
			}
			c.sent = time.Now()
			_ = h.p.conn.Send(&atollpb.Frame{Body: &atollpb.Frame_PushTask{PushTask: &atollpb.PushTask{Spec: c.spec}}})
		}
	}
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
	c := h.state.takeCall(res)
	if c == nil {
		return
	}
	h.deliver(c.caller, res)
	ctx.Send(h.raylet, callEvent(c, h.worker.ID, res.GetError() != nil || res.ActorCrashed))
	if res.ActorCrashed {
		h.ready = false
		h.failInFlight(ctx, "an earlier call's method panicked: "+res.GetError().GetMessage(), false)
		panic(fmt.Sprintf("actor %s: method %s panicked: %s", h.id.Short(), c.spec.Function, res.GetError().GetMessage()))
	}
	h.pump()
}

// crash fails the calls that may have run and hands the host to its
// supervisor.
func (h *actorHost) crash(ctx actor.Context, reason string) {
	h.ready = false
	h.failInFlight(ctx, "the actor's worker process died while running this call: "+reason, true)
	panic(fmt.Sprintf("actor %s: %s", h.id.Short(), reason))
}

// failInFlight empties the window when the process is gone or broken.
// An actor that runs one call at a time ran them in order: the first call
// in flight may have been running (when the process died: running is
// set), the others had not started — they go back to the head of the
// queue and run on the restarted actor. An actor with concurrency may
// have started any of them: each fails as crashed (its caller retries it
// within MaxTaskRetries), so none runs twice.
func (h *actorHost) failInFlight(ctx actor.Context, reason string, running bool) {
	calls := h.state.takeAll()
	if len(calls) == 0 {
		return
	}
	failed := calls
	if !h.concurrent {
		failed = calls[:0]
		if running {
			failed = calls[:1]
		}
		if h.state.queues == nil {
			h.state.queues = map[string][]*queuedCall{}
		}
		h.state.queues[""] = append(append([]*queuedCall(nil), calls[len(failed):]...), h.state.queues[""]...)
	}
	for _, c := range failed {
		died := &errs.ActorDiedError{ActorID: h.id.String(), Name: h.spec.GetActorCreation().GetName(), Message: reason}
		ctx.Send(c.caller, &atollpb.TaskResult{TaskId: c.spec.TaskId, Attempt: c.spec.Attempt, Error: errs.ToProto(died), ActorCrashed: true})
	}
}
