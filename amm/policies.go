package amm

import (
	"cmp"
	"slices"
)

// ReduceReplicas drops the copies an object no longer needs: every copy
// but its primary (or, with the primary gone, but one), and beyond the
// count Replicate tracks for it. It drops on the most loaded nodes first
// and never suggests dropping a copy in use (Decide would refuse it).
// Copies on retiring nodes are left to RetireNode.
type ReduceReplicas struct{}

// Name implements Policy.
func (ReduceReplicas) Name() string { return "ReduceReplicas" }

// Suggest implements Policy.
func (ReduceReplicas) Suggest(s *Snapshot) []Suggestion {
	var out []Suggestion
	for _, o := range s.sortedObjects() {
		if o.Replicas == AllNodes {
			continue
		}
		keep := max(1, o.Replicas)
		var live int
		var droppable []*Node
		for _, c := range o.Copies {
			n := s.Nodes[c.Node]
			if n == nil || n.Retiring {
				continue
			}
			live++
			if !c.Primary && !c.Busy() {
				droppable = append(droppable, n)
			}
		}
		// Most loaded first.
		slices.SortFunc(droppable, func(a, b *Node) int { return byLoad(b, a) })
		for _, n := range droppable {
			if live <= keep {
				break
			}
			out = append(out, Suggestion{Action: ActionDrop, Object: o.ID, Node: n.ID})
			live--
		}
	}
	return out
}

// Replicate keeps the number of copies of each object with a tracked
// count (Object.Replicas; AllNodes: one on every node that is neither
// retiring nor a driver's), creating the missing ones on the least loaded
// nodes. A copy lost with its node is restored on the next round, as long
// as one copy lives.
type Replicate struct{}

// Name implements Policy.
func (Replicate) Name() string { return "Replicate" }

// Suggest implements Policy.
func (Replicate) Suggest(s *Snapshot) []Suggestion {
	var out []Suggestion
	nodes := s.sortedNodes()
	var eligible []*Node
	for _, n := range nodes {
		if !n.Retiring && !n.Driver {
			eligible = append(eligible, n)
		}
	}
	slices.SortFunc(eligible, byLoad)
	for _, o := range s.sortedObjects() {
		if o.Replicas == 0 {
			continue
		}
		want := o.Replicas
		if want == AllNodes {
			want = len(eligible)
		}
		var have int
		for _, c := range o.Copies {
			if n := s.Nodes[c.Node]; n != nil && !n.Retiring {
				have++
			}
		}
		for _, n := range eligible {
			if have >= want {
				break
			}
			if _, ok := o.Copy(n.ID); ok {
				continue
			}
			out = append(out, Suggestion{Action: ActionReplicate, Object: o.ID, Node: n.ID})
			have++
		}
	}
	return out
}

// RetireNode moves the objects that would be lost with a retiring node off
// it: an object whose every copy is on retiring nodes gets a copy on the
// least loaded node that is neither retiring nor a driver's (where it
// fits, which Decide checks; the next round tries again). Once a copy
// lives elsewhere, the retiring node's copy is dropped, unless it is the
// primary (it goes when the node leaves).
type RetireNode struct{}

// Name implements Policy.
func (RetireNode) Name() string { return "RetireNode" }

// Suggest implements Policy.
func (RetireNode) Suggest(s *Snapshot) []Suggestion {
	var out []Suggestion
	var targets []*Node
	for _, n := range s.sortedNodes() {
		if !n.Retiring && !n.Driver {
			targets = append(targets, n)
		}
	}
	// Projected use, so that one round spreads objects over the targets.
	used := map[NodeID]uint64{}
	for _, n := range targets {
		used[n.ID] = n.Used
	}
	for _, o := range s.sortedObjects() {
		var onRetiring []NodeID
		var elsewhere bool
		for _, c := range o.Copies {
			n := s.Nodes[c.Node]
			switch {
			case n == nil:
			case n.Retiring:
				onRetiring = append(onRetiring, c.Node)
			case !c.Pulling:
				elsewhere = true
			}
		}
		if len(onRetiring) == 0 {
			continue
		}
		if elsewhere {
			for _, node := range onRetiring {
				if c, _ := o.Copy(node); !c.Primary && !c.Busy() {
					out = append(out, Suggestion{Action: ActionDrop, Object: o.ID, Node: node})
				}
			}
			continue
		}
		var best *Node
		for _, n := range targets {
			if _, ok := o.Copy(n.ID); ok {
				best = nil // a copy is being pulled there already
				break
			}
			if best == nil || cmp.Compare(frac(used[n.ID], n.Capacity), frac(used[best.ID], best.Capacity)) < 0 {
				best = n
			}
		}
		if best != nil {
			used[best.ID] += o.Size
			out = append(out, Suggestion{Action: ActionReplicate, Object: o.ID, Node: best.ID})
		}
	}
	return out
}

// Rebalance evens out store use while work runs: from every node whose use
// (a fraction of its capacity) is above the mean of the nodes by more than
// Threshold/2, it moves copies to nodes below the mean by more than
// Threshold/2, until the sender reaches the mean. A move (ActionMove)
// replicates the object on the least loaded recipient, then drops the
// sender's copy if the replica was made; only
// copies that are not primaries move (a primary stays with its node), and
// never to a node holding the object already. Drivers' and retiring nodes
// take no part.
type Rebalance struct {
	// Threshold is the spread of use tolerated around the mean, as a
	// fraction of capacity; default DefaultRebalanceThreshold.
	Threshold float64
}

// DefaultRebalanceThreshold is Rebalance.Threshold's default (Dask's
// rebalance sender/recipient thresholds are 10% apart as well).
const DefaultRebalanceThreshold = 0.1

// Name implements Policy.
func (Rebalance) Name() string { return "Rebalance" }

// Suggest implements Policy.
func (r Rebalance) Suggest(s *Snapshot) []Suggestion {
	th := r.Threshold
	if th <= 0 {
		th = DefaultRebalanceThreshold
	}
	var nodes []*Node
	var mean float64
	for _, n := range s.sortedNodes() {
		if !n.Retiring && !n.Driver && n.Capacity > 0 {
			nodes = append(nodes, n)
			mean += n.Fraction()
		}
	}
	if len(nodes) < 2 {
		return nil
	}
	mean /= float64(len(nodes))
	used := map[NodeID]uint64{}
	for _, n := range nodes {
		used[n.ID] = n.Used
	}
	var senders, recipients []*Node
	for _, n := range nodes {
		switch f := n.Fraction(); {
		case f > mean+th/2:
			senders = append(senders, n)
		case f < mean-th/2:
			recipients = append(recipients, n)
		}
	}
	if len(senders) == 0 || len(recipients) == 0 {
		return nil
	}
	slices.SortFunc(senders, func(a, b *Node) int { return byLoad(b, a) })
	// The movable copies of each sender, largest first.
	movable := map[NodeID][]*Object{}
	for _, o := range s.sortedObjects() {
		for _, c := range o.Copies {
			if !c.Primary && !c.Busy() {
				movable[c.Node] = append(movable[c.Node], o)
			}
		}
	}
	var out []Suggestion
	for _, snd := range senders {
		objs := movable[snd.ID]
		slices.SortStableFunc(objs, func(a, b *Object) int { return cmp.Compare(b.Size, a.Size) })
		for _, o := range objs {
			if frac(used[snd.ID], snd.Capacity) <= mean {
				break
			}
			var to *Node
			for _, rc := range recipients {
				if _, ok := o.Copy(rc.ID); ok {
					continue
				}
				if frac(used[rc.ID]+o.Size, rc.Capacity) > mean {
					continue // it would overshoot the mean there
				}
				if to == nil || frac(used[rc.ID], rc.Capacity) < frac(used[to.ID], to.Capacity) {
					to = rc
				}
			}
			if to == nil {
				continue
			}
			used[to.ID] += o.Size
			used[snd.ID] -= min(used[snd.ID], o.Size)
			out = append(out, Suggestion{Action: ActionMove, Object: o.ID, Node: to.ID, From: snd.ID})
		}
	}
	return out
}

func frac(used, capacity uint64) float64 {
	if capacity == 0 {
		return 0
	}
	return float64(used) / float64(capacity)
}
