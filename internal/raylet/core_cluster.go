package raylet

import (
	"bytes"
	"cmp"
	"errors"
	"maps"
	"slices"
	"time"

	"go.opentelemetry.io/otel/attribute"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/ids"
)

// Cluster placement: where a task submitted here runs (Place over the
// peers' views), the tasks waiting for a node able to run them, and
// spillback of queued tasks to idle peers.

// maxHops bounds how often a task spills back from node to node.
const maxHops = 4

// waitingTask is a task no live node can run yet.
type waitingTask struct {
	t         *task
	forwarded bool
	hops      int32
}

// placeLocally decides where a submitted task runs. It reports true if it
// runs here; otherwise it was forwarded, is waiting for a node able to
// run it, or failed (its owner was told).
func (c *Core) placeLocally(t *task, forwarded bool, hops int32) bool {
	p := Placement{TaskName: t.spec.Name, TaskID: t.id.String(), Demand: t.demand, Strategy: t.spec.Scheduling}
	if c.draining {
		// Anywhere but here; here only if no other node can run it.
		p.Exclude = c.cfg.NodeID
		if forwarded && hops >= maxHops {
			return Feasible(c.total, t.demand) || c.failUnschedulable(t)
		}
	} else if forwarded {
		// Placed here by a peer: run it unless this node cannot at all.
		if Feasible(c.total, t.demand) {
			return true
		}
		if hops >= maxHops {
			return c.failUnschedulable(t)
		}
		p.Exclude = c.cfg.NodeID
	}
	p.ArgBytes = argBytes(t.spec)
	node, err := Place(p, c.cfg.NodeID, c.views(), &c.spread, c.cfg.SpreadThreshold)
	switch {
	case errors.Is(err, ErrNoFeasibleNode):
		if !c.replacing && !t.inGroup && (len(c.waiting) == 0 || c.waiting[len(c.waiting)-1].t.spec.Function != t.spec.Function) {
			c.cfg.Logger.Warn("no node in the cluster can run the task yet; it waits for one",
				"task", t.spec.Name, "demand", t.demand.String())
		}
		c.waiting = append(c.waiting, &waitingTask{t: t, forwarded: forwarded, hops: hops})
		return false
	case err != nil:
		c.fail(t, err)
		return false
	case node == c.cfg.NodeID:
		return true
	}
	if v := c.peers[node]; v != nil {
		v.Reserve(t.demand)
	}
	c.stats.Forwarded++
	c.emit(Forward{Node: node, Spec: t.spec, Owner: t.owner, Hops: hops + 1})
	return false
}

// failUnschedulable fails a task that went through too many raylets.
func (c *Core) failUnschedulable(t *task) bool {
	c.fail(t, &errs.UnschedulableError{TaskName: t.spec.Name, TaskID: t.id.String(),
		Reason: "spilled back too often: no node could run it"})
	return false
}

// views is the cluster as placement sees it: this node, live, and its peers.
func (c *Core) views() []NodeView {
	out := make([]NodeView, 0, len(c.peers)+1)
	out = append(out, NodeView{ID: c.cfg.NodeID, Total: c.total, Available: c.avail, QueuedCPU: c.queuedCPU()})
	for _, v := range c.peers {
		out = append(out, *v)
	}
	return out
}

// queuedCPU is the CPU demanded by the tasks queued here.
func (c *Core) queuedCPU() float64 {
	var cpu float64
	for _, cq := range c.classes {
		cpu += cq.demand[CPU] * float64(len(cq.tasks))
	}
	return cpu
}

// PeerView replaces the view of the other nodes and, if a node joined,
// left or changed its total resources, places the tasks that were waiting
// for a node able to run them. (Views come with every peer's load report,
// ten a second per peer: placing every waiting task again on each would
// cost O(waiting) each time for nothing.) Then queued tasks spill back to
// idle peers.
func (c *Core) PeerView(now time.Time, nodes []NodeView) {
	c.now = now
	clear(c.peers)
	for i := range nodes {
		v := nodes[i]
		if v.ID != c.cfg.NodeID {
			c.peers[v.ID] = &v
		}
	}
	if c.totalsChanged() {
		c.placeWaiting()
	}
	c.spillBack()
}

// totalsChanged reports whether the peers or their total resources
// differ from when it was last called, and remembers them.
func (c *Core) totalsChanged() bool {
	same := len(c.totals) == len(c.peers)
	for id, v := range c.peers {
		if !same {
			break
		}
		t, ok := c.totals[id]
		same = ok && maps.Equal(t, v.Total)
	}
	if same {
		return false
	}
	c.totals = make(map[ids.NodeID]Resources, len(c.peers))
	for id, v := range c.peers {
		c.totals[id] = v.Total.Clone()
	}
	return true
}

// spillBack forwards tasks queued here to peers that report room for them
// and no queue of their own (Ray's spillback): placement happened when the
// task arrived, with a view that may have gone stale, or tasks here ran
// longer than those elsewhere. Actor creations, tasks placed by SPREAD or
// a node affinity, and tasks that went through maxHops raylets stay (a
// placement group's tasks move only to peers holding room in its bundles).
func (c *Core) spillBack() {
	if c.queued == 0 || len(c.peers) == 0 {
		return
	}
	var idle []*NodeView
	for _, v := range c.peers {
		if v.QueuedCPU == 0 {
			idle = append(idle, v)
		}
	}
	if len(idle) == 0 {
		return
	}
	slices.SortFunc(idle, func(a, b *NodeView) int { return bytes.Compare(a.ID[:], b.ID[:]) })
	classes := make([]*classQueue, 0, len(c.classes))
	for _, cq := range c.classes {
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
				c.queued--
				c.stats.Forwarded++
				c.stats.SpilledBack++
				t.queueSpan.SetAttributes(attribute.String("atoll.pending_reason", "spilled_back"),
					attribute.String("atoll.target_node_id", v.ID.String()))
				t.queueSpan.End()
				c.emit(Forward{Node: v.ID, Spec: t.spec, Owner: t.owner, Hops: t.hops + 1, SpilledBack: true})
			}
			clear(cq.tasks[len(kept):])
			cq.tasks = kept
			if len(cq.tasks) == 0 {
				delete(c.classes, cq.key)
			}
		}
	}
}

// movable reports whether a queued task may spill back to another node.
func movable(t *task) bool {
	kind := t.spec.GetScheduling().GetKind()
	return !t.isActor && t.holder == nil && t.hops+1 < maxHops && (kind == atollpb.SchedulingStrategy_DEFAULT || kind == atollpb.SchedulingStrategy_PLACEMENT_GROUP)
}

// cancelWaiting cancels a task waiting for a node.
func (c *Core) cancelWaiting(id ids.TaskID, other func(*task) bool) bool {
	for i, w := range c.waiting {
		if w.t.id == id && !other(w.t) {
			c.waiting = append(c.waiting[:i], c.waiting[i+1:]...)
			c.fail(w.t, &errs.CancelledError{TaskName: w.t.spec.Name, TaskID: id.String()})
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
