package raylet

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/ids"
)

// NodeView is what a raylet knows of one node of the cluster (from the
// node's load reports).
type NodeView struct {
	ID        ids.NodeID
	Total     Resources
	Available Resources
	QueuedCPU float64 // CPU demanded by tasks queued on that node
}

// Utilization is the node's critical-resource utilisation: the max over
// the resources k with Total[k] > 0 of
//
//	(Total[k] - Available[k] + queued_k) / Total[k]
//
// where queued_k is QueuedCPU for CPU and 0 otherwise (a resource missing
// from Available counts as fully used). It may exceed 1 when tasks queue
// on the node. A node with no resources at all (no Total[k] > 0, e.g. a
// driver-only node) has utilisation +Inf: it is never preferred by
// utilisation, and it is infeasible for any task demanding a resource
// anyway.
func (v NodeView) Utilization() float64 {
	util, some := 0.0, false
	for k, total := range v.Total {
		if total <= 0 {
			continue
		}
		used := total - v.Available[k]
		if k == CPU {
			used += v.QueuedCPU
		}
		util, some = max(util, used/total), true
	}
	if !some {
		return math.Inf(1)
	}
	return util
}

// Reserve records that a task with demand was just placed on the node, so
// that the next decisions before the node's next load report see it: it
// takes demand from Available when Available covers it, otherwise it adds
// demand[CPU] to QueuedCPU (the task queues there). Available is replaced
// by an updated copy, never modified in place, so views may share the
// maps of a load report.
func (v *NodeView) Reserve(demand Resources) {
	if !v.Available.Fits(demand) {
		v.QueuedCPU += demand[CPU]
		return
	}
	avail := v.Available.Clone()
	if avail == nil {
		avail = Resources{}
	}
	avail.Sub(demand)
	v.Available = avail
}

// Placement is one placement question.
type Placement struct {
	TaskName string
	TaskID   string
	Demand   Resources
	// Strategy is the task's scheduling strategy; nil: DEFAULT.
	Strategy *atollpb.SchedulingStrategy
	// ArgBytes is how many bytes of the task's arguments each node holds
	// (locality).
	ArgBytes map[ids.NodeID]uint64
	// Exclude is a node that already refused the task (spillback); zero:
	// none.
	Exclude ids.NodeID
}

// DefaultSpreadThreshold is the utilisation past which hybrid placement
// leaves the local node (Ray's scheduler_spread_threshold, 0.5).
const DefaultSpreadThreshold = 0.5

// ErrNoFeasibleNode: no live node can ever run the demand (the caller keeps
// the task waiting for a node to join).
var ErrNoFeasibleNode = errors.New("raylet: no node of the cluster can run the task's demand")

// Place picks the node for p among nodes, the live nodes of the cluster
// (which include self's own view). spread is the caller's round-robin
// cursor for SPREAD (Place advances it; nil: always start at the first
// candidate). Place does not modify nodes; the caller calls Reserve on the
// chosen node's view so that the next decisions see the task. The result
// depends only on its arguments (no randomness, no map order).
//
// A node is feasible when Feasible(node.Total, p.Demand). The candidates
// are the feasible nodes other than p.Exclude (the node that refused the
// task). When no candidate is left but p.Exclude itself is feasible, it is
// chosen anyway (the task queues there): ErrNoFeasibleNode is kept for a
// demand no live node can ever run.
//
// By p.Strategy.Kind:
//
//   - NODE_AFFINITY: the target node when it is in nodes and feasible, even
//     when busy (the task queues there) and even when it is p.Exclude.
//     Otherwise a soft affinity falls through to DEFAULT and a hard one
//     fails with an *errs.UnschedulableError saying the node is dead or
//     not in the cluster, or cannot hold the demand; a zero or malformed
//     node id is an UnschedulableError too when hard, DEFAULT when soft.
//   - SPREAD: round robin over the candidates sorted by node id; when some
//     of them have Available covering the demand, over those only. It
//     picks candidates[*spread % len] and increments *spread.
//   - PLACEMENT_GROUP: as DEFAULT (the demand names the group's
//     resources, so only the nodes holding its bundles are feasible).
//   - DEFAULT (and nil Strategy):
//     1. locality: among the candidates holding argument bytes
//     (p.ArgBytes > 0), the one holding the most (ties: self, then the
//     lowest id) wins if its Utilization is below 1;
//     2. hybrid: self, if it is a candidate with Utilization below
//     threshold (threshold <= 0 means DefaultSpreadThreshold);
//     3. otherwise the candidate with the lowest Utilization (ties: self,
//     then the lowest id).
//   - an unknown kind is an UnschedulableError.
//
// When no node is feasible, DEFAULT and SPREAD return ErrNoFeasibleNode.
func Place(p Placement, self ids.NodeID, nodes []NodeView, spread *uint64, threshold float64) (ids.NodeID, error) {
	if !(threshold > 0) {
		threshold = DefaultSpreadThreshold
	}
	switch kind := p.Strategy.GetKind(); kind {
	case atollpb.SchedulingStrategy_DEFAULT, atollpb.SchedulingStrategy_PLACEMENT_GROUP:
		// A group's tasks demand its bundles' resources, which only
		// the nodes holding them have: the default among those.
	case atollpb.SchedulingStrategy_SPREAD:
		return placeSpread(p, nodes, spread)
	case atollpb.SchedulingStrategy_NODE_AFFINITY:
		if id, reason := placeAffinity(p, nodes); reason == "" {
			return id, nil
		} else if !p.Strategy.GetSoft() {
			return ids.NodeID{}, p.unschedulable(reason)
		}
	default:
		return ids.NodeID{}, p.unschedulable(fmt.Sprintf("unknown scheduling strategy kind %d", int32(kind)))
	}
	return placeDefault(p, self, nodes, threshold)
}

func (p *Placement) unschedulable(reason string) error {
	return &errs.UnschedulableError{TaskName: p.TaskName, TaskID: p.TaskID, Reason: reason}
}

// placeAffinity returns the affinity target when it can run p, or why not.
func placeAffinity(p Placement, nodes []NodeView) (ids.NodeID, string) {
	target, err := ids.FromBytes(p.Strategy.GetNodeId())
	switch {
	case err != nil:
		return ids.NodeID{}, fmt.Sprintf("node affinity names a malformed node id (%d bytes: %x)", len(p.Strategy.GetNodeId()), p.Strategy.GetNodeId())
	case target.IsZero():
		return ids.NodeID{}, "node affinity names no node (zero node id)"
	}
	i := slices.IndexFunc(nodes, func(n NodeView) bool { return n.ID == target })
	switch {
	case i < 0:
		return ids.NodeID{}, fmt.Sprintf("node %s is dead or not in the cluster", target.Short())
	case !Feasible(nodes[i].Total, p.Demand):
		return ids.NodeID{}, fmt.Sprintf("node %s has %s in all, the task demands %s",
			target.Short(), describe(nodes[i].Total), describe(p.Demand))
	}
	return target, ""
}

// describe renders resources for error messages.
func describe(r Resources) string {
	if s := r.String(); s != "" {
		return s
	}
	return "no resources"
}

// candidates returns the feasible nodes other than p.Exclude or, when
// there are none, p.Exclude if it is feasible (a last resort), in the order
// of nodes.
func candidates(p Placement, nodes []NodeView) []*NodeView {
	var out, excluded []*NodeView
	for i := range nodes {
		n := &nodes[i]
		switch {
		case !Feasible(n.Total, p.Demand):
		case !p.Exclude.IsZero() && n.ID == p.Exclude:
			excluded = append(excluded, n)
		default:
			out = append(out, n)
		}
	}
	if len(out) == 0 {
		return excluded
	}
	return out
}

func placeSpread(p Placement, nodes []NodeView, spread *uint64) (ids.NodeID, error) {
	cands := candidates(p, nodes)
	if len(cands) == 0 {
		return ids.NodeID{}, ErrNoFeasibleNode
	}
	slices.SortStableFunc(cands, func(a, b *NodeView) int { return bytes.Compare(a.ID[:], b.ID[:]) })
	if room := slices.DeleteFunc(slices.Clone(cands), func(n *NodeView) bool { return !n.Available.Fits(p.Demand) }); len(room) > 0 {
		cands = room
	}
	var cursor uint64
	if spread != nil {
		cursor = *spread
		*spread++
	}
	return cands[cursor%uint64(len(cands))].ID, nil
}

func placeDefault(p Placement, self ids.NodeID, nodes []NodeView, threshold float64) (ids.NodeID, error) {
	cands := candidates(p, nodes)
	if len(cands) == 0 {
		return ids.NodeID{}, ErrNoFeasibleNode
	}
	// before orders equal candidates: self first, then the lowest id.
	before := func(a, b *NodeView) bool {
		if (a.ID == self) != (b.ID == self) {
			return a.ID == self
		}
		return bytes.Compare(a.ID[:], b.ID[:]) < 0
	}

	// 1. Locality.
	var local *NodeView
	for _, n := range cands {
		b := p.ArgBytes[n.ID]
		if b == 0 {
			continue
		}
		if local == nil || b > p.ArgBytes[local.ID] || b == p.ArgBytes[local.ID] && before(n, local) {
			local = n
		}
	}
	if local != nil && local.Utilization() < 1 {
		return local.ID, nil
	}

	// 2. Hybrid: stay local while self is not too busy.
	for _, n := range cands {
		if n.ID == self && n.Utilization() < threshold {
			return self, nil
		}
	}

	// 3. The least utilised candidate.
	best, bestUtil := cands[0], cands[0].Utilization()
	for _, n := range cands[1:] {
		if u := n.Utilization(); u < bestUtil || u == bestUtil && before(n, best) {
			best, bestUtil = n, u
		}
	}
	return best.ID, nil
}
