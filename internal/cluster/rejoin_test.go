package cluster

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/nats-io/nats.go"

	"github.com/atoll-runtime/atoll/internal/testutil"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/gcs"
	"github.com/atoll-runtime/atoll/internal/ids"
)

// TestReconcileNodesOnlyTheListed: a restarted head marks dead the nodes
// its GCS listed alive when it started and that it has not heard from
// since, never one that registered after (in CI a driver's node that
// registered a moment before the reconciliation, its first load report
// not yet in, was declared dead and its job failed).
// startNodeWithGCSClient starts NATS and a node whose GCS client is on
// it, and returns the node, the client and a connection for the GCS the
// test starts itself.
func startNodeWithGCSClient(t *testing.T) (*testNode, *gcs.Client, *nats.Conn) {
	t.Helper()
	ns := startNATS(t)
	nc, err := ns.Connect()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	client := gcs.NewClient(nc, gcs.ClientOptions{WaitForServer: true})
	return startNode(t, ns, func(c *Config) { c.GCS = client }), client, nc
}

// registerAlive registers a new node id in the GCS, alive, with no node
// behind it.
func registerAlive(ctx context.Context, t *testing.T, client *gcs.Client) ids.NodeID {
	t.Helper()
	id := ids.NewNodeID()
	if err := client.RegisterNode(ctx, &atollpb.NodeInfo{NodeId: id.Bytes(), Address: "127.0.0.1:1", State: atollpb.NodeState_NODE_ALIVE}); err != nil {
		t.Fatalf("register: %v", err)
	}
	return id
}

func TestReconcileNodesOnlyTheListed(t *testing.T) {
	a, client, nc := startNodeWithGCSClient(t)
	props, err := gcs.NewProps(gcs.Config{Conn: nc})
	if err != nil {
		t.Fatal(err)
	}
	a.system.Root.Spawn(props)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	register := func() ids.NodeID { return registerAlive(ctx, t, client) }
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

// TestReconcileNodesGoesPastFailuresAndRedoesDeaths: a restarted head's
// reconciliation goes on past a node it fails to mark dead (it returned
// at the first failure, leaving the nodes after it alive), and marks dead
// again a node the GCS lists dead whose actors it still lists live (a
// death whose actors' writes failed: they were never tried again, and
// callers kept calling a dead address). Here an actor's write fails
// because its entry, stored when the GCS took larger entries, no longer
// fits the largest the GCS takes after a restart; it fits again once the
// GCS takes larger entries again.
func TestReconcileNodesGoesPastFailuresAndRedoesDeaths(t *testing.T) {
	a, client, nc := startNodeWithGCSClient(t)
	var gcsPID *actor.PID
	startGCS := func(maxEntry int) {
		t.Helper()
		if gcsPID != nil {
			if err := a.system.Root.StopFuture(gcsPID).Wait(); err != nil {
				t.Fatal(err)
			}
		}
		props, err := gcs.NewProps(gcs.Config{Conn: nc, MaxEntryBytes: maxEntry})
		if err != nil {
			t.Fatal(err)
		}
		gcsPID = a.system.Root.Spawn(props)
	}
	startGCS(0)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	register := func() ids.NodeID { return registerAlive(ctx, t, client) }
	failing, after := register(), register()
	big := &atollpb.ActorInfo{ActorId: ids.NewActorID().Bytes(), ActorType: strings.Repeat("x", 2048)}
	if err := client.RegisterActor(ctx, big); err != nil {
		t.Fatal(err)
	}
	big.State, big.NodeId, big.Address = atollpb.ActorState_ACTOR_ALIVE, failing.Bytes(), "failing/1"
	if err := client.UpdateActor(ctx, big); err != nil {
		t.Fatal(err)
	}
	state := func(id ids.NodeID) atollpb.NodeState {
		t.Helper()
		nodes, err := client.ListNodes(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range nodes {
			if ids.MustFromBytes(n.NodeId) == id {
				return n.State
			}
		}
		t.Fatalf("node %v not listed", id)
		return 0
	}
	actorState := func() atollpb.ActorState {
		t.Helper()
		got, err := client.GetActor(ctx, big.ActorId)
		if err != nil {
			t.Fatal(err)
		}
		return got.State
	}

	// The GCS restarts taking smaller entries: marking failing dead
	// writes its entry, then fails on its actor's.
	startGCS(1024)
	gone, err := a.gw.ReconcileNodes(ctx, []ids.NodeID{failing, after}, "test")
	if !errors.Is(err, errs.ErrInvalidArgument) {
		t.Errorf("reconciling past a failed write: %v, want the INVALID_ARGUMENT of the write", err)
	}
	if !slices.Equal(gone, []ids.NodeID{after}) {
		t.Errorf("marked dead %v, want %v, past the one that failed", gone, after)
	}
	if s := state(after); s != atollpb.NodeState_NODE_DEAD {
		t.Fatalf("the node after the one that failed: %v in the GCS, want dead", s)
	}
	if state(failing) != atollpb.NodeState_NODE_DEAD || actorState() != atollpb.ActorState_ACTOR_ALIVE {
		t.Fatalf("the node whose actor's write failed: %v, its actor %v; want dead, alive", state(failing), actorState())
	}

	// Entries that large fit again: the next round, with no node listed
	// alive, marks the dead node dead again, and its actor dies.
	startGCS(0)
	gone, err = a.gw.ReconcileNodes(ctx, nil, "again")
	if err != nil || len(gone) != 0 {
		t.Fatalf("reconciling a dead node's leftovers: %v %v, want no node newly dead, no error", gone, err)
	}
	got, err := client.GetActor(ctx, big.ActorId)
	if err != nil {
		t.Fatal(err)
	}
	if got.State != atollpb.ActorState_ACTOR_DEAD || got.GetDeathCause().GetCode() != atollpb.ErrorCode_NODE_DIED {
		t.Errorf("the actor left on the dead node: %v (%v), want DEAD, NODE_DIED", got.State, got.GetDeathCause())
	}
}

// TestLeftOnDeadNodes: the nodes to mark dead again are those listed dead
// with an actor listed on them in any state but DEAD (what the GCS
// updates when a node is marked dead), counted, in node order.
func TestLeftOnDeadNodes(t *testing.T) {
	alive, dead1, dead2, unknown := ids.NewNodeID(), ids.NewNodeID(), ids.NewNodeID(), ids.NewNodeID()
	if compareNodes(dead1, dead2) > 0 {
		dead1, dead2 = dead2, dead1
	}
	nodes := []*atollpb.NodeInfo{
		{NodeId: alive.Bytes(), State: atollpb.NodeState_NODE_ALIVE},
		{NodeId: dead2.Bytes(), State: atollpb.NodeState_NODE_DEAD},
		{NodeId: dead1.Bytes(), State: atollpb.NodeState_NODE_DEAD},
	}
	on := func(n ids.NodeID, s atollpb.ActorState) *atollpb.ActorInfo {
		return &atollpb.ActorInfo{ActorId: ids.NewActorID().Bytes(), NodeId: n.Bytes(), State: s}
	}
	actors := []*atollpb.ActorInfo{
		on(alive, atollpb.ActorState_ACTOR_ALIVE),
		on(dead1, atollpb.ActorState_ACTOR_DEAD),
		on(dead1, atollpb.ActorState_ACTOR_DEAD),
		on(dead2, atollpb.ActorState_ACTOR_ALIVE),
		on(dead2, atollpb.ActorState_ACTOR_DEAD),
		on(unknown, atollpb.ActorState_ACTOR_ALIVE),
		{ActorId: ids.NewActorID().Bytes(), State: atollpb.ActorState_ACTOR_RESTARTING},
	}
	if got := leftOnDeadNodes(nodes, actors); !slices.Equal(got, []leftover{{dead2, 1}}) {
		t.Errorf("left on dead nodes: %v, want only %v with 1", got, dead2)
	}
	actors = append(actors, on(dead1, atollpb.ActorState_ACTOR_PENDING_CREATION), on(dead1, atollpb.ActorState_ACTOR_RESTARTING))
	if got := leftOnDeadNodes(nodes, actors); !slices.Equal(got, []leftover{{dead1, 2}, {dead2, 1}}) {
		t.Errorf("left on dead nodes: %v, want %v with 2, %v with 1", got, dead1, dead2)
	}
}
