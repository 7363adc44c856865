package placement

import (
	"strings"
	"testing"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/ids"
	"github.com/atoll-runtime/atoll/internal/raylet"
)

// TestSchedule checks each strategy's choices over small clusters.
func TestSchedule(t *testing.T) {
	node := func(name string, total, avail float64) NodeView {
		var id ids.NodeID
		copy(id[:], name)
		return NodeView{ID: id, Total: raylet.Resources{"CPU": total}, Available: raylet.Resources{"CPU": avail}}
	}
	cpu := func(v ...float64) []raylet.Resources {
		out := make([]raylet.Resources, len(v))
		for i, c := range v {
			out[i] = raylet.Resources{"CPU": c}
		}
		return out
	}
	all := func(n int) []int {
		out := make([]int, n)
		for i := range out {
			out[i] = i
		}
		return out
	}
	name := func(id ids.NodeID) string { return strings.TrimRight(string(id[:]), "\x00") }
	nodes := []NodeView{node("a", 4, 4), node("b", 4, 1), node("c", 4, 2)}
	for _, tc := range []struct {
		strategy   atollpb.PlacementStrategy
		bundles    []raylet.Resources
		want       string // node per bundle, or "!" + a part of the reason
		infeasible bool
	}{
		// Best fit: the node with the least room left that holds them all.
		{atollpb.PlacementStrategy_STRICT_PACK, cpu(1, 1), "cc", false},
		{atollpb.PlacementStrategy_STRICT_PACK, cpu(2, 2), "aa", false},
		{atollpb.PlacementStrategy_STRICT_PACK, cpu(3, 2), "!STRICT_PACK: no node has CPU=5", true},
		{atollpb.PlacementStrategy_STRICT_PACK, cpu(2, 1, 1), "aaa", false},
		{atollpb.PlacementStrategy_PACK, cpu(1), "b", false},
		// Not on one node: the largest first, onto the roomiest, then
		// where the group is.
		{atollpb.PlacementStrategy_PACK, cpu(3, 2, 1), "aca", false},
		{atollpb.PlacementStrategy_SPREAD, cpu(1, 1, 1), "acb", false},
		{atollpb.PlacementStrategy_SPREAD, cpu(1, 1, 1, 1), "acba", false},
		{atollpb.PlacementStrategy_STRICT_SPREAD, cpu(1, 1, 1), "acb", false},
		{atollpb.PlacementStrategy_STRICT_SPREAD, cpu(2, 2, 2), "!STRICT_SPREAD", false},
		{atollpb.PlacementStrategy_STRICT_SPREAD, cpu(1, 1, 1, 1), "!STRICT_SPREAD: 4 bundles need 4 nodes", true},
	} {
		v := Schedule(Request{Strategy: tc.strategy, Bundles: tc.bundles, Need: all(len(tc.bundles)), Placed: make([]ids.NodeID, len(tc.bundles))}, nodes)
		if strings.HasPrefix(tc.want, "!") {
			if !strings.Contains(v.Reason, tc.want[1:]) || v.Infeasible != tc.infeasible {
				t.Errorf("%v %v: got %q infeasible=%v, want a reason with %q infeasible=%v", tc.strategy, tc.bundles, v.Reason, v.Infeasible, tc.want[1:], tc.infeasible)
			}
			continue
		}
		var got strings.Builder
		for i := range tc.bundles {
			got.WriteString(name(v.Nodes[i]))
		}
		if v.Reason != "" || got.String() != tc.want {
			t.Errorf("%v %v: got %q (%s), want %q", tc.strategy, tc.bundles, got.String(), v.Reason, tc.want)
		}
	}
}
