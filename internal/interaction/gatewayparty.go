package interaction

import (
	"fmt"
	"log/slog"
	"strings"

	"google.golang.org/protobuf/proto"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/cluster"
	"github.com/atoll-runtime/atoll/internal/ids"
	"github.com/atoll-runtime/atoll/internal/raylet"
)

// The gateway party: a node's cluster.Forwarder. The raylet's forwards
// and the results of work forwarded here become events; messages from
// other gateways (NATS) arrive as Received; its Publish effects are
// messages to other gateways (to every node for a broadcast), Deliver a
// result to a local owner, Submit and PushCall work for the raylet and
// actor hosts. The gateway also serves its node's object frees (the free
// broadcast), locate requests (its directory of copies) and the AMM's
// drain and leave requests.

// Message bodies to a gateway.
type (
	locateReq struct {
		id   ids.ObjectID
		from *node
	}
	leaveReq struct{ held map[ids.ObjectID]bool }
)

// toGateway applies a message to its gateway.
func (e *Env) toGateway(m *message) {
	n := m.to.node
	switch b := m.body.(type) {
	case raylet.Forward:
		relay := b.Owner != nil && b.Owner.Id == n.gwPID.Id
		e.stepGW(n, cluster.SendTask{Node: b.Node, Spec: b.Spec, Owner: b.Owner, Relay: relay, Hops: b.Hops})
	case raylet.CancelForwarded:
		e.stepGW(n, cluster.CancelSent{Task: b.Task, NonRecursive: b.NonRecursive})
	case *atollpb.TaskResult:
		e.stepGW(n, cluster.LocalResult{Result: b})
	case *atollpb.FreeObjects:
		e.stepGW(n, cluster.Received{Msg: proto.Clone(b)})
	case *locateReq:
		copies := n.gw.Copies(b.id)
		var names []string
		for _, c := range copies {
			names = append(names, e.name(c.Bytes()))
		}
		e.sendObj(n.gwParty(), b.from.storeParty(), "located", fmt.Sprintf("%s on [%s]", e.oname(b.id), strings.Join(names, " ")),
			&locatedBody{id: b.id, nodes: copies}, b.id)
	case *drainReq:
		n.draining = true
		e.printf("%s: draining: new tasks go to other nodes", n.name)
		n.raylet.Drain(e.now, false)
		e.rayletEffects(n)
	case *leaveReq:
		e.leave(n, b)
	case proto.Message:
		e.stepGW(n, cluster.Received{Msg: proto.Clone(b)})
	default:
		panic(fmt.Sprintf("interaction: gateway message %T", m.body))
	}
}

// stepGW applies ev to n's Forwarder and carries out its effects.
func (e *Env) stepGW(n *node, ev cluster.Event) {
	n.gw.Step(e.now, ev)
	for _, eff := range n.gw.TakeEffects() {
		e.applyGW(n, eff)
	}
}

func (e *Env) applyGW(n *node, eff cluster.Effect) {
	from := n.gwParty()
	switch x := eff.(type) {
	case cluster.Publish:
		desc := e.wire(x.Msg)
		carries := e.carries(x.Msg)
		if x.To.IsZero() {
			for _, to := range e.nodes {
				e.send(from, to.gwParty(), x.Kind, desc, x.Msg, carries...)
			}
			return
		}
		to := e.nodeByID(x.To)
		if to == nil {
			e.printf("%s: publish %s to unknown node %s: lost", from.name, x.Kind, x.To.Short())
			return
		}
		e.send(from, to.gwParty(), x.Kind, desc, x.Msg, carries...)
	case cluster.Deliver:
		e.send(from, e.pidParty(x.To), "result", e.result(x.Result), x.Result, resultKey(x.Result))
	case cluster.Submit:
		sub := &atollpb.SubmitTask{Spec: x.Spec, Forwarded: true, Hops: x.Hops}
		e.send(from, n.rayletParty(), "submit", fmt.Sprintf("%s hops=%d", e.attempt(x.Spec), x.Hops), &submitBody{m: sub, owner: n.gwPID}, key(x.Spec))
	case cluster.PushCall:
		e.send(from, e.hostByAddress(x.Address), "call", e.attempt(x.Spec), &callBody{spec: x.Spec, caller: n.gwPID}, key(x.Spec))
	case cluster.ToRaylet:
		switch m := x.Msg.(type) {
		case *raylet.PeerView:
			n.raylet.PeerView(e.now, m.Nodes)
			if v := e.view(m); v != n.lastView {
				n.lastView = v
				e.printf("%s: view %s", n.name, v)
			}
			e.rayletEffects(n)
		case *raylet.NodeGone:
			e.send(from, n.rayletParty(), "node-gone", e.name(m.Node.Bytes()), m)
		case *atollpb.CancelTask:
			desc := e.name(m.TaskId)
			if m.OneAttempt {
				desc = fmt.Sprintf("%s#%d", desc, m.Attempt)
			}
			e.send(from, n.rayletParty(), "cancel", desc, m)
		default:
			e.printf("%s: to raylet %T (not modelled)", from.name, x.Msg)
		}
	case cluster.ToStore:
		switch m := x.Msg.(type) {
		case *atollpb.ClientDisconnected:
			n.store.ClientDisconnected(ids.MustFromBytes(m.ClientId), e.now)
			e.printf("%s: owner %s gone: its objects here are freed", n.store_(), e.name(m.ClientId))
		case *atollpb.DeleteObjectsRequest:
			var idl []ids.ObjectID
			for _, b := range m.ObjectIds {
				idl = append(idl, ids.MustObjectID(b))
			}
			if m.Revived {
				n.store.Revive(idl)
				return
			}
			var here []ids.ObjectID
			for _, id := range idl {
				if len(e.holdingsOn(n, id)) > 0 {
					here = append(here, id)
				}
			}
			if len(m.StrayNode) > 0 {
				n.store.DeleteStrays(idl, e.now)
				if len(here) > 0 {
					e.printf("%s: deletes the stray copies %s", n.store_(), e.onameList(here))
				}
				return
			}
			n.store.Delete(idl, e.now)
			if len(here) > 0 {
				e.printf("%s: deletes %s", n.store_(), e.onameList(here))
			}
		}
	case cluster.PeerHeard:
		e.printf("%s: peer %s heard", from.name, e.name(x.Node.Bytes()))
	case cluster.PeerLost:
		if p := e.nodeByID(x.Node); p != nil {
			n.lost[p] = true
		}
		e.printf("%s: peer %s lost", from.name, e.name(x.Node.Bytes()))
	case cluster.PeerForgotten:
		e.printf("%s: peer %s forgotten", from.name, e.name(x.Node.Bytes()))
	case cluster.ReportDead:
		e.send(from, e.gcs.party(), "node-dead", e.name(x.Node.Bytes()), x)
	case cluster.Log:
		if x.Level < slog.LevelInfo && strings.Contains(x.Msg, "joined the view") {
			return // every gossip's first report: the peer heard line says it
		}
		var b strings.Builder
		fmt.Fprintf(&b, "%s: log %s: %s", from.name, strings.ToLower(x.Level.String()), x.Msg)
		for i := 0; i+1 < len(x.Args); i += 2 {
			fmt.Fprintf(&b, " %v=%v", x.Args[i], x.Args[i+1])
		}
		e.printf("%s", e.unhex(b.String()))
	default:
		e.printf("%s: %T (not modelled)", from.name, eff)
	}
}

func (n *node) store_() string { return n.name + ".store" }

// view prints a raylet's view of its peers.
func (e *Env) view(v *raylet.PeerView) string {
	var out []string
	for _, p := range v.Nodes {
		out = append(out, fmt.Sprintf("%s(cpu %g/%g)", e.name(p.ID.Bytes()), p.Available[raylet.CPU], p.Total[raylet.CPU]))
	}
	return "[" + strings.Join(out, " ") + "]"
}

// carries lists the attempts a message between gateways carries.
func (e *Env) carries(m proto.Message) []attemptKey {
	switch m := m.(type) {
	case *atollpb.ForwardTask:
		return []attemptKey{key(m.Spec)}
	case *atollpb.ForwardActorCall:
		return []attemptKey{key(m.Spec)}
	case *atollpb.ForwardedResult:
		return []attemptKey{resultKey(m.Result)}
	case *atollpb.ForwardCancel:
		return []attemptKey{{task: ids.MustFromBytes(m.TaskId), attempt: -1}}
	}
	return nil
}

// wire prints a message between gateways.
func (e *Env) wire(m proto.Message) string {
	switch m := m.(type) {
	case *atollpb.ForwardTask:
		return fmt.Sprintf("%s hops=%d", e.attempt(m.Spec), m.Hops)
	case *atollpb.ForwardActorCall:
		return fmt.Sprintf("%s addr=%s", e.attempt(m.Spec), m.Address)
	case *atollpb.ForwardedResult:
		return e.result(m.Result)
	case *atollpb.HeldWork:
		var keys []string
		for _, a := range m.Attempts {
			keys = append(keys, fmt.Sprintf("%s#%d", e.name(a.TaskId), a.Attempt))
		}
		return "[" + strings.Join(keys, " ") + "]"
	case *atollpb.ForwardCancel:
		return e.name(m.TaskId)
	case *atollpb.OwnersExited:
		var ws []string
		for _, w := range m.WorkerIds {
			ws = append(ws, e.name(w))
		}
		return fmt.Sprintf("node=%s owners=[%s]", e.name(m.NodeId), strings.Join(ws, " "))
	case *atollpb.NodeLoad:
		if m.Leaving {
			return e.name(m.NodeId) + " leaving"
		}
		return e.name(m.NodeId)
	case *atollpb.ObjectCopies:
		var ns []string
		for _, n := range m.NodeIds {
			ns = append(ns, e.name(n))
		}
		s := fmt.Sprintf("%s on [%s]", e.onameBytes(m.ObjectId), strings.Join(ns, " "))
		if m.Dropped {
			s += " dropped"
		}
		return s
	case *atollpb.FreeObjects:
		var os []string
		for _, o := range m.ObjectIds {
			os = append(os, e.onameBytes(o))
		}
		s := fmt.Sprintf("%s#%d [%s]", e.name(m.OriginNode), m.Seq, strings.Join(os, " "))
		if m.Revived {
			s += " revived"
		}
		if len(m.StrayNode) > 0 {
			s += " strays on " + e.name(m.StrayNode)
		}
		if len(m.ExitedOwners) > 0 {
			var ws []string
			for _, w := range m.ExitedOwners {
				ws = append(ws, e.name(w))
			}
			s += " exited=[" + strings.Join(ws, " ") + "]"
		}
		return s
	case *atollpb.FreeRepair:
		return fmt.Sprintf("for %s: %d..%d", e.name(m.FromNode), m.First, m.Last)
	}
	return fmt.Sprintf("%T", m)
}
