package sim

import (
	"fmt"
	"sort"

	"google.golang.org/protobuf/proto"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/cluster"
	"github.com/atoll-runtime/atoll/internal/ids"
	"github.com/atoll-runtime/atoll/internal/raylet"
)

// The gateway's shell: a node's cluster.Forwarder steps on the raylet's
// forwards, the results of work forwarded here, messages from other
// gateways (NATS), membership and lease ticks; its Publish effects are
// NATS messages, Deliver a result to a local owner, Submit and PushCall
// work for the raylet and the actor hosts. Like internal/cluster's
// Gateway it also serves the node's frees and kills, and the fetcher's
// locate requests.

// stepGW applies ev to the Forwarder and carries out its effects.
func (n *node) stepGW(ev cluster.Event) {
	if !n.up {
		return
	}
	n.gw.Step(n.now(), ev)
	for _, eff := range n.gw.TakeEffects() {
		n.applyGW(eff)
	}
}

func (n *node) applyGW(eff cluster.Effect) {
	w := n.w
	switch x := eff.(type) {
	case cluster.Publish:
		m := x.Msg
		desc := wire(m)
		if x.To.IsZero() {
			for _, to := range w.liveNodes() {
				n.publish(to, x.Kind, desc, proto.Clone(m))
			}
			return
		}
		to := w.byNode[x.To]
		if to == nil || !to.up {
			w.log.add("%s.gw publish %s to %s: nobody there", n.name, x.Kind, x.To.Short())
			return
		}
		n.publish(to, x.Kind, desc, m)
	case cluster.Deliver:
		n.deliverTo(x.To, x.Result, n.name+".gw")
	case cluster.Submit:
		sub := &atollpb.SubmitTask{Spec: x.Spec, Forwarded: true, Hops: x.Hops}
		pid := n.gwPID
		n.w.send(&msg{from: n, to: n, fromName: n.name + ".gw", toName: n.name, path: pathLocal, kind: "SubmitTask", actor: "raylet", desc: attempt(x.Spec),
			deliver: func() {
				n.raylet.Submit(n.now(), sub, pid)
				n.rayletEffects()
			}})
	case cluster.PushCall:
		_, local := raylet.SplitActorAddress(x.Address)
		n.pushCall(n.name+".gw", local, x.Spec, n.gwPID)
	case cluster.ToRaylet:
		switch m := x.Msg.(type) {
		case *raylet.PeerView:
			n.raylet.PeerView(n.now(), m.Nodes)
			n.rayletEffects()
		case *raylet.NodeGone:
			n.rayletSend(n.name, "NodeGone", "raylet", m.Node.Short(), func() {
				n.raylet.NodeGone(n.now(), m.Node)
				n.rayletEffects()
			})
		case *atollpb.ForwardGeneratorAck:
			n.rayletSend(n.name, "ForwardGeneratorAck", "raylet", ids.MustFromBytes(m.Ack.TaskId).Short(), func() {
				n.raylet.GeneratorAck(n.now(), m.Ack, m.Hops)
				n.rayletEffects()
			})
		case *atollpb.CancelTask:
			n.rayletSend(n.name, "CancelTask", "raylet", ids.MustFromBytes(m.TaskId).Short(), func() {
				n.raylet.Cancel(n.now(), m)
				n.rayletEffects()
			})
		default:
			w.log.add("%s.gw to raylet %T not simulated", n.name, x.Msg)
		}
	case cluster.ToStore:
		switch m := x.Msg.(type) {
		case *atollpb.ClientDisconnected:
			n.store.clientDisconnected(ids.MustFromBytes(m.ClientId))
		case *atollpb.DeleteObjectsRequest:
			idl := make([]ids.ObjectID, 0, len(m.ObjectIds))
			for _, b := range m.ObjectIds {
				idl = append(idl, ids.MustObjectID(b))
			}
			switch {
			case m.Revived:
				n.store.store.Revive(idl)
			case len(m.StrayNode) > 0:
				n.store.deleteStrays(idl)
			default:
				n.store.delete(idl)
			}
		}
	case cluster.PeerHeard:
		n.peers[x.Node] = true
	case cluster.PeerLost:
		delete(n.peers, x.Node)
	case cluster.PeerForgotten:
	case cluster.ReportDead:
		w.gcsNodeDead(n, x.Node, x.Left)
	case cluster.Log:
		// The Forwarder's logs are for operators; the log has its events.
	default:
		w.log.add("%s.gw effect %T not simulated", n.name, eff)
	}
}

// publish sends a message of the gateway's to another node's gateway.
func (n *node) publish(to *node, _, desc string, m proto.Message) {
	kind := string(m.ProtoReflect().Descriptor().Name())
	n.w.send(&msg{from: n, to: to, fromName: n.name + ".gw", toName: to.name + ".gw", path: pathNATS, kind: kind, actor: "gateway", desc: desc,
		deliver: func() { to.stepGW(cluster.Received{Msg: m}) }})
}

// wire describes a message between gateways for the log.
func wire(m proto.Message) string {
	switch m := m.(type) {
	case *atollpb.ForwardTask:
		return fmt.Sprintf("%s hops=%d", attempt(m.Spec), m.Hops)
	case *atollpb.ForwardActorCall:
		return attempt(m.Spec)
	case *atollpb.ForwardedResult:
		return result(m.Result)
	case *atollpb.HeldWork:
		return fmt.Sprintf("%d attempts", len(m.Attempts))
	case *atollpb.ForwardCancel:
		return ids.MustFromBytes(m.TaskId).Short()
	case *atollpb.OwnersExited:
		return fmt.Sprintf("%d owners", len(m.WorkerIds))
	case *atollpb.ObjectCopies:
		s := ids.MustObjectID(m.ObjectId).Short()
		if m.Dropped {
			s += " dropped"
		}
		return s
	case *atollpb.FreeObjects:
		if m.OwedFrom != 0 {
			return fmt.Sprintf("owed from #%d", m.OwedFrom)
		}
		s := fmt.Sprintf("#%d %d objects", m.Seq, len(m.ObjectIds))
		if m.Revived {
			s += " revived"
		}
		if len(m.ExitedOwners) > 0 {
			s += fmt.Sprintf(" %d owners exited", len(m.ExitedOwners))
		}
		return s
	case *atollpb.FreeRepair:
		return fmt.Sprintf("%d..%d", m.First, m.Last)
	}
	return fmt.Sprintf("%T", m)
}

func sortBy[T any](s []T, k func(T) string) {
	sort.Slice(s, func(i, j int) bool { return k(s[i]) < k(s[j]) })
}
