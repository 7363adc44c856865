package placement

import (
	"bytes"
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/ids"
	"github.com/atoll-runtime/atoll/internal/raylet"
)

// NodeView is a node as bundle scheduling sees it: its plain resources in
// all (the placement groups' own left out) and those it has room for now.
type NodeView struct {
	ID        ids.NodeID
	Total     raylet.Resources
	Available raylet.Resources
}

// Request is one scheduling question: where the bundles Need (indices
// into Bundles) of a group go, the group's other bundles staying where
// Placed says (a zero node: not placed).
type Request struct {
	Strategy atollpb.PlacementStrategy
	Bundles  []raylet.Resources
	Need     []int
	Placed   []ids.NodeID
}

// Verdict is Schedule's answer: a node for each needed bundle, or why
// not; Infeasible when no node could hold them even empty (by totals), so
// only new nodes can help.
type Verdict struct {
	Nodes      map[int]ids.NodeID
	Reason     string
	Infeasible bool
}

// Schedule places the needed bundles of a group on nodes, by its
// strategy (Ray's):
//
//   - STRICT_PACK: every bundle on one node: the node with the least room
//     left once they are on it (best fit), preferring a node holding the
//     group's other bundles.
//   - PACK: on one node if one fits them all (best fit), else bundle by
//     bundle, largest first, each on the node already used by the group
//     with room for it, else the node with the most room.
//   - STRICT_SPREAD: every bundle on a node of its own, none holding
//     another bundle of the group; bundles largest first, each on the
//     free node with the most room that fits it.
//   - SPREAD: bundle by bundle, largest first, each on the node holding
//     the fewest bundles of the group, then the most room.
//
// Ties go to the lowest node id, so the answer depends on its arguments
// only. When the bundles do not fit now, Schedule says why, and whether
// they would fit the nodes' totals at all (Infeasible: they would not).
func Schedule(r Request, nodes []NodeView) Verdict {
	nodes = slices.Clone(nodes)
	slices.SortFunc(nodes, func(a, b NodeView) int { return bytes.Compare(a.ID[:], b.ID[:]) })
	if v := place(r, nodes, func(n NodeView) raylet.Resources { return n.Available }); v.Reason == "" {
		return v
	} else if byTotal := place(r, nodes, func(n NodeView) raylet.Resources { return n.Total }); byTotal.Reason != "" {
		return Verdict{Reason: byTotal.Reason, Infeasible: true}
	} else {
		return v
	}
}

// place schedules r with room(n) as each node's room.
func place(r Request, nodes []NodeView, room func(NodeView) raylet.Resources) Verdict {
	left := make([]raylet.Resources, len(nodes))
	for i, n := range nodes {
		left[i] = room(n).Clone()
		if left[i] == nil {
			left[i] = raylet.Resources{}
		}
	}
	initial := make([]raylet.Resources, len(nodes))
	for i := range left {
		initial[i] = left[i].Clone()
	}
	index := map[ids.NodeID]int{}
	for i, n := range nodes {
		index[n.ID] = i
	}
	// The group's bundles already placed, per node.
	holds := make([]int, len(nodes))
	for i, id := range r.Placed {
		if id.IsZero() || slices.Contains(r.Need, i) {
			continue
		}
		if j, ok := index[id]; ok {
			holds[j]++
		}
	}
	need := slices.Clone(r.Need)
	// Largest first (by the sum of its amounts; ties by index).
	slices.SortStableFunc(need, func(a, b int) int { return cmp.Compare(size(r.Bundles[b]), size(r.Bundles[a])) })
	out := map[int]ids.NodeID{}
	if len(need) == 0 {
		return Verdict{Nodes: out}
	}
	sum := raylet.Resources{}
	for _, i := range need {
		sum.Add(r.Bundles[i])
	}
	switch r.Strategy {
	case atollpb.PlacementStrategy_STRICT_PACK:
		j := bestFit(nodes, left, holds, sum)
		if j < 0 {
			return Verdict{Reason: fmt.Sprintf("STRICT_PACK: no node has %s available for the group's %d bundles%s", describe(sum), len(r.Bundles), largest(nodes, left))}
		}
		for _, i := range need {
			out[i] = nodes[j].ID
		}
	case atollpb.PlacementStrategy_PACK:
		if j := bestFit(nodes, left, holds, sum); j >= 0 {
			for _, i := range need {
				out[i] = nodes[j].ID
			}
			break
		}
		// A node the group uses already, else the roomiest.
		better := func(k, j int) bool {
			if (holds[k] > 0) != (holds[j] > 0) {
				return holds[k] > 0
			}
			return size(left[k]) > size(left[j])
		}
		for _, i := range need {
			j := -1
			for k := range nodes {
				if left[k].Fits(r.Bundles[i]) && (j < 0 || better(k, j)) {
					j = k
				}
			}
			if j < 0 {
				return Verdict{Reason: fmt.Sprintf("PACK: no node has %s available for bundle %d%s", describe(r.Bundles[i]), i, largest(nodes, left))}
			}
			left[j].Sub(r.Bundles[i])
			holds[j]++
			out[i] = nodes[j].ID
		}
	case atollpb.PlacementStrategy_STRICT_SPREAD, atollpb.PlacementStrategy_SPREAD:
		strict := r.Strategy == atollpb.PlacementStrategy_STRICT_SPREAD
		for _, i := range need {
			j := -1
			for k := range nodes {
				if !left[k].Fits(r.Bundles[i]) || strict && holds[k] > 0 {
					continue
				}
				if j < 0 || holds[k] < holds[j] || holds[k] == holds[j] && size(left[k]) > size(left[j]) {
					j = k
				}
			}
			if j < 0 {
				if strict {
					// The nodes that could take this bundle, had the
					// others not taken them.
					fit := 0
					for k := range nodes {
						if initial[k].Fits(r.Bundles[i]) && !holdsOther(r, nodes[k].ID) {
							fit++
						}
					}
					return Verdict{Reason: fmt.Sprintf("STRICT_SPREAD: %d bundles need %d nodes with room for one each; %d of the %d nodes have room for bundle %d (%s)",
						len(r.Bundles), len(r.Bundles), fit, len(nodes), i, describe(r.Bundles[i]))}
				}
				return Verdict{Reason: fmt.Sprintf("SPREAD: no node has %s available for bundle %d%s", describe(r.Bundles[i]), i, largest(nodes, left))}
			}
			left[j].Sub(r.Bundles[i])
			holds[j]++
			out[i] = nodes[j].ID
		}
	default:
		return Verdict{Reason: fmt.Sprintf("unknown strategy %d", int32(r.Strategy))}
	}
	return Verdict{Nodes: out}
}

// holdsOther reports whether node holds a bundle of r's group that r
// does not place again.
func holdsOther(r Request, node ids.NodeID) bool {
	for i, n := range r.Placed {
		if n == node && !slices.Contains(r.Need, i) {
			return true
		}
	}
	return false
}

// bestFit is the node with room for sum and the least room left once it
// is taken (a node holding the group's bundles first); -1 if none.
func bestFit(nodes []NodeView, left []raylet.Resources, holds []int, sum raylet.Resources) int {
	j, after := -1, math.Inf(1)
	for k := range nodes {
		if !left[k].Fits(sum) {
			continue
		}
		rest := left[k].Clone()
		rest.Sub(sum)
		s := size(rest)
		switch {
		case j < 0:
		case (holds[k] > 0) != (holds[j] > 0):
			if holds[k] == 0 {
				continue
			}
		case s >= after:
			continue
		}
		j, after = k, s
	}
	return j
}

// size sums a bundle's amounts (memory in GiB, so that bytes do not
// dwarf CPUs), to order bundles and nodes.
func size(r raylet.Resources) float64 {
	var s float64
	for k, v := range r {
		if v <= 0 {
			continue
		}
		if strings.Contains(strings.ToLower(k), "memory") {
			v /= 1 << 30
		}
		s += v
	}
	return s
}

// largest says what the roomiest node has, for a reason.
func largest(nodes []NodeView, left []raylet.Resources) string {
	if len(nodes) == 0 {
		return " (no node is alive)"
	}
	j := 0
	for k := range nodes {
		if size(left[k]) > size(left[j]) {
			j = k
		}
	}
	return fmt.Sprintf(" (%d nodes; the roomiest has %s)", len(nodes), describe(left[j]))
}

func describe(r raylet.Resources) string {
	r = raylet.PlainResources(r)
	for k, v := range r {
		if v <= 1e-9 {
			delete(r, k)
		}
	}
	if s := r.String(); s != "" {
		return s
	}
	return "nothing"
}
