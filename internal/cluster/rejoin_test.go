package cluster

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/atoll-runtime/atoll/internal/testutil"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/gcs"
	"github.com/atoll-runtime/atoll/internal/ids"
)

// TestReconcileNodesOnlyTheListed: a restarted head marks dead the nodes
// its GCS listed alive when it started and that it has not heard from
// since, never one that registered after (in CI a driver's node that
// registered a moment before the reconciliation, its first load report
// not yet in, was declared dead and its job failed).
func TestReconcileNodesOnlyTheListed(t *testing.T) {
	ns := startNATS(t)
	nc, err := ns.Connect()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	client := gcs.NewClient(nc, gcs.ClientOptions{WaitForServer: true})
	a := startNode(t, ns, func(c *Config) { c.GCS = client })
	props, err := gcs.NewProps(gcs.Config{Conn: nc})
	if err != nil {
		t.Fatal(err)
	}
	a.system.Root.Spawn(props)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	register := func() ids.NodeID {
		id := ids.NewNodeID()
		if err := client.RegisterNode(ctx, &atollpb.NodeInfo{NodeId: id.Bytes(), Address: "127.0.0.1:1", State: atollpb.NodeState_NODE_ALIVE}); err != nil {
			t.Fatalf("register: %v", err)
		}
		return id
	}
	back, lost := register(), register()
	listed, err := a.gw.ListedAlive(ctx)
	if err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(listed, func(x, y ids.NodeID) int { return slices.Compare(x[:], y[:]) })
	want := []ids.NodeID{back, lost}
	slices.SortFunc(want, func(x, y ids.NodeID) int { return slices.Compare(x[:], y[:]) })
	if !slices.Equal(listed, want) {
		t.Fatalf("listed alive %v, want %v", listed, want)
	}
	late := register() // registers during the grace; no load report yet
	a.system.Root.Send(a.gw.pid, &atollpb.NodeLoad{NodeId: back.Bytes(), Total: map[string]float64{"CPU": 1}})
	testutil.Eventually(t, "the head to hear the node that came back", func() bool { return a.gw.heard.has(back) })

	gone, err := a.gw.ReconcileNodes(ctx, listed, "test")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(gone, []ids.NodeID{lost}) {
		t.Fatalf("marked dead %v, want only %v", gone, lost)
	}
	nodes, err := client.ListNodes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	states := map[ids.NodeID]atollpb.NodeState{}
	for _, n := range nodes {
		states[ids.MustFromBytes(n.NodeId)] = n.State
	}
	for id, want := range map[ids.NodeID]atollpb.NodeState{back: atollpb.NodeState_NODE_ALIVE, lost: atollpb.NodeState_NODE_DEAD, late: atollpb.NodeState_NODE_ALIVE} {
		if states[id] != want {
			t.Errorf("node %v is %v in the GCS, want %v", id, states[id], want)
		}
	}
}
