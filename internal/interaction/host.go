package interaction

import (
	"fmt"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/ids"
	"github.com/atoll-runtime/atoll/internal/raylet"
)

// The actor host party. There is no pure core for it on main: the
// process host (internal/workerproc/host.go: hostState) reads the clock
// and the supervisor strategy lives in the raylet's shell
// (raylet/actorhost.go). This is a small model with their rules, as
// ARCHITECTURE.md "Actors" states them:
//
//   - calls start in each caller's sequence order (TaskSpec.caller_id,
//     sequence_number); a call that overtook an earlier one waits; a
//     number already passed is a duplicate delivery and is dropped, so a
//     call runs at most once;
//   - one call runs at a time (no concurrency groups);
//   - when the actor's process dies, the running call fails with
//     ActorDiedError and actor_crashed (its caller retries it within
//     max_task_retries); calls not started stay queued, in order, for the
//     restarted instance; the host's ordering state survives restarts;
//   - the supervisor restarts the process while max_restarts allows
//     (counted over the actor's life), telling the raylet (ActorFailed),
//     and the constructor runs again (ActorStarted); past the budget the
//     host stops for good (ActorFailed, then ActorTerminated with the
//     failure).
//
// The actor's process has an owner.Table of its own (a fresh one after
// each restart): the borrower's side, as a pool worker's.

type host struct {
	env     *Env
	name    string // the actor's name
	actor   ids.ActorID
	node    *node
	worker  ids.WorkerID
	address string // its local address
	spec    *atollpb.TaskSpec
	proc    *process
	max     int // max_restarts (-1: no limit)
	used    int // restarts so far
	ready   bool
	gone    bool
	callers map[string]*callerOrder
	queue   []*call
	running *call
	// seq numbers the borrow reports of the actor's processes, in order
	// across restarts (a restarted process reports after the old one).
	seq uint64
}

type callerOrder struct {
	next uint64
	held map[uint64]*call
}

type call struct {
	spec   *atollpb.TaskSpec
	caller *actor.PID
	lent   []ids.ObjectID
}

// callBody is a call on its way to a host.
type callBody struct {
	spec   *atollpb.TaskSpec
	caller *actor.PID
}

func (h *host) party() party { return party{kind: kHost, node: h.node, name: h.name} }

func (e *Env) spawnHost(n *node, x raylet.SpawnHost) *host {
	name := e.name(x.Actor.Bytes())
	h := &host{env: e, name: name, actor: x.Actor, node: n, worker: x.Worker, address: name, spec: x.Spec,
		max: int(x.Spec.GetActorCreation().GetMaxRestarts()), callers: map[string]*callerOrder{}}
	h.proc = e.newProcess(e.name(x.Worker.Bytes()), "actor", n, x.Worker)
	e.hosts[name] = h
	return h
}

// construct runs the constructor in a new process: the raylet hears
// ActorStarted, and queued calls start.
func (h *host) construct() {
	e := h.env
	h.ready = true
	e.send(h.party(), h.node.rayletParty(), "actor-started", h.name, &actorStartedBody{actor: h.actor}, key(h.spec))
	e.pump(h)
}

func (e *Env) hostParty(id ids.ActorID) party {
	if h := e.hosts[e.name(id.Bytes())]; h != nil {
		return h.party()
	}
	return party{kind: kHost, node: e.nodes[0], name: e.name(id.Bytes())}
}

// hostByAddress finds the host at a (cluster) actor address.
func (e *Env) hostByAddress(address string) party {
	_, local := raylet.SplitActorAddress(address)
	if h := e.hosts[local]; h != nil {
		return h.party()
	}
	return party{kind: kHost, node: e.nodes[0], name: local}
}

// toHost applies a message to an actor host.
func (e *Env) toHost(m *message) {
	h := e.hosts[m.to.name]
	switch b := m.body.(type) {
	case *callBody:
		e.admit(h, &call{spec: b.spec, caller: b.caller})
		e.pump(h)
	case raylet.StopHost:
		h.gone, h.ready = true, false
		h.proc.alive = false
		e.printf("%s: stopped", h.name)
		e.send(h.party(), h.node.rayletParty(), "actor-terminated", h.name, &actorTerminatedBody{actor: h.actor}, key(h.spec))
	case raylet.CrashHost:
		e.crashHost(h, b.Reason)
	default:
		panic(fmt.Sprintf("interaction: host message %T", m.body))
	}
}

// admit takes a call in its caller's order (hostState.admit).
func (e *Env) admit(h *host, c *call) {
	seq := c.spec.SequenceNumber
	o := h.callers[string(c.spec.CallerId)]
	if o == nil {
		o = &callerOrder{next: 1, held: map[uint64]*call{}}
		h.callers[string(c.spec.CallerId)] = o
	}
	switch {
	case seq < o.next || o.held[seq] != nil:
		e.printf("%s: dropped %s: seq %d delivered twice", h.name, e.attempt(c.spec), seq)
		return
	case seq > o.next:
		o.held[seq] = c
		e.printf("%s: holds %s (seq %d) until seq %d arrives", h.name, e.attempt(c.spec), seq, o.next)
		return
	}
	h.queue = append(h.queue, c)
	o.next++
	for next := o.held[o.next]; next != nil; next = o.held[o.next] {
		delete(o.held, o.next)
		h.queue = append(h.queue, next)
		o.next++
	}
}

// pump starts the next call if the instance is ready and idle.
func (e *Env) pump(h *host) {
	if !h.ready || h.gone || h.running != nil || len(h.queue) == 0 {
		return
	}
	c := h.queue[0]
	h.queue = h.queue[1:]
	h.running = c
	e.ledger.executed(e, key(c.spec), h.name)
	c.lent, _ = h.proc.table.Lend(c.spec.Borrowed, ids.MustFromBytes(c.spec.OwnerId), nodeFromHex(c.spec.OwnerAddress))
	s := fmt.Sprintf("%s: runs %s", h.name, e.attempt(c.spec))
	if len(c.lent) > 0 {
		s += " (borrows " + e.onameList(c.lent) + ")"
	}
	e.printf("%s", s)
}

// finishCall ends the running call with the outcome c asks for.
func (e *Env) finishCall(h *host, c Cmd) error {
	call := h.running
	res, err := e.outcome(c, h.node, h.proc, h.worker, &h.seq, call.spec, call.lent)
	if err != nil {
		return err
	}
	h.running = nil
	e.printf("%s: %s ends", h.name, e.attempt(call.spec))
	e.nested(func() {
		e.send(h.party(), e.pidParty(call.caller), "result", e.result(res), res, resultKey(res))
		e.pump(h)
	})
	return nil
}

// crashHost: the actor's process dies. The running call fails as
// crashed; the supervisor restarts the actor within its budget, or stops
// it for good.
func (e *Env) crashHost(h *host, reason string) {
	h.ready = false
	h.proc.alive = false
	e.printf("%s crashed (its process %s): %s", h.name, h.proc.name, reason)
	e.nested(func() {
		if c := h.running; c != nil {
			h.running = nil
			died := &errs.ActorDiedError{ActorID: h.actor.String(), Name: h.name, Message: "the actor's worker process died while running this call: " + reason}
			res := &atollpb.TaskResult{TaskId: c.spec.TaskId, Attempt: c.spec.Attempt, Error: errs.ToProto(died), ActorCrashed: true}
			e.send(h.party(), e.pidParty(c.caller), "result", e.result(res), res, resultKey(res))
		}
		if h.max < 0 || h.used < h.max {
			h.used++
			e.send(h.party(), h.node.rayletParty(), "actor-failed", fmt.Sprintf("%s restarted (%d)", h.name, h.used),
				&actorFailedBody{actor: h.actor, reason: reason, restarted: true, restarts: h.used})
			h.proc = e.newProcess(h.proc.name, "actor", h.node, h.worker)
			e.printf("%s: restarted in a new process (restart %d of %d)", h.name, h.used, h.max)
			h.construct()
			return
		}
		h.gone = true
		e.send(h.party(), h.node.rayletParty(), "actor-failed", h.name+" restarts spent",
			&actorFailedBody{actor: h.actor, reason: reason, restarts: h.used})
		e.send(h.party(), h.node.rayletParty(), "actor-terminated", h.name, &actorTerminatedBody{actor: h.actor, spent: reason}, key(h.spec))
	})
}
