package raylet

import (
	"bytes"
	"cmp"
	"context"
	"encoding/hex"
	"errors"
	"maps"
	"slices"
	"strings"

	"github.com/asynkron/protoactor-go/actor"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/ids"
	"github.com/atoll-runtime/atoll/internal/telemetry"
)

// ClusterConfig makes a raylet one node of a cluster: it places each task
// submitted to it on a node (itself or a peer) and forwards what it does
// not run. The callbacks run on the raylet's goroutine and must not block
// (they send to the node's gateway actor).
type ClusterConfig struct {
	// Forward hands spec to node's raylet; results go to owner. hops is
	// the number of raylets the task will have gone through.
	Forward func(node ids.NodeID, spec *atollpb.TaskSpec, owner *actor.PID, hops int32)
	// CallActor sends an actor call to a host on another node (address is
	// the host's local address there); the result goes to caller.
	CallActor func(node ids.NodeID, address string, spec *atollpb.TaskSpec, caller *actor.PID)
	// Cancel cancels a task this raylet does not know (it may have been
	// forwarded); nonRecursive as CancelTask.non_recursive.
	Cancel func(id ids.TaskID, nonRecursive bool)
	// KillActor kills an actor this raylet does not host (every node
	// hears it; the host answers with KillHostedActor).
	KillActor func(m *atollpb.KillActor)
	// Borrows sends a borrower's standalone report to the owner's node
	// (it must not block). Optional: without it such reports are dropped.
	Borrows func(node ids.NodeID, m *atollpb.BorrowReport)
	// GeneratorAck, if set, passes on a generator task's ack for an
	// attempt this raylet does not run, which it may have forwarded: hops
	// is the link the ack came on (0 from an owner of this node, else the
	// ForwardGeneratorAck's), and it goes on the next one. Nil: dropped.
	GeneratorAck func(ack *atollpb.GeneratorAck, hops int32)
	// SpreadThreshold is the utilisation past which hybrid placement
	// leaves the local node; default DefaultSpreadThreshold.
	SpreadThreshold float64
}

// maxHops bounds how often a task spills back from node to node.
const maxHops = 4

// PeerView is the gateway's latest view of the other live nodes; it
// replaces the raylet's previous one.
type PeerView struct {
	Nodes []NodeView
}

// ForwardCall asks the raylet to send an actor call to a host on another
// node (from a worker process's proxy); the sender receives the result.
type ForwardCall struct {
	Node    ids.NodeID
	Address string
	Spec    *atollpb.TaskSpec
}

// KillHostedActor kills an actor if this raylet hosts it, and never asks
// the other nodes.
type KillHostedActor struct{ Msg *atollpb.KillActor }

// Drain makes the raylet place every task submitted or forwarded to it
// from now on on another node (when one can run it; a hard node affinity
// to this node still runs here), while the tasks it queued or runs
// already finish here. It is how a node being drained stops taking work;
// there is no way back (the node leaves the cluster when drained).
type Drain struct{}

// NodeGone tells the raylet a node left the cluster: the actors it hosts
// for owners on that node die with them (their handles are gone), except
// detached ones, which outlive their owner.
type NodeGone struct{ Node ids.NodeID }

func (r *raylet) ownerNodeGone(ctx actor.Context, node ids.NodeID) {
	owner := node.String()
	for _, a := range r.actors {
		if a.spec.OwnerAddress == owner && !a.spec.GetActorCreation().GetDetached() {
			r.killActor(ctx, &atollpb.KillActor{ActorId: a.id.Bytes(), NoRestart: true, Reason: "its owner's node " + node.Short() + " left the cluster"}, true)
		}
	}
}

// waitingTask is a task no live node can run yet.
type waitingTask struct {
	t         *task
	forwarded bool
	hops      int32
}

// SplitActorAddress splits a cluster actor address "<node hex>/<local>"
// into the node and the host's local address; a plain local address
// yields a zero node.
func SplitActorAddress(address string) (ids.NodeID, string) {
	if i := strings.IndexByte(address, '/'); i > 0 {
		if b, err := hex.DecodeString(address[:i]); err == nil {
			if node, err := ids.FromBytes(b); err == nil {
				return node, address[i+1:]
			}
		}
	}
	return ids.NodeID{}, address
}

// actorAddress is the address callers use for a host: qualified with the
// node in a cluster.
func (r *raylet) actorAddress(pid *actor.PID) string {
	if r.cfg.Cluster != nil {
		return r.cfg.NodeID.String() + "/" + pid.Id
	}
	return pid.Id
}

func (r *raylet) forwardCall(ctx actor.Context, m *ForwardCall) {
	if r.cfg.Cluster == nil {
		return
	}
	r.cfg.Cluster.CallActor(m.Node, m.Address, m.Spec, ctx.Sender())
}

// defaultBinary is the program of workers started ahead of any task.
func (r *raylet) defaultBinary() string {
	if r.cfg.Process == nil {
		return ""
	}
	return r.cfg.Process.Binary
}

// binaryFor is the program that runs spec: the node's worker binary if it
// has one, else the submitting driver's.
func (r *raylet) binaryFor(spec *atollpb.TaskSpec) string {
	if r.cfg.Process == nil {
		return ""
	}
	if r.cfg.Process.Binary != "" {
		return r.cfg.Process.Binary
	}
	return spec.WorkerBinary
}

// processConfig is the worker-process configuration for binary.
func (r *raylet) processConfig(binary string) *ProcessConfig {
	if binary == r.cfg.Process.Binary {
		return r.cfg.Process
	}
	if pc := r.procCfgs[binary]; pc != nil {
		return pc
	}
	pc := *r.cfg.Process
	pc.Binary, pc.Args = binary, []string{}
	r.procCfgs[binary] = &pc
	return &pc
}

// placeLocally decides where a submitted task runs. It reports true if it
// runs here; otherwise it was forwarded, is waiting for a node able to
// run it, or failed (its owner was told).
func (r *raylet) placeLocally(ctx actor.Context, t *task, forwarded bool, hops int32) bool {
	p := Placement{TaskName: t.spec.Name, TaskID: t.id.String(), Demand: t.demand, Strategy: t.spec.Scheduling}
	if r.draining {
		// Anywhere but here; here only if no other node can run it.
		p.Exclude = r.cfg.NodeID
		if forwarded && hops >= maxHops {
			return Feasible(r.cfg.Resources, t.demand) || r.failUnschedulable(ctx, t)
		}
	} else if forwarded {
		// Placed here by a peer: run it unless this node cannot at all.
		if Feasible(r.cfg.Resources, t.demand) {
			return true
		}
		if hops >= maxHops {
			return r.failUnschedulable(ctx, t)
		}
		p.Exclude = r.cfg.NodeID
	}
	p.ArgBytes = argBytes(t.spec)
	node, err := Place(p, r.cfg.NodeID, r.views(), &r.spread, r.cfg.Cluster.SpreadThreshold)
	switch {
	case errors.Is(err, ErrNoFeasibleNode):
		if !r.replacing && (len(r.waiting) == 0 || r.waiting[len(r.waiting)-1].t.spec.Function != t.spec.Function) {
			r.cfg.Logger.Warn("no node in the cluster can run the task yet; it waits for one",
				"task", t.spec.Name, "demand", t.demand.String())
		}
		r.waiting = append(r.waiting, &waitingTask{t: t, forwarded: forwarded, hops: hops})
		return false
	case err != nil:
		r.fail(ctx, t, err)
		return false
	case node == r.cfg.NodeID:
		return true
	}
	if v := r.peers[node]; v != nil {
		v.Reserve(t.demand)
	}
	r.stats.Forwarded++
	_, span := r.tracer.Start(telemetry.Extract(context.Background(), t.spec.Trace), "forward "+t.spec.Name,
		trace.WithAttributes(attribute.String("atoll.task_id", t.id.String()), attribute.String("atoll.node_id", r.cfg.NodeID.String()),
			attribute.String("atoll.target_node_id", node.String()), attribute.Int("atoll.hops", int(hops+1))))
	span.End()
	r.cfg.Cluster.Forward(node, t.spec, t.owner, hops+1)
	return false
}

// failUnschedulable fails a task that went through too many raylets.
func (r *raylet) failUnschedulable(ctx actor.Context, t *task) bool {
	r.fail(ctx, t, &errs.UnschedulableError{TaskName: t.spec.Name, TaskID: t.id.String(),
		Reason: "spilled back too often: no node could run it"})
	return false
}

func (r *raylet) fail(ctx actor.Context, t *task, err error) {
	r.reply(ctx, t.owner, &atollpb.TaskResult{TaskId: t.spec.TaskId, Attempt: t.spec.Attempt, Error: errs.ToProto(err)})
}

// views is the cluster as placement sees it: this node, live, and its peers.
func (r *raylet) views() []NodeView {
	out := make([]NodeView, 0, len(r.peers)+1)
	out = append(out, NodeView{ID: r.cfg.NodeID, Total: r.cfg.Resources, Available: r.avail, QueuedCPU: r.queuedCPU()})
	for _, v := range r.peers {
		out = append(out, *v)
	}
	return out
}

// queuedCPU is the CPU demanded by the tasks queued here.
func (r *raylet) queuedCPU() float64 {
	var cpu float64
	for _, cq := range r.classes {
		cpu += cq.demand[CPU] * float64(len(cq.tasks))
	}
	return cpu
}

// peerView replaces the view of the other nodes and, if a node joined,
// left or changed its total resources, places the tasks that were waiting
// for a node able to run them. (Views come with every peer's load report,
// ten a second per peer: placing every waiting task again on each would
// cost O(waiting) each time for nothing.)
func (r *raylet) peerView(ctx actor.Context, m *PeerView) {
	clear(r.peers)
	for i := range m.Nodes {
		v := m.Nodes[i]
		if v.ID != r.cfg.NodeID {
			r.peers[v.ID] = &v
		}
	}
	if r.totalsChanged() && len(r.waiting) > 0 {
		waiting := r.waiting
		r.waiting = nil
		r.replacing = true // warned about them already
		for _, w := range waiting {
			if r.placeLocally(ctx, w.t, w.forwarded, w.hops) {
				r.enqueue(ctx, w.t)
			}
		}
		r.replacing = false
	}
	r.spillBack(ctx)
}

// totalsChanged reports whether the peers or their total resources
// differ from when it was last called, and remembers them.
func (r *raylet) totalsChanged() bool {
	same := len(r.totals) == len(r.peers)
	for id, v := range r.peers {
		if !same {
			break
		}
		t, ok := r.totals[id]
		same = ok && maps.Equal(t, v.Total)
	}
	if same {
		return false
	}
	r.totals = make(map[ids.NodeID]Resources, len(r.peers))
	for id, v := range r.peers {
		r.totals[id] = v.Total.Clone()
	}
	return true
}

// spillBack forwards tasks queued here to peers that report room for them
// and no queue of their own (Ray's spillback): placement happened when the
// task arrived, with a view that may have gone stale, or tasks here ran
// longer than those elsewhere. Actor creations, tasks placed by SPREAD or
// a node affinity, and tasks that went through maxHops raylets stay.
func (r *raylet) spillBack(ctx actor.Context) {
	if r.queued == 0 || len(r.peers) == 0 {
		return
	}
	var idle []*NodeView
	for _, v := range r.peers {
		if v.QueuedCPU == 0 {
			idle = append(idle, v)
		}
	}
	if len(idle) == 0 {
		return
	}
	slices.SortFunc(idle, func(a, b *NodeView) int { return bytes.Compare(a.ID[:], b.ID[:]) })
	classes := make([]*classQueue, 0, len(r.classes))
	for _, cq := range r.classes {
		if !cq.noSlot && len(cq.tasks) > 0 {
			classes = append(classes, cq)
		}
	}
	slices.SortFunc(classes, func(a, b *classQueue) int { return cmp.Compare(a.tasks[0].seq, b.tasks[0].seq) })
	for _, v := range idle {
		for _, cq := range classes {
			kept := cq.tasks[:0]
			for _, t := range cq.tasks {
				if !movable(t) || !Feasible(v.Available, t.demand) {
					kept = append(kept, t)
					continue
				}
				v.Reserve(t.demand)
				r.queued--
				r.stats.Forwarded++
				r.stats.SpilledBack++
				t.queueSpan.SetAttributes(attribute.String("atoll.pending_reason", "spilled_back"),
					attribute.String("atoll.target_node_id", v.ID.String()))
				t.queueSpan.End()
				r.cfg.Cluster.Forward(v.ID, t.spec, t.owner, t.hops+1)
			}
			clear(cq.tasks[len(kept):])
			cq.tasks = kept
			if len(cq.tasks) == 0 {
				delete(r.classes, cq.key)
			}
		}
	}
}

// movable reports whether a queued task may spill back to another node.
func movable(t *task) bool {
	return !t.isActor && t.hops+1 < maxHops && t.spec.GetScheduling().GetKind() == atollpb.SchedulingStrategy_DEFAULT
}

// cancelWaiting cancels a task waiting for a node.
func (r *raylet) cancelWaiting(ctx actor.Context, id ids.TaskID, other func(*task) bool) bool {
	for i, w := range r.waiting {
		if w.t.id == id && !other(w.t) {
			r.waiting = append(r.waiting[:i], r.waiting[i+1:]...)
			r.fail(ctx, w.t, &errs.CancelledError{TaskName: w.t.spec.Name, TaskID: id.String()})
			return true
		}
	}
	return false
}

// argBytes sums the bytes of a task's object arguments per node holding
// them, for locality.
func argBytes(spec *atollpb.TaskSpec) map[ids.NodeID]uint64 {
	var m map[ids.NodeID]uint64
	add := func(node []byte, n uint64) {
		id, err := ids.FromBytes(node)
		if err != nil || n == 0 {
			return
		}
		if m == nil {
			m = map[ids.NodeID]uint64{}
		}
		m[id] += n
	}
	for _, a := range spec.Args {
		if ref := a.GetRef(); ref != nil {
			add(ref.NodeId, ref.Size)
		}
	}
	for _, b := range spec.Borrowed {
		if st := b.GetValue().GetStored(); st != nil {
			add(st.NodeId, st.Length)
		}
	}
	return m
}
