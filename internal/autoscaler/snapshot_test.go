package autoscaler

import (
	"testing"
	"time"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/ids"
)

// TestSnapshotBundleNodesAreBusy: a node the placement-group table puts a
// bundle on is busy in the round's snapshot even while its last load
// report, sent before the bundle was committed, shows it idle, and its
// idle time starts again then. (Draining such a node stranded the
// group's actors: the node took no work, and the group kept its bundle.)
func TestSnapshotBundleNodesAreBusy(t *testing.T) {
	t0 := time.Unix(1000, 0)
	holder, other := ids.NewNodeID(), ids.NewNodeID()
	idleReport := func(id ids.NodeID) *atollpb.NodeLoad {
		return &atollpb.NodeLoad{NodeId: id.Bytes(), Total: map[string]float64{"CPU": 1}, Available: map[string]float64{"CPU": 1}}
	}
	s := &shell{nodes: map[ids.NodeID]*nodeState{}}
	for _, id := range []ids.NodeID{holder, other} {
		s.nodes[id] = &nodeState{info: &atollpb.NodeInfo{NodeId: id.Bytes(), NodeType: "cpu1", InstanceId: "i-" + id.Short()}, busySeen: t0}
		s.loadReport(t0, idleReport(id))
	}
	pg := ids.NewPlacementGroupID()
	groups := []*atollpb.PlacementGroupInfo{
		{PlacementGroupId: pg.Bytes(), State: atollpb.PlacementGroupState_PLACEMENT_GROUP_CREATED, BundleNodes: [][]byte{holder.Bytes()}},
		{PlacementGroupId: ids.NewPlacementGroupID().Bytes(), State: atollpb.PlacementGroupState_PLACEMENT_GROUP_REMOVED, BundleNodes: [][]byte{other.Bytes()}},
	}
	now := t0.Add(time.Minute)
	byID := func(snap Snapshot) map[string]Node {
		out := map[string]Node{}
		for _, n := range snap.Nodes {
			out[n.ID] = n
		}
		return out
	}
	nodes := byID(s.snapshot(now, groups))
	if n := nodes[holder.String()]; !n.Busy || n.Why != "bundle 0 of placement group "+pg.String()[:8] || !n.IdleSince.Equal(now) {
		t.Errorf("the bundle's node: busy %v (%q) idle since %v, want busy holding the bundle, idle since %v", n.Busy, n.Why, n.IdleSince, now)
	}
	if n := nodes[other.String()]; n.Busy || !n.IdleSince.Equal(t0) {
		t.Errorf("the node of a removed group's bundle: busy %v (%q) idle since %v, want idle since %v", n.Busy, n.Why, n.IdleSince, t0)
	}
	// The group removed: idle, counted from the last round that saw the bundle.
	groups[0].State = atollpb.PlacementGroupState_PLACEMENT_GROUP_REMOVED
	nodes = byID(s.snapshot(now.Add(time.Second), groups))
	if n := nodes[holder.String()]; n.Busy || !n.IdleSince.Equal(now) {
		t.Errorf("after the group's removal: busy %v (%q) idle since %v, want idle since %v", n.Busy, n.Why, n.IdleSince, now)
	}
}
