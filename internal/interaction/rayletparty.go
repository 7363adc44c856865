package interaction

import (
	"fmt"
	"slices"
	"strings"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/ids"
	"github.com/atoll-runtime/atoll/internal/raylet"
)

// The raylet party: messages to a node's raylet become raylet.Core
// events; the Core's effects become messages (pushes and recalls to
// workers, replies to owners, forwards to the gateway, actor states to
// the GCS) or are carried out at once where its shell does so
// synchronously (starting and stopping workers and hosts, a kill's exit,
// timers).

// Message bodies to a raylet.
type (
	submitBody struct {
		m     *atollpb.SubmitTask
		owner *actor.PID
	}
	finishedBody struct {
		worker    ids.WorkerID
		attemptID uint64
		res       *atollpb.TaskResult
	}
	recalledBody struct {
		worker    ids.WorkerID
		attemptID uint64
		ok        bool
	}
	exitedBody struct {
		worker ids.WorkerID
		reason string
	}
	actorStartedBody struct{ actor ids.ActorID }
	actorFailedBody  struct {
		actor     ids.ActorID
		reason    string
		restarted bool
		restarts  int
	}
	actorTerminatedBody struct {
		actor ids.ActorID
		spent any
	}
)

func key(spec *atollpb.TaskSpec) attemptKey {
	return attemptKey{task: ids.MustFromBytes(spec.TaskId), attempt: spec.Attempt}
}

func resultKey(r *atollpb.TaskResult) attemptKey {
	return attemptKey{task: ids.MustFromBytes(r.TaskId), attempt: r.Attempt}
}

// toRaylet applies a message to its raylet.
func (e *Env) toRaylet(m *message) {
	n, c := m.to.node, m.to.node.raylet
	switch b := m.body.(type) {
	case *submitBody:
		c.Submit(e.now, b.m, b.owner)
	case *atollpb.CancelTask:
		c.Cancel(e.now, b)
	case *finishedBody:
		c.Finished(e.now, b.worker, b.attemptID, b.res, false)
	case *recalledBody:
		c.Recalled(e.now, b.worker, b.attemptID, b.ok)
	case *exitedBody:
		c.WorkerExited(e.now, b.worker, b.reason, false)
	case *raylet.NodeGone:
		c.NodeGone(e.now, b.Node)
	case *actorStartedBody:
		c.ActorStarted(e.now, b.actor, nil)
	case *actorFailedBody:
		c.ActorFailed(e.now, b.actor, b.reason, b.restarted, b.restarts)
	case *actorTerminatedBody:
		c.ActorTerminated(e.now, b.actor, b.spent)
	default:
		panic(fmt.Sprintf("interaction: raylet message %T", m.body))
	}
	e.rayletEffects(n)
}

// rayletEffects carries out the Core's effects until it has none left.
func (e *Env) rayletEffects(n *node) {
	for {
		effs := n.raylet.Effects()
		if len(effs) == 0 {
			return
		}
		for _, eff := range effs {
			e.applyRaylet(n, eff)
		}
	}
}

func (e *Env) applyRaylet(n *node, eff raylet.Effect) {
	from := n.rayletParty()
	switch x := eff.(type) {
	case raylet.StartWorker:
		w := e.newWorker(n, x.Worker)
		e.printf("%s: start worker %s", n.name, w.name)
	case raylet.StopWorker:
		name := e.name(x.Worker.Bytes())
		if w := n.workers[name]; w != nil {
			w.alive = false
			w.proc.alive = false
			delete(n.workers, name)
		}
		n.store.ClientDisconnected(x.Worker, e.now)
		e.printf("%s: stop worker %s (the store drops its pins)", n.name, name)
	case raylet.KillWorker:
		e.printf("%s: kill %s (%s)", n.name, e.name(x.Worker.Bytes()), x.Reason)
		if w := n.workers[e.name(x.Worker.Bytes())]; w != nil {
			w.alive = false
			w.proc.alive = false
		}
		n.raylet.WorkerExited(e.now, x.Worker, x.Reason, false)
	case raylet.ArmTimer:
		n.timers = append(n.timers, armed{at: e.now.Add(x.After), timer: x.Timer})
		e.printf("%s: timer %s in %v", n.name, timerName(x.Timer), x.After)
	case raylet.Push:
		attempts := slices.Clone(x.Attempts)
		var keys []attemptKey
		for _, a := range attempts {
			keys = append(keys, key(a.Spec()))
		}
		w := n.workers[e.name(x.Worker.Bytes())]
		to := party{kind: kWorker, node: n, name: e.name(x.Worker.Bytes())}
		if w != nil {
			to = w.party()
		}
		e.send(from, to, "push", e.attemptList(attempts), attempts, keys...)
	case raylet.Recall:
		e.send(from, party{kind: kWorker, node: n, name: e.name(x.Attempt.Worker().Bytes())}, "recall", e.attempt(x.Attempt.Spec()),
			x.Attempt, key(x.Attempt.Spec()))
	case raylet.Cancel:
		e.send(from, party{kind: kWorker, node: n, name: e.name(x.Attempt.Worker().Bytes())}, "cancel", e.attempt(x.Attempt.Spec()),
			x.Attempt, key(x.Attempt.Spec()))
	case raylet.Done:
		e.ledger.ended(e, x.Attempt)
	case raylet.Returned:
		e.ledger.ended(e, x.Attempt)
	case raylet.Reply:
		e.send(from, e.pidParty(x.Owner), "result", e.result(x.Result), x.Result, resultKey(x.Result))
	case raylet.Forward:
		e.send(from, n.gwParty(), "forward", fmt.Sprintf("%s to %s hops=%d", e.attempt(x.Spec), e.name(x.Node.Bytes()), x.Hops), x, key(x.Spec))
	case raylet.CancelForwarded:
		e.send(from, n.gwParty(), "cancel-forwarded", e.name(x.Task.Bytes()), x)
	case raylet.SpawnHost:
		h := e.spawnHost(n, x)
		e.printf("%s: spawn host of %s in %s", n.name, h.name, e.name(x.Worker.Bytes()))
		n.raylet.HostSpawned(x.Actor, h.address)
		e.nested(h.construct)
	case raylet.StopHost:
		e.send(from, e.hostParty(x.Actor), "stop", "", x)
	case raylet.CrashHost:
		e.send(from, e.hostParty(x.Actor), "crash", x.Reason, x)
	case raylet.HostGone:
		n.store.ClientDisconnected(x.Worker, e.now)
		e.printf("%s: host of %s gone (the store drops %s's pins)", n.name, e.name(x.Actor.Bytes()), e.name(x.Worker.Bytes()))
	case raylet.ReportActor:
		e.send(from, e.gcs.party(), "actor-state", e.actorInfo(x.Info), x.Info)
	default:
		e.printf("%s: %T (not modelled)", n.name, eff)
	}
}

// pidParty is the party a raylet or gateway result goes to: a gateway
// (work forwarded from another node) or an owner process.
func (e *Env) pidParty(pid *actor.PID) party {
	for _, n := range e.nodes {
		if pid.Id == n.gwPID.Id {
			return n.gwParty()
		}
	}
	if p := e.procs[pid.Id]; p != nil {
		return p.party()
	}
	return party{kind: kOwner, node: e.nodes[0], name: pid.Id}
}

func (e *Env) attempt(spec *atollpb.TaskSpec) string {
	return fmt.Sprintf("%s#%d", e.name(spec.TaskId), spec.Attempt)
}

func (e *Env) attemptKey(k attemptKey) string {
	return fmt.Sprintf("%s#%d", e.name(k.task.Bytes()), k.attempt)
}

func (e *Env) attemptList(as []*raylet.Assignment) string {
	out := make([]string, len(as))
	for i, a := range as {
		out[i] = e.attempt(a.Spec())
	}
	return "[" + strings.Join(out, " ") + "]"
}
