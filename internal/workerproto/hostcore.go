package workerproto

import (
	"encoding/hex"
	"slices"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/registry"
	"github.com/atoll-runtime/atoll/internal/simbugs"
)

// HostCore is the decision state of an actor host, a state machine in the
// style of raft's Step and the raylet's Core: events go in as method
// calls that take the current time, and each returns the effects the
// shell must apply, in order. It does no I/O, reads no clock, starts no
// goroutine and knows nothing of actors or connections; the host actor
// (host.go) is its shell. It outlives the host's restarts: the order of
// each caller's calls, and the calls not yet run, carry over to the next
// incarnation of the actor's worker.
//
// What it decides:
//
//   - Per-caller order. A call carries its caller's id and sequence number
//     (TaskSpec.caller_id, sequence_number: 1, 2, 3, ... per caller). The
//     host starts each caller's calls in that order whatever order they
//     arrive in: a call that overtook an earlier one is held until the
//     gap fills; a number already passed is a duplicate delivery and is
//     dropped (Drop), so a call runs at most once. A gap is taken for
//     lost (SkipGap: its calls were dropped on the way; their callers time
//     out) after GapTimeout, or at once when a caller has MaxHeld calls
//     held. A call without a number is queued as it comes.
//   - A retry of a call that ran. A caller whose call's answer was lost
//     between nodes (FORWARD_LOST) sends it again as a new attempt, as a
//     new caller: it cannot tell a call lost on its way in from an
//     answer lost on its way back. The host remembers the last
//     MaxRemembered calls (Call.Lossy: their answers cross the network)
//     its incarnation answered; another attempt of one of them — the
//     retry, or a delayed first attempt arriving after it — is not run
//     again (AlreadyRan), nor one of a call still in flight (Drop), so a
//     call runs at most once on an incarnation; a retry whose earlier
//     attempt is still queued takes its place in the queue.
//   - Windows. Calls ready to run wait in a queue per concurrency group
//     ("" the default); a group has at most its window of calls sent to
//     the worker and not answered — the calls it runs at once plus
//     PipelineDepth-1 — so the next call is in the worker when one ends
//     and a full group never holds back another's calls (Send).
//   - Death. When the worker dies or a method panics (Crash), the calls in
//     flight are settled by what may have run: an actor that runs one call
//     at a time ran them in order, so the first may have been running (it
//     fails, Fail, marked crashed: its caller retries it within
//     MaxTaskRetries) and the others go back to the head of the queue for
//     the next incarnation; an actor with concurrency may have started any
//     of them, so each fails. Calls wait while no incarnation is ready.
type HostCore struct {
	cfg    HostConfig
	groups *hostGroups
	// concurrent: the actor runs more than one call at a time.
	concurrent bool

	// ready: an incarnation whose constructor ran takes calls; gen
	// numbers incarnations (results of another are ignored).
	ready bool
	gen   uint64

	// queues hold the calls ready to send, per group, in start order.
	queues map[string][]*Call
	// inflight are the calls sent to the worker and not answered, in
	// the order they were sent; inGroup counts them per group.
	inflight []*Call
	inGroup  map[string]int
	// callers orders each caller's calls by sequence number.
	callers map[string]*callerOrder
	// ran holds the lossy calls this incarnation answered, the latest
	// MaxRemembered.
	ran ranCalls
	// timer: a gap timer is armed (ArmTimer).
	timer bool
}

// HostConfig configures a HostCore. Zero fields take the defaults.
type HostConfig struct {
	// Actor is the actor's creation spec: its concurrency
	// (MaxConcurrency, ConcurrencyGroups).
	Actor *atollpb.ActorCreationSpec
	// PipelineDepth is how many calls a group may have in the worker
	// beyond those it runs at once, plus one (1: none waiting there).
	PipelineDepth int
	// MaxHeld bounds the calls held per caller for an earlier one that
	// has not arrived; default 4096.
	MaxHeld int
	// GapTimeout is how long a gap may hold a caller's later calls
	// before the missing ones are taken for lost; default 5s.
	GapTimeout time.Duration
	// MaxCallers is how many callers the host remembers; past it, those
	// idle for CallerIdle with no call held are forgotten (one that calls
	// again is ordered from the first of its calls that arrives, or from
	// 1 after a gap timeout); default 4096 and a minute.
	MaxCallers int
	CallerIdle time.Duration
	// MaxRemembered is how many answered calls (Call.Lossy) the host
	// remembers to refuse running again; default 4096.
	MaxRemembered int
}

// The defaults of HostConfig.
const (
	DefaultMaxHeld    = 1 << 12
	DefaultGapTimeout = 5 * time.Second
	DefaultMaxCallers = 1 << 12
	DefaultCallerIdle = time.Minute
	DefaultRemembered = 1 << 12
)

// Call is one actor call as the host sees it.
type Call struct {
	Spec *atollpb.TaskSpec
	// Caller is who gets the call's answer; opaque to the core (the
	// shell's *actor.PID).
	Caller any
	// Sent is when the call went to the worker (the timeline's start).
	Sent time.Time
	// Lossy: the call's answer crosses the network (it came through the
	// host's mailbox, from another node's gateway or a caller elsewhere),
	// so its caller may send it again after it ran (HostCore.ran).
	Lossy bool
	// also are other attempts of the call that arrived while it was in
	// flight: its answer answers them too (AnswerFor).
	also  []*Call
	group string
	gen   uint64
}

// DropReason says why a call is dropped (Drop).
type DropReason int

// The reasons of Drop.
const (
	DropDuplicate  DropReason = iota // a number already passed, or held
	DropRetryRuns                    // another attempt is in flight; its answer is this one's (Call.Also)
	DropSuperseded                   // a queued attempt a later one replaced; answered with its answer (Call.Also)
)

// Also lists the other attempts of the call that arrived while it was in
// flight: the shell gives each the call's answer (AnswerFor), or its
// failure.
func (c *Call) Also() []*Call { return c.also }

// AnswerFor is res, the answer of another attempt of a's call, as the
// answer of attempt a.
func AnswerFor(a *Call, res *atollpb.TaskResult) *atollpb.TaskResult {
	out := proto.CloneOf(res)
	out.Attempt = a.Spec.GetAttempt()
	return out
}

// Group is the concurrency group the call runs in ("" the default).
func (c *Call) Group() string { return c.group }

// callerOrder is where one caller's calls are: next is the sequence
// number that starts next; held are later ones that arrived first.
type callerOrder struct {
	id   string // the caller's id, its key in HostCore.callers
	next uint64
	held map[uint64]*Call
	// since is when the oldest gap began holding calls; last when a call
	// of the caller last arrived.
	since, last time.Time
}

// Effects of a HostCore, in the order the shell applies them.
type (
	// HostEffect is one thing the shell must do.
	HostEffect interface{ hostEffect() }
	// Send writes the call to the worker.
	Send struct{ Call *Call }
	// Reply gives the call's result to its caller.
	Reply struct {
		Call   *Call
		Result *atollpb.TaskResult
	}
	// Fail answers the call with the actor's death (ActorDiedError,
	// actor_crashed: the caller may retry it): Reason says why.
	Fail struct {
		Call   *Call
		Reason string
	}
	// Drop: the call does not run. Why says why: a duplicate delivery
	// of one the host took already (not answered); an attempt of a call
	// with another attempt in flight (answered with that one's answer,
	// Call.Also); or an earlier attempt, queued, that a later one took
	// the place of (answered with the later one's).
	Drop struct {
		Call *Call
		Why  DropReason
	}
	// AlreadyRan: the call is another attempt (a retry, or a delayed
	// first attempt) of one this incarnation ran and answered: it is not
	// run again, and its caller gets an error saying so (FORWARD_LOST,
	// not retried).
	AlreadyRan struct{ Call *Call }
	// SkipGap: the calls From..To of Caller did not arrive in time; the
	// later ones start.
	SkipGap struct {
		Caller   string
		From, To uint64
	}
	// ArmTimer asks for Tick after After.
	ArmTimer struct{ After time.Duration }
	// PumpDue: a place freed in a window that has calls waiting; the
	// shell steps Pump on its own goroutine (Finish never sends).
	PumpDue struct{}
)

func (Send) hostEffect()       {}
func (Reply) hostEffect()      {}
func (Fail) hostEffect()       {}
func (Drop) hostEffect()       {}
func (AlreadyRan) hostEffect() {}
func (SkipGap) hostEffect()    {}
func (ArmTimer) hostEffect()   {}
func (PumpDue) hostEffect()    {}

// NewHostCore returns the core of a host for an actor; no incarnation is
// ready yet.
func NewHostCore(cfg HostConfig) *HostCore {
	if cfg.PipelineDepth <= 0 {
		cfg.PipelineDepth = 1
	}
	if cfg.MaxHeld <= 0 {
		cfg.MaxHeld = DefaultMaxHeld
	}
	if cfg.GapTimeout <= 0 {
		cfg.GapTimeout = DefaultGapTimeout
	}
	if cfg.MaxCallers <= 0 {
		cfg.MaxCallers = DefaultMaxCallers
	}
	if cfg.CallerIdle <= 0 {
		cfg.CallerIdle = DefaultCallerIdle
	}
	if cfg.MaxRemembered <= 0 {
		cfg.MaxRemembered = DefaultRemembered
	}
	groups, concurrent := newHostGroups(cfg.Actor, cfg.PipelineDepth)
	return &HostCore{cfg: cfg, groups: groups, concurrent: concurrent, queues: map[string][]*Call{},
		inGroup: map[string]int{}, callers: map[string]*callerOrder{}}
}

// Concurrent reports whether the actor runs more than one call at a time.
func (h *HostCore) Concurrent() bool { return h.concurrent }

// Arrive takes a call from its caller, in the caller's order.
func (h *HostCore) Arrive(now time.Time, c *Call) []HostEffect { return h.ArriveTo(nil, now, c) }

// ArriveTo is Arrive appending its effects to out (a shell's buffer,
// reused from call to call).
func (h *HostCore) ArriveTo(out []HostEffect, now time.Time, c *Call) []HostEffect {
	c.group = h.groups.of(c.Spec)
	seq := c.Spec.GetSequenceNumber()
	if seq == 0 || simbugs.On(simbugs.HostIgnoresCallerOrder) { // the second: a bug put in on purpose, for the simulator's tests
		out = h.take(c, out)
		return h.pump(now, out)
	}
	o := h.callers[string(c.Spec.GetCallerId())] // no string made for the lookup
	if o == nil {
		if len(h.callers) >= h.cfg.MaxCallers {
			h.forgetIdle(now)
		}
		o = &callerOrder{id: string(c.Spec.GetCallerId()), next: 1, held: map[uint64]*Call{}}
		h.callers[o.id] = o
	}
	id := o.id
	o.last = now
	switch {
	case seq < o.next || o.held[seq] != nil:
		return append(out, Drop{Call: c, Why: DropDuplicate})
	case seq > o.next:
		if len(o.held) == 0 {
			o.since = now
		}
		o.held[seq] = c
		if len(o.held) > h.cfg.MaxHeld {
			out = h.skipGap(now, id, o, out)
			return h.pump(now, out)
		}
		return h.armTimer(now, out)
	}
	out = h.take(c, out)
	o.next++
	out = h.release(now, o, out)
	return h.pump(now, out)
}

// take queues a call whose turn came, unless it is a later attempt of a
// call this incarnation ran or runs (retryOfCall): that one is answered
// or dropped instead, and the caller's next calls go on.
func (h *HostCore) take(c *Call, out []HostEffect) []HostEffect {
	if c.Lossy {
		if e, taken := h.otherAttempt(c); taken {
			return append(out, e)
		}
	}
	h.queue(c)
	return out
}

// Ready reports that incarnation gen of the actor's worker runs its
// constructor's instance: the calls waiting go out. Calls still in
// flight to an earlier incarnation (one that ended without a Crash) are
// settled as by a Crash first.
func (h *HostCore) Ready(now time.Time, gen uint64) []HostEffect {
	var out []HostEffect
	if gen != h.gen && len(h.inflight) > 0 {
		out = h.Crash("the actor restarted", true)
	}
	if gen != h.gen {
		h.ran.reset() // a new incarnation: a retry runs on it
	}
	h.ready, h.gen = true, gen
	return h.pump(now, out)
}

// otherAttempt answers an attempt of a call this incarnation ran
// (AlreadyRan) or runs (Drop: the one in flight answers), whichever
// attempt came first: a delayed first attempt can arrive after its
// retry. A retry whose call's earlier attempt is still queued takes its
// place (the earlier one is dropped); queues are searched for retries
// only, which are rare. Otherwise it returns false and takes nothing.
func (h *HostCore) otherAttempt(c *Call) (e HostEffect, taken bool) {
	id, ok := taskKey(c.Spec.GetTaskId())
	if !ok {
		return nil, false
	}
	if h.ran.has(id) {
		return AlreadyRan{Call: c}, true
	}
	for _, f := range h.inflight {
		if f.gen == h.gen && string(f.Spec.GetTaskId()) == string(c.Spec.GetTaskId()) {
			f.also = append(f.also, c)
			return Drop{Call: c, Why: DropRetryRuns}, true
		}
	}
	if c.Spec.GetAttempt() == 0 {
		return nil, false
	}
	q := h.queues[c.group]
	for i, f := range q {
		if string(f.Spec.GetTaskId()) == string(c.Spec.GetTaskId()) && f.Spec.GetAttempt() < c.Spec.GetAttempt() {
			q[i] = c
			c.also = append(append(c.also, f.also...), f)
			f.also = nil
			return Drop{Call: f, Why: DropSuperseded}, true
		}
	}
	return nil, false
}

// Finish takes the result of a call in flight of incarnation gen, freeing
// its place in its group's window: it returns the Reply, and no Send —
// if calls wait for that place (PumpDue), the shell steps Pump to send
// them (the actor host does on the connection reader that has the
// result, appending the calls to the connection's buffer without waiting
// on a write; they leave at the end of the reader's burst). A result for
// no call in flight (late, of another incarnation) is ignored.
func (h *HostCore) Finish(gen uint64, res *atollpb.TaskResult) []HostEffect {
	c, pumpDue := h.FinishCall(gen, res)
	switch {
	case c == nil:
		return nil
	case pumpDue:
		return []HostEffect{Reply{Call: c, Result: res}, PumpDue{}}
	}
	return []HostEffect{Reply{Call: c, Result: res}}
}

// FinishCall is Finish with its effects as values, for the host's
// connection reader (no effect list per call): the call to reply to
// (nil: none) and whether calls wait for its place (PumpDue).
func (h *HostCore) FinishCall(gen uint64, res *atollpb.TaskResult) (reply *Call, pumpDue bool) {
	if gen != h.gen {
		return nil, false
	}
	for i, c := range h.inflight {
		if c.gen == gen && string(c.Spec.GetTaskId()) == string(res.GetTaskId()) && c.Spec.GetAttempt() == res.GetAttempt() {
			h.inflight = slices.Delete(h.inflight, i, i+1)
			h.inGroup[c.group]--
			if c.Lossy {
				if id, ok := taskKey(c.Spec.GetTaskId()); ok {
					h.ran.add(id, h.cfg.MaxRemembered)
				}
			}
			return c, h.ready && len(h.queues[c.group]) > 0
		}
	}
	return nil, false
}

// Peek returns the call in flight of incarnation gen that res answers,
// leaving it in flight, or nil.
func (h *HostCore) Peek(gen uint64, res *atollpb.TaskResult) *Call {
	if gen != h.gen {
		return nil
	}
	for _, c := range h.inflight {
		if string(c.Spec.GetTaskId()) == string(res.GetTaskId()) && c.Spec.GetAttempt() == res.GetAttempt() {
			return c
		}
	}
	return nil
}

// InFlight counts the calls sent to the worker and not answered.
func (h *HostCore) InFlight() int { return len(h.inflight) }

// Pump sends the queued calls that fit their groups' windows.
func (h *HostCore) Pump(now time.Time) []HostEffect { return h.pump(now, nil) }

// PumpTo is Pump appending its effects to out (a shell's buffer, reused).
func (h *HostCore) PumpTo(out []HostEffect, now time.Time) []HostEffect { return h.pump(now, out) }

// Crash reports that the actor's incarnation is gone: its worker died
// (running: the call it ran first may have been running) or a method
// panicked (its call was answered already; running is false). No call
// goes out until the next Ready.
func (h *HostCore) Crash(reason string, running bool) []HostEffect {
	h.ready = false
	calls := h.inflight
	h.inflight = nil
	clear(h.inGroup)
	if len(calls) == 0 {
		return nil
	}
	failed, back := calls, []*Call(nil)
	if !h.concurrent {
		n := 0
		if running {
			n = 1
		}
		failed, back = calls[:n], calls[n:]
	}
	// Calls that cannot have started go back to the head of their queue,
	// in the order they were sent.
	for i := len(back) - 1; i >= 0; i-- {
		c := back[i]
		h.queues[c.group] = append([]*Call{c}, h.queues[c.group]...)
	}
	out := make([]HostEffect, 0, len(failed))
	for _, c := range failed {
		out = append(out, Fail{Call: c, Reason: reason})
		for _, a := range c.also {
			out = append(out, Fail{Call: a, Reason: reason})
		}
		c.also = nil
	}
	return out
}

// Tick is the gap timer going off: gaps that held calls for GapTimeout
// are skipped.
func (h *HostCore) Tick(now time.Time) []HostEffect {
	h.timer = false
	var out []HostEffect
	for _, id := range h.callerIDs() {
		o := h.callers[id]
		if len(o.held) > 0 && now.Sub(o.since) >= h.cfg.GapTimeout {
			out = h.skipGap(now, id, o, out)
		}
	}
	out = h.armTimer(now, out)
	return h.pump(now, out)
}

// callerIDs are the callers in a fixed order (deterministic effects).
func (h *HostCore) callerIDs() []string {
	ids := make([]string, 0, len(h.callers))
	for id := range h.callers {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

func (h *HostCore) queue(c *Call) { h.queues[c.group] = append(h.queues[c.group], c) }

// release queues the held calls of o that now come next.
func (h *HostCore) release(now time.Time, o *callerOrder, out []HostEffect) []HostEffect {
	for {
		c := o.held[o.next]
		if c == nil {
			break
		}
		delete(o.held, o.next)
		out = h.take(c, out)
		o.next++
	}
	if len(o.held) > 0 {
		o.since = now // a later gap: its wait starts now
	}
	return out
}

// skipGap gives up on the calls missing before o's held ones.
func (h *HostCore) skipGap(now time.Time, id string, o *callerOrder, out []HostEffect) []HostEffect {
	first := uint64(0)
	for seq := range o.held {
		if first == 0 || seq < first {
			first = seq
		}
	}
	out = append(out, SkipGap{Caller: id, From: o.next, To: first - 1})
	o.next = first
	return h.release(now, o, out)
}

// armTimer arms the gap timer, if a gap holds calls and none is armed,
// for when the oldest gap times out.
func (h *HostCore) armTimer(now time.Time, out []HostEffect) []HostEffect {
	if h.timer {
		return out
	}
	var due time.Time
	for _, o := range h.callers {
		if len(o.held) > 0 && (due.IsZero() || o.since.Before(due)) {
			due = o.since
		}
	}
	if due.IsZero() {
		return out
	}
	h.timer = true
	return append(out, ArmTimer{After: max(due.Add(h.cfg.GapTimeout).Sub(now), 0)})
}

// forgetIdle forgets the callers idle for CallerIdle with no call held.
func (h *HostCore) forgetIdle(now time.Time) {
	for id, o := range h.callers {
		if len(o.held) == 0 && now.Sub(o.last) >= h.cfg.CallerIdle {
			delete(h.callers, id)
		}
	}
}

// pump moves queued calls into flight while their windows have room.
func (h *HostCore) pump(now time.Time, out []HostEffect) []HostEffect {
	if !h.ready {
		return out
	}
	for _, g := range h.groups.names {
		for len(h.queues[g]) > 0 && h.inGroup[g] < h.groups.window[g] {
			q := h.queues[g]
			c := q[0]
			q[0] = nil
			h.queues[g] = q[1:]
			c.gen, c.Sent = h.gen, now
			h.inflight = append(h.inflight, c)
			h.inGroup[g]++
			out = append(out, Send{Call: c})
		}
		if q := h.queues[g]; q != nil && len(q) == 0 {
			h.queues[g] = nil // the backing array goes with its calls
		}
	}
	return out
}

// hostGroups are an actor's concurrency groups as its host sees them:
// each group has its own window of calls in the worker — those it runs
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
// here: the worker fails the call).
func (g *hostGroups) of(spec *atollpb.TaskSpec) string {
	if name := spec.GetConcurrencyGroup(); name != "" {
		if _, ok := g.window[name]; ok {
			return name
		}
		return ""
	}
	_, method := registry.SplitMethod(spec.GetFunction())
	return g.byMethod[method]
}

// AlreadyRanResult is the answer to a call AlreadyRan refused: FORWARD_LOST,
// not marked crashed, so its caller does not retry it.
func AlreadyRanResult(spec *atollpb.TaskSpec) *atollpb.TaskResult {
	err := &errs.ForwardLostError{TaskName: spec.GetName(), TaskID: hex.EncodeToString(spec.GetTaskId()),
		Message: "the call ran on the actor and its result was lost on the way back; a call runs at most once on an actor, so this retry did not run it again"}
	return &atollpb.TaskResult{TaskId: spec.GetTaskId(), Attempt: spec.GetAttempt(), Error: errs.ToProto(err)}
}

// taskKey is a task id (16 bytes; shorter in tests) as a map key, with
// no allocation.
func taskKey(b []byte) ([16]byte, bool) {
	var k [16]byte
	if len(b) == 0 || len(b) > len(k) {
		return k, false
	}
	copy(k[:], b)
	return k, true
}

// ranCalls is a bounded set of task ids: the latest added, up to a cap,
// oldest out first. Its ring grows with use, so a host whose calls are
// all local keeps none.
type ranCalls struct {
	ring []([16]byte)
	next int // where the next id goes once the ring is full
	set  map[[16]byte]struct{}
}

func (r *ranCalls) add(id [16]byte, max int) {
	if _, ok := r.set[id]; ok {
		return
	}
	if r.set == nil {
		r.set = map[[16]byte]struct{}{}
	}
	if len(r.ring) < max {
		r.ring = append(r.ring, id)
	} else {
		delete(r.set, r.ring[r.next])
		r.ring[r.next] = id
		r.next = (r.next + 1) % len(r.ring)
	}
	r.set[id] = struct{}{}
}

func (r *ranCalls) has(id [16]byte) bool {
	_, ok := r.set[id]
	return ok
}

func (r *ranCalls) reset() { *r = ranCalls{} }
