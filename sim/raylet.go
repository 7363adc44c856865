package sim

import (
	"fmt"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/cluster"
	"github.com/atoll-runtime/atoll/internal/ids"
	"github.com/atoll-runtime/atoll/internal/raylet"
)

// The raylet's shell: the Core's effects become messages (pushes and
// recalls to workers, results to owners, forwards to the gateway, actor
// states to the GCS) or are carried out at once where the real shell does
// so (starting and stopping workers and hosts, a kill's exit, timers), as
// internal/raylet's shell.go does.

// rayletEffects carries out the Core's effects until it has none left.
func (n *node) rayletEffects() {
	for n.up {
		effs := n.raylet.Effects()
		if len(effs) == 0 {
			return
		}
		for _, eff := range effs {
			n.applyRaylet(eff)
		}
	}
}

// rayletSend sends a message from the raylet to a party of its node.
func (n *node) rayletSend(to, kind, actor, desc string, f func()) {
	n.w.send(&msg{from: n, to: n, fromName: n.name, toName: to, path: pathLocal, kind: kind, actor: actor, desc: desc, deliver: f})
}

func (n *node) applyRaylet(eff raylet.Effect) {
	w := n.w
	switch x := eff.(type) {
	case raylet.StartWorker:
		n.startWorker(x.Worker)
	case raylet.StopWorker:
		n.stopWorker(x.Worker)
	case raylet.KillWorker:
		if s := n.workers[x.Worker]; s != nil {
			s.p.die(x.Reason)
		}
		w.log.add("%s kill worker %s: %s", n.name, x.Worker.Short(), x.Reason)
		n.raylet.WorkerExited(n.now(), x.Worker, x.Reason, false)
	case raylet.ArmTimer:
		n.armTimer(x.Timer, x.After)
	case raylet.Push:
		attempts := append([]*raylet.Assignment(nil), x.Attempts...)
		s := n.workers[x.Worker]
		desc := ""
		for _, a := range attempts {
			desc += " " + attempt(a.Spec())
		}
		n.rayletSend(x.Worker.Short(), "PushTask", "worker", desc, func() {
			if s != nil && s.p.alive {
				s.pushed(attempts)
			}
		})
	case raylet.Recall:
		a := x.Attempt
		s := n.workers[a.Worker()]
		n.rayletSend(a.Worker().Short(), "Recall", "worker", attempt(a.Spec()), func() {
			if s != nil && s.p.alive {
				s.recall(a)
			}
		})
	case raylet.Cancel:
		a, nonRec := x.Attempt, x.NonRecursive
		s := n.workers[a.Worker()]
		n.rayletSend(a.Worker().Short(), "CancelTask", "worker", attempt(a.Spec()), func() {
			if s != nil && s.p.alive {
				s.cancel(a, nonRec)
			}
		})
	case raylet.Done:
		w.check.attemptEnded(n, x.Attempt)
	case raylet.Returned:
		w.check.attemptEnded(n, x.Attempt)
	case raylet.Reply:
		n.deliverTo(x.Owner, x.Result, n.name)
	case raylet.Forward:
		spec, owner, to, hops := x.Spec, x.Owner, x.Node, x.Hops
		n.w.send(&msg{from: n, to: n, fromName: n.name, toName: n.name + ".gw", path: pathLocal, kind: "Forward", actor: "gateway",
			desc: fmt.Sprintf("%s to %s", attempt(spec), to.Short()), deliver: func() {
				relay := owner != nil && owner.Id == n.gwPID.Id
				n.stepGW(cluster.SendTask{Node: to, Spec: spec, Owner: owner, Relay: relay, Hops: hops})
			}})
	case raylet.CancelForwarded:
		task, nonRec := x.Task, x.NonRecursive
		n.w.send(&msg{from: n, to: n, fromName: n.name, toName: n.name + ".gw", path: pathLocal, kind: "CancelForwarded", actor: "gateway",
			desc: task.Short(), deliver: func() { n.stepGW(cluster.CancelSent{Task: task, NonRecursive: nonRec}) }})
	case raylet.KillRemoteActor:
		m := x.Msg
		for _, to := range w.liveNodes() {
			to := to
			w.send(&msg{from: n, to: to, fromName: n.name + ".gw", toName: to.name, path: pathNATS, kind: "KillActor", actor: "raylet",
				desc: ids.MustFromBytes(m.ActorId).Short(), deliver: func() {
					to.raylet.KillActor(to.now(), m, true)
					to.rayletEffects()
				}})
		}
	case raylet.SpawnHost:
		h := n.spawnHost(x)
		n.raylet.HostSpawned(x.Actor, h.address)
	case raylet.StopHost:
		if h := n.hosts[x.Actor]; h != nil {
			n.rayletSend(h.name(), "StopHost", "actor", "", func() { h.stop() })
		}
	case raylet.CrashHost:
		if h := n.hosts[x.Actor]; h != nil {
			reason := x.Reason
			n.rayletSend(h.name(), "CrashActor", "actor", reason, func() { h.crashProcess(reason) })
		}
	case raylet.HostGone:
		delete(n.hosts, x.Actor)
		n.workerGone(x.Worker)
	case raylet.ReportActor:
		w.gcsReport(n, x.Info)
	case raylet.AckGenerator:
		s := n.workers[x.Worker]
		if s == nil {
			w.log.add("%s raylet ack for worker %s: no such pool worker", n.name, x.Worker.Short())
			return
		}
		ack := x.Ack
		n.w.send(&msg{from: n, to: n, fromName: n.name, toName: s.p.name, path: pathLocal, kind: "GeneratorAck", actor: "worker",
			desc: fmt.Sprintf("%s#%d consumed=%d", ids.MustFromBytes(ack.TaskId).Short(), ack.Attempt, ack.Consumed), deliver: func() {
				if s.p.alive {
					s.p.rt.SimGeneratorAck(ack)
				}
			}})
	case raylet.ForwardGeneratorAck:
		n.stepGW(cluster.PassAck{Ack: x.Ack, Hops: x.Hops})
	case raylet.ReleaseBinary:
	default:
		w.log.add("%s raylet effect %T not simulated", n.name, eff)
	}
}

// workerGone reclaims what a worker process that ended held: its pins
// and unsealed objects in the store, what it owned on every node
// (node.workerDied).
func (n *node) workerGone(id ids.WorkerID) {
	n.store.clientDisconnected(id)
	n.stepGW(cluster.OwnerExited{Worker: id})
}

// pushCall takes an actor call to the host at local address on this
// node (the caller's PushTask).
func (n *node) pushCall(from, local string, spec *atollpb.TaskSpec, caller *actor.PID) {
	n.w.send(&msg{from: n, to: n, fromName: from, toName: local, path: pathLocal, kind: "PushTask", actor: "actor",
		desc: fmt.Sprintf("%s seq=%d", attempt(spec), spec.SequenceNumber), deliver: func() {
			for _, h := range n.sortedHosts() {
				if h.address == local && !h.gone {
					h.arrive(spec, caller)
					return
				}
			}
			// No host here (gone, or never): the gateway answers a
			// forwarded call; a local caller hears of the death from the
			// GCS.
			if caller != nil && caller.Id == n.gwPID.Id {
				n.stepGW(cluster.NoHost{Address: local})
			}
		}})
}

func (n *node) sortedHosts() []*host {
	out := make([]*host, 0, len(n.hosts))
	for _, h := range n.hosts {
		out = append(out, h)
	}
	sortBy(out, func(h *host) string { return h.address })
	return out
}
