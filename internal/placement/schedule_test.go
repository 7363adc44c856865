package placement

import (
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

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

// TestShallowCopy keeps shallowCopy copying every field of an entry.
func TestShallowCopy(t *testing.T) {
	in := &atollpb.PlacementGroupInfo{}
	m := in.ProtoReflect()
	fields := m.Descriptor().Fields()
	for i := range fields.Len() {
		f := fields.Get(i)
		switch {
		case f.IsList():
			l := m.Mutable(f).List()
			l.Append(l.NewElement())
			if f.Kind() == protoreflect.BytesKind {
				l.Set(0, protoreflect.ValueOfBytes([]byte{1}))
			}
		case f.Kind() == protoreflect.BoolKind:
			m.Set(f, protoreflect.ValueOfBool(true))
		case f.Kind() == protoreflect.StringKind:
			m.Set(f, protoreflect.ValueOfString("x"))
		case f.Kind() == protoreflect.BytesKind:
			m.Set(f, protoreflect.ValueOfBytes([]byte{1}))
		case f.Kind() == protoreflect.EnumKind:
			m.Set(f, protoreflect.ValueOfEnum(1))
		case f.Kind() == protoreflect.Int64Kind:
			m.Set(f, protoreflect.ValueOfInt64(1))
		case f.Kind() == protoreflect.Int32Kind:
			m.Set(f, protoreflect.ValueOfInt32(1))
		default:
			t.Fatalf("field %s of kind %v: teach this test to set it", f.Name(), f.Kind())
		}
	}
	if out := shallowCopy(in); !proto.Equal(in, out) {
		t.Fatalf("shallowCopy drops a field:\n%v\n%v", in, out)
	}
}
