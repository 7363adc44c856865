package dashboard

import (
	"context"
	"errors"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/ids"
)

// nodesRecorded answers the cluster view's two queries with fixed nodes.
type nodesRecorded struct {
	Source
	status *Status
	infos  []*atollpb.NodeInfo
}

func (r nodesRecorded) Status(context.Context) (*Status, error)            { return r.status, nil }
func (r nodesRecorded) Nodes(context.Context) ([]*atollpb.NodeInfo, error) { return r.infos, nil }

// TestClusterViewSaysWhyNodesEnded: a node that left on purpose is
// "left", one that failed "dead", each with its reason; nodes that ended
// longer ago than the shown-for time are counted, not listed, unless the
// request asks for every node.
func TestClusterViewSaysWhyNodesEnded(t *testing.T) {
	head, drained, failed, old := ids.NewNodeID(), ids.NewNodeID(), ids.NewNodeID(), ids.NewNodeID()
	now := time.Now()
	ago := func(d time.Duration) int64 { return now.Add(-d).UnixMilli() }
	src := nodesRecorded{
		status: &Status{Nodes: []NodeStatus{{NodeID: head, IsHead: true, Alive: true, Reporting: true},
			{NodeID: drained}, {NodeID: failed}, {NodeID: old}}},
		infos: []*atollpb.NodeInfo{
			{NodeId: head.Bytes(), State: atollpb.NodeState_NODE_ALIVE, IsHead: true, StartTimeUnixMs: ago(3 * time.Hour)},
			{NodeId: drained.Bytes(), State: atollpb.NodeState_NODE_DEAD, Left: true, EndReason: "drained", EndTimeUnixMs: ago(5 * time.Minute)},
			{NodeId: failed.Bytes(), State: atollpb.NodeState_NODE_DEAD, EndReason: "declared dead: no gossip answer within the failure timeout", EndTimeUnixMs: ago(time.Minute)},
			{NodeId: old.Bytes(), State: atollpb.NodeState_NODE_DEAD, Left: true, EndReason: "stopped", EndTimeUnixMs: ago(2 * time.Hour)},
		},
	}
	a := &api{src: src, goneWithin: DefaultGoneNodesShownFor}
	view := func(query string) clusterView {
		t.Helper()
		got, err := a.cluster(context.Background(), httptest.NewRequest("GET", "/api/cluster"+query, nil))
		if err != nil {
			t.Fatal(err)
		}
		return got.(clusterView)
	}
	byID := func(v clusterView) map[string]nodeView {
		m := map[string]nodeView{}
		for _, n := range v.Nodes {
			m[n.NodeID] = n
		}
		return m
	}

	v := view("")
	nodes := byID(v)
	if len(v.Nodes) != 3 || v.NodesNotListed != 1 || v.GoneWithin != "1h0m0s" {
		t.Fatalf("default view: %d nodes, %d not listed, gone within %s; want 3, 1 (the node gone 2 h ago), 1h0m0s", len(v.Nodes), v.NodesNotListed, v.GoneWithin)
	}
	if n := nodes[drained.String()]; n.State != "left" || n.EndReason != "drained" || n.EndTime == nil {
		t.Errorf("drained node %+v: want left, drained, an end time", n)
	}
	if n := nodes[failed.String()]; n.State != "dead" || n.EndReason != "declared dead: no gossip answer within the failure timeout" {
		t.Errorf("failed node %+v: want dead with the failure detector's reason", n)
	}
	if n := nodes[head.String()]; n.State != "alive" || n.EndReason != "" {
		t.Errorf("head %+v: want alive, no end reason", n)
	}
	if v.Totals.NodesAlive != 1 || v.Totals.NodesLeft != 1 || v.Totals.NodesDead != 1 {
		t.Errorf("totals alive %d left %d dead %d, want 1 1 1", v.Totals.NodesAlive, v.Totals.NodesLeft, v.Totals.NodesDead)
	}

	v = view("?gone_within=0")
	if n, ok := byID(v)[old.String()]; len(v.Nodes) != 4 || v.NodesNotListed != 0 || !ok || n.State != "left" || n.EndReason != "stopped" {
		t.Errorf("?gone_within=0: %d nodes, %d not listed, the old node %+v; want all 4 listed", len(v.Nodes), v.NodesNotListed, n)
	}
	if v := view("?gone_within=2m"); len(v.Nodes) != 2 || v.NodesNotListed != 2 {
		t.Errorf("?gone_within=2m: %d nodes, %d not listed; want the head and the node that failed a minute ago", len(v.Nodes), v.NodesNotListed)
	}
	if _, err := a.cluster(context.Background(), httptest.NewRequest("GET", "/api/cluster?gone_within=soon", nil)); !errors.Is(err, errs.ErrInvalidArgument) {
		t.Errorf("?gone_within=soon: %v, want ErrInvalidArgument", err)
	}
}
