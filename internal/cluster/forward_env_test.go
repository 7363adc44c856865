package cluster

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"google.golang.org/protobuf/proto"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/ids"
	"github.com/atoll-runtime/atoll/internal/raylet"
)

// fwdEnv holds the Forwarders of several nodes and the messages in flight
// between them, for the scenarios of testdata/*.txt: it plays the NATS
// network (at most once, in order; the scripts drop, duplicate and hold
// messages) and the clock, and prints the effects of every step.
type fwdEnv struct {
	now    time.Time
	nodes  []*fwdNode
	byName map[string]*fwdNode
	byID   map[ids.NodeID]*fwdNode
	// ids gives every name a fixed id; names the way back, for printing.
	ids   map[string]ids.ID16
	names map[ids.ID16]string
	// net holds the messages in flight, oldest first.
	net []envelope
}

type fwdNode struct {
	name string
	id   ids.NodeID
	core *Forwarder
	// gw is the node's gateway: the owner a relayed task names.
	gw *actor.PID
	// unavailable: its publishes fail, as when its NATS connection is
	// closed (the shell's PublishFailed).
	unavailable bool
}

// envelope is a Publish on its way from one node to another.
type envelope struct {
	from, to string
	p        Publish
}

// fwdEpoch is when every scenario starts.
var fwdEpoch = time.Date(2025, time.January, 1, 0, 0, 0, 0, time.UTC)

func newFwdEnv() *fwdEnv {
	return &fwdEnv{now: fwdEpoch, byName: map[string]*fwdNode{}, byID: map[ids.NodeID]*fwdNode{}, ids: map[string]ids.ID16{}, names: map[ids.ID16]string{}}
}

// id gives name a fixed id: a sequence number, then the name, so that
// Short (the first 4 bytes) tells names apart too.
func (e *fwdEnv) id(name string) ids.ID16 {
	if id, ok := e.ids[name]; ok {
		return id
	}
	var id ids.ID16
	id[0] = byte(len(e.ids) + 1)
	copy(id[1:], name)
	e.ids[name], e.names[id] = id, name
	return id
}

// name is what the scripts call an id (its hex if it has no name).
func (e *fwdEnv) name(b []byte) string {
	id, err := ids.FromBytes(b)
	if err != nil {
		return fmt.Sprintf("%x", b)
	}
	if n, ok := e.names[id]; ok {
		return n
	}
	return id.Short()
}

// names replaces the ids in s (full and short hex) with their names.
func (e *fwdEnv) unhex(s string) string {
	for id, n := range e.names {
		s = strings.ReplaceAll(s, id.String(), n)
	}
	for id, n := range e.names {
		s = strings.ReplaceAll(s, id.Short(), n)
	}
	return s
}

func (e *fwdEnv) attempt(taskID []byte, attempt int32) string {
	return fmt.Sprintf("%s.%d", e.name(taskID), attempt)
}

// step applies ev to node n and returns the lines its effects print,
// each prefixed with indent and the node's name. Publishes go in flight;
// with n unavailable, they fail instead (those that want to know are
// told, as the shell does).
func (e *fwdEnv) step(n *fwdNode, ev Event, indent string) []string {
	n.core.Step(e.now, ev)
	var out []string
	queue := n.core.TakeEffects()
	for len(queue) > 0 {
		eff := queue[0]
		queue = queue[1:]
		out = append(out, indent+n.name+": "+e.effect(eff))
		p, ok := eff.(Publish)
		if !ok {
			continue
		}
		if n.unavailable {
			out = append(out, indent+"  (not sent: unavailable)")
			if p.Unsent != UnsentIgnored {
				n.core.Step(e.now, PublishFailed{Publish: p, Err: errs.Unavailablef("control plane: nats: connection closed")})
				queue = append(n.core.TakeEffects(), queue...)
			}
			continue
		}
		if p.To.IsZero() {
			for _, to := range e.nodes {
				e.net = append(e.net, envelope{from: n.name, to: to.name, p: p})
			}
			continue
		}
		e.net = append(e.net, envelope{from: n.name, to: e.name(p.To.Bytes()), p: p})
	}
	return out
}

// deliver hands a message in flight to its node, as its NATS callback
// would: a copy of it, validated.
func (e *fwdEnv) deliver(m envelope) []string {
	head := fmt.Sprintf("%s → %s %s %s", m.from, m.to, m.p.Kind, e.message(m.p.Msg))
	to := e.byName[m.to]
	if to == nil {
		return []string{head, "  (no such node: lost)"}
	}
	msg := proto.Clone(m.p.Msg)
	if err := validate(msg); err != nil {
		return []string{head, "  invalid: " + err.Error()}
	}
	return append([]string{head}, e.step(to, Received{Msg: msg}, "  ")...)
}

// effect prints one effect.
func (e *fwdEnv) effect(eff Effect) string {
	switch x := eff.(type) {
	case Publish:
		to := "all"
		if !x.To.IsZero() {
			to = e.name(x.To.Bytes())
		}
		return fmt.Sprintf("publish %s to %s: %s", x.Kind, to, e.message(x.Msg))
	case Deliver:
		return fmt.Sprintf("deliver to %s: %s", x.To.Id, e.result(x.Result))
	case Submit:
		return fmt.Sprintf("submit %s hops=%d", e.attempt(x.Spec.TaskId, x.Spec.Attempt), x.Hops)
	case PushCall:
		return fmt.Sprintf("push %s to %s", e.attempt(x.Spec.TaskId, x.Spec.Attempt), x.Address)
	case ToRaylet:
		return "raylet: " + e.rayletMsg(x.Msg)
	case ToStore:
		if m, ok := x.Msg.(*atollpb.ClientDisconnected); ok {
			return "store: owner " + e.name(m.ClientId) + " disconnected"
		}
		if m, ok := x.Msg.(*atollpb.DeleteObjectsRequest); ok {
			verb := "delete"
			switch {
			case m.Revived:
				verb = "revive"
			case len(m.StrayNode) > 0:
				verb = "delete the stray copies"
			}
			return fmt.Sprintf("store: %s %s", verb, e.objects(m.ObjectIds))
		}
		return fmt.Sprintf("store: %T", x.Msg)
	case PeerHeard:
		return fmt.Sprintf("peer %s heard at %q", e.name(x.Node.Bytes()), x.TransferAddress)
	case PeerLost:
		return "peer " + e.name(x.Node.Bytes()) + " lost"
	case PeerForgotten:
		return "peer " + e.name(x.Node.Bytes()) + " forgotten"
	case ReportDead:
		return "gcs: " + e.name(x.Node.Bytes()) + " dead"
	case Log:
		var b strings.Builder
		fmt.Fprintf(&b, "log %s: %s", strings.ToLower(x.Level.String()), x.Msg)
		for i := 0; i+1 < len(x.Args); i += 2 {
			fmt.Fprintf(&b, " %v=%v", x.Args[i], x.Args[i+1])
		}
		return e.unhex(b.String())
	}
	return fmt.Sprintf("%T", eff)
}

func (e *fwdEnv) rayletMsg(m any) string {
	switch m := m.(type) {
	case *raylet.PeerView:
		var nodes []string
		for _, v := range m.Nodes {
			nodes = append(nodes, fmt.Sprintf("%s(cpu %g/%g)", e.name(v.ID.Bytes()), v.Available["CPU"], v.Total["CPU"]))
		}
		return "view [" + strings.Join(nodes, " ") + "]"
	case *raylet.NodeGone:
		return "node " + e.name(m.Node.Bytes()) + " gone"
	case *atollpb.CancelTask:
		if m.OneAttempt {
			return "cancel " + e.attempt(m.TaskId, m.Attempt)
		}
		return "cancel " + e.name(m.TaskId) + nonRecursive(m.NonRecursive)
	case *atollpb.ForwardGeneratorAck:
		return fmt.Sprintf("genack %s link=%d consumed=%d", e.attempt(m.Ack.TaskId, m.Ack.Attempt), m.Hops, m.Ack.Consumed)
	}
	return fmt.Sprintf("%T", m)
}

func nonRecursive(b bool) string {
	if b {
		return " non-recursive"
	}
	return ""
}

// message prints a message between nodes.
func (e *fwdEnv) message(m proto.Message) string {
	switch m := m.(type) {
	case *atollpb.ForwardTask:
		return fmt.Sprintf("%s hops=%d", e.attempt(m.Spec.TaskId, m.Spec.Attempt), m.Hops)
	case *atollpb.ForwardActorCall:
		return fmt.Sprintf("%s addr=%s", e.attempt(m.Spec.TaskId, m.Spec.Attempt), m.Address)
	case *atollpb.ForwardedResult:
		s := e.result(m.Result)
		if m.Hops != 0 {
			s += fmt.Sprintf(" link=%d", m.Hops)
		}
		return s
	case *atollpb.HeldWork:
		var keys []string
		for _, a := range m.Attempts {
			keys = append(keys, e.attempt(a.TaskId, a.Attempt))
		}
		return "[" + strings.Join(keys, " ") + "]"
	case *atollpb.ForwardCancel:
		return e.name(m.TaskId) + nonRecursive(m.NonRecursive)
	case *atollpb.ForwardGeneratorAck:
		return fmt.Sprintf("%s link=%d consumed=%d", e.attempt(m.Ack.TaskId, m.Ack.Attempt), m.Hops, m.Ack.Consumed)
	case *atollpb.OwnersExited:
		var ws []string
		for _, w := range m.WorkerIds {
			ws = append(ws, e.name(w))
		}
		return fmt.Sprintf("node=%s owners=[%s]", e.name(m.NodeId), strings.Join(ws, " "))
	case *atollpb.FreeObjects:
		if m.OwedFrom != 0 {
			return fmt.Sprintf("%s owed from #%d", e.name(m.OriginNode), m.OwedFrom)
		}
		s := "unnumbered"
		if m.Seq != 0 {
			s = fmt.Sprintf("%s#%d", e.name(m.OriginNode), m.Seq)
		}
		if len(m.ObjectIds) > 0 {
			s += " " + e.objects(m.ObjectIds)
		}
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
		if m.Missing {
			s += " missing"
		}
		return s
	case *atollpb.FreeRepair:
		return fmt.Sprintf("for %s: %d..%d", e.name(m.FromNode), m.First, m.Last)
	}
	return fmt.Sprintf("%T", m)
}

// objects prints object ids by their names (what object(name) made).
func (e *fwdEnv) objects(idl [][]byte) string {
	var out []string
	for _, b := range idl {
		id, err := ids.ObjectIDFromBytes(b)
		if err != nil {
			out = append(out, fmt.Sprintf("%x", b))
			continue
		}
		out = append(out, e.name(id.TaskID().Bytes()))
	}
	return "[" + strings.Join(out, " ") + "]"
}

// result prints a task result: ok, an item, or an error and its message.
func (e *fwdEnv) result(r *atollpb.TaskResult) string {
	s := e.attempt(r.TaskId, r.Attempt)
	switch {
	case r.Error != nil:
		s += fmt.Sprintf(" error=%s %q", r.Error.Code, e.unhex(r.Error.Message))
	case r.GeneratorItem != nil:
		s += fmt.Sprintf(" item=%d", r.GeneratorItem.Index)
	default:
		s += " ok"
		if len(r.Returns) > 0 {
			if st := r.Returns[0].GetValue().GetStored(); st != nil {
				s += " stored@" + e.name(st.NodeId)
			}
		}
	}
	if r.ActorCrashed {
		s += " crashed"
	}
	return s
}

// state prints node n's tables.
func (e *fwdEnv) state(n *fwdNode) string {
	f := n.core
	var out []string
	for _, k := range sortedKeys(f.pending) {
		for _, fw := range f.pending[k] {
			to := "relay"
			if !fw.relay && fw.owner != nil {
				to = fw.owner.Id
			}
			kind := "task"
			if fw.isCall {
				kind = "call"
			}
			out = append(out, fmt.Sprintf("pending %s %s to %s link=%d for %s renewed %v ago", kind, e.attempt(k.task.Bytes(), k.attempt),
				e.name(fw.node.Bytes()), fw.hops, to, e.now.Sub(fw.renewed)))
		}
	}
	for _, k := range sortedKeys(f.inbound) {
		for _, a := range f.inbound[k] {
			s := fmt.Sprintf("inbound %s from %s link=%d bytes=%d", e.attempt(k.task.Bytes(), k.attempt), e.name(a.origin.Bytes()), a.hops, a.size)
			if a.address != "" {
				s += " addr=" + a.address
			}
			if f.itemFailed[k] != nil {
				s += " item-failed"
			}
			out = append(out, s)
		}
	}
	origins := make([]ids.NodeID, 0, len(f.quota.by))
	for o := range f.quota.by {
		origins = append(origins, o)
	}
	slices.SortFunc(origins, compareNodes)
	for _, o := range origins {
		out = append(out, fmt.Sprintf("quota %s: %d attempts, %d bytes", e.name(o.Bytes()), f.quota.by[o].n, f.quota.by[o].bytes))
	}
	var peers, dead []string
	for id := range f.peers {
		peers = append(peers, e.name(id.Bytes()))
	}
	for _, m := range f.dead.queue {
		if !f.dead.stale(m) {
			dead = append(dead, e.name(m.key.Bytes()))
		}
	}
	slices.Sort(peers)
	out = append(out, "peers ["+strings.Join(peers, " ")+"] dead ["+strings.Join(dead, " ")+"]")
	owners, ownerNodes := f.owners.sizes()
	st := f.Stats()
	out = append(out, fmt.Sprintf("owners %d on %d nodes; copies of %d objects; lost %d, refused %d", owners, ownerNodes, st.Copies, st.ForwardsLost, st.ForwardsRefused))
	return strings.Join(out, "\n")
}
