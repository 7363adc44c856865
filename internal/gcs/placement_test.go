package gcs

import (
	"bytes"
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/nats-io/nats.go"
	"google.golang.org/protobuf/proto"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/ids"
	"github.com/atoll-runtime/atoll/internal/raylet"
	"github.com/atoll-runtime/atoll/internal/testutil"
)

// fakeNode is a node's raylet Core behind its bundles subject: it applies
// the two-phase commit's steps as a node does (internal/node).
type fakeNode struct {
	mu   sync.Mutex
	core *raylet.Core
	id   ids.NodeID
	sub  *nats.Subscription
	ops  []atollpb.BundleOp_Kind
}

func newFakeNode(t *testing.T, e *testEnv, cpu float64) *fakeNode {
	t.Helper()
	info := node("fake")
	info.Resources = map[string]float64{"CPU": cpu}
	n := &fakeNode{id: ids.MustFromBytes(info.NodeId)}
	n.core = raylet.NewCore(raylet.CoreConfig{NodeID: n.id, Resources: raylet.Resources{"CPU": cpu}, NumWorkers: 1, MaxWorkers: 1})
	sub, err := e.nc.Subscribe(BundlesSubject(DefaultPrefix, n.id), func(m *nats.Msg) {
		op := &atollpb.BundleOp{}
		_ = proto.Unmarshal(m.Data, op)
		n.mu.Lock()
		defer n.mu.Unlock()
		n.ops = append(n.ops, op.Kind)
		reply := &atollpb.BundleOpReply{Txn: op.Txn}
		var err error
		switch op.Kind {
		case atollpb.BundleOp_PREPARE:
			reply.Refused, err = n.core.PrepareBundles(time.Now(), op.Bundles)
			if reply.Refused == "" && err == nil && op.Commit {
				reply.Refused, err = n.core.CommitBundles(time.Now(), op.Bundles)
			}
		case atollpb.BundleOp_COMMIT:
			reply.Refused, err = n.core.CommitBundles(time.Now(), op.Bundles)
		case atollpb.BundleOp_RELEASE:
			err = n.core.ReleaseBundles(time.Now(), op.Bundles, op.Reason)
		}
		n.core.Effects()
		if err != nil {
			reply.Error = errs.ToProto(err)
		}
		b, _ := proto.Marshal(reply)
		_ = m.Respond(b)
	})
	if err != nil {
		t.Fatal(err)
	}
	n.sub = sub
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	if err := e.client.RegisterNode(ctxT(t), info); err != nil {
		t.Fatal(err)
	}
	return n
}

func (n *fakeNode) held() []*atollpb.BundleHeld {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.core.Bundles()
}

// startPlacement spawns a placement actor on the env's connection.
func startPlacement(t *testing.T, e *testEnv) *actor.PID {
	t.Helper()
	props, err := NewPlacementProps(PlacementConfig{Conn: e.nc, Tick: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	pid := e.sys.Root.Spawn(props)
	t.Cleanup(func() { _ = e.sys.Root.StopFuture(pid).Wait() })
	// Ready once it answers.
	c := NewClient(e.nc, ClientOptions{WaitForServer: true})
	if _, err := c.ListPlacementGroups(ctxT(t)); err != nil {
		t.Fatalf("placement actor did not come up: %v", err)
	}
	return pid
}

func TestPlacementGroups(t *testing.T) {
	e := newEnv(t)
	ctx := ctxT(t)
	n1, n2 := newFakeNode(t, e, 2), newFakeNode(t, e, 2)
	pid := startPlacement(t, e)
	c := e.client

	id := ids.NewPlacementGroupID()
	info, err := c.CreatePlacementGroup(ctx, &atollpb.PlacementGroupInfo{PlacementGroupId: id.Bytes(), Name: "gang",
		Strategy: atollpb.PlacementStrategy_STRICT_SPREAD, Bundles: []*atollpb.Bundle{{Resources: map[string]float64{"CPU": 1}}, {Resources: map[string]float64{"CPU": 1}}}})
	if err != nil {
		t.Fatal(err)
	}
	if info.State != atollpb.PlacementGroupState_PLACEMENT_GROUP_PENDING && info.State != atollpb.PlacementGroupState_PLACEMENT_GROUP_CREATED {
		t.Fatalf("created in state %v", info.State)
	}
	info, err = c.WaitPlacementGroup(ctx, id.Bytes(), 10*time.Second)
	if err != nil || info.State != atollpb.PlacementGroupState_PLACEMENT_GROUP_CREATED {
		t.Fatalf("wait: %v %v", info, err)
	}
	if len(n1.held()) != 1 || len(n2.held()) != 1 || !n1.held()[0].Committed {
		t.Fatalf("bundles held: %v / %v", n1.held(), n2.held())
	}
	if got, err := c.GetNamedPlacementGroup(ctx, "", "gang"); err != nil || !proto.Equal(got, info) {
		t.Fatalf("named: %v %v", got, err)
	}
	// Bad input and a taken name: typed errors.
	if _, err := c.CreatePlacementGroup(ctx, &atollpb.PlacementGroupInfo{PlacementGroupId: ids.NewPlacementGroupID().Bytes()}); !errors.Is(err, errs.ErrInvalidArgument) {
		t.Fatalf("no bundles: %v", err)
	}
	if _, err := c.CreatePlacementGroup(ctx, &atollpb.PlacementGroupInfo{PlacementGroupId: ids.NewPlacementGroupID().Bytes(), Name: "gang",
		Bundles: []*atollpb.Bundle{{Resources: map[string]float64{"CPU": 1}}}}); !errors.Is(err, errs.ErrInvalidArgument) {
		t.Fatalf("taken name: %v", err)
	}
	// A restarted placement actor reloads the group as it was.
	if err := e.sys.Root.StopFuture(pid).Wait(); err != nil {
		t.Fatal(err)
	}
	startPlacement(t, e)
	got, err := c.GetPlacementGroup(ctx, id.Bytes())
	if err != nil || got.State != atollpb.PlacementGroupState_PLACEMENT_GROUP_CREATED || len(got.BundleNodes[0]) == 0 {
		t.Fatalf("after a restart: %v %v", got, err)
	}
	// Removal releases the bundles on both nodes.
	if _, err := c.RemovePlacementGroup(ctx, id.Bytes()); err != nil {
		t.Fatal(err)
	}
	if _, err := c.RemovePlacementGroup(ctx, id.Bytes()); err != nil {
		t.Fatalf("a second removal: %v", err)
	}
	testutil.Eventually(t, "the bundles released on both nodes", func() bool { return len(n1.held())+len(n2.held()) == 0 })
	// A group no node fits waits, infeasible; waiting on it times out
	// with the group as it is.
	big := ids.NewPlacementGroupID()
	if _, err := c.CreatePlacementGroup(ctx, &atollpb.PlacementGroupInfo{PlacementGroupId: big.Bytes(),
		Bundles: []*atollpb.Bundle{{Resources: map[string]float64{"CPU": 8}}}}); err != nil {
		t.Fatal(err)
	}
	got, err = c.WaitPlacementGroup(context.Background(), big.Bytes(), 100*time.Millisecond)
	if err != nil || got.State != atollpb.PlacementGroupState_PLACEMENT_GROUP_PENDING || !got.Infeasible || got.Reason == "" {
		t.Fatalf("infeasible group: %v %v", got, err)
	}
}

// TestActorsRestartAfterTheirNodeDied: an actor with restarts left whose
// owner's node lives goes RESTARTING when its node dies (no node, no
// address, one restart more); one without restarts, or whose owner was on
// that node, goes DEAD; a late report from the dead node changes nothing;
// the new host's report keeps the owner's node.
func TestActorsRestartAfterTheirNodeDied(t *testing.T) {
	e, ctx := newEnv(t), ctxT(t)
	c := e.client
	host, owner := node("host"), node("owner")
	for _, n := range []*atollpb.NodeInfo{host, owner} {
		if err := c.RegisterNode(ctx, n); err != nil {
			t.Fatal(err)
		}
	}
	actor := func(maxRestarts int32, ownerNode []byte) *atollpb.ActorInfo {
		a := namedActor("", "")
		a.MaxRestarts, a.OwnerNodeId = maxRestarts, ownerNode
		if err := c.RegisterActor(ctx, a); err != nil {
			t.Fatal(err)
		}
		alive := proto.CloneOf(a)
		alive.State, alive.NodeId, alive.Address, alive.OwnerNodeId = atollpb.ActorState_ACTOR_ALIVE, host.NodeId, "host/1", nil
		if err := c.UpdateActor(ctx, alive); err != nil {
			t.Fatal(err)
		}
		return alive
	}
	restarts := actor(2, owner.NodeId)
	forever := actor(-1, owner.NodeId)
	none := actor(0, owner.NodeId)
	local := actor(2, host.NodeId)
	if err := c.MarkNodeDead(ctx, host.NodeId, false, "test"); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		a        *atollpb.ActorInfo
		state    atollpb.ActorState
		restarts int32
	}{
		{restarts, atollpb.ActorState_ACTOR_RESTARTING, 1},
		{forever, atollpb.ActorState_ACTOR_RESTARTING, 1},
		{none, atollpb.ActorState_ACTOR_DEAD, 0},
		{local, atollpb.ActorState_ACTOR_DEAD, 0},
	} {
		got, err := c.GetActor(ctx, tc.a.ActorId)
		if err != nil || got.State != tc.state || got.NumRestarts != tc.restarts {
			t.Errorf("actor max_restarts=%d owner %x: %v %v, want %v with %d restarts", tc.a.MaxRestarts, tc.a.OwnerNodeId, got, err, tc.state, tc.restarts)
		}
		if tc.state == atollpb.ActorState_ACTOR_RESTARTING && (len(got.NodeId) != 0 || got.Address != "" || !bytes.Equal(got.OwnerNodeId, owner.NodeId)) {
			t.Errorf("a restarting actor keeps no node or address, and its owner's node: %v", got)
		}
	}
	// A report from the dead host, late: ignored.
	if err := c.UpdateActor(ctx, restarts); err != nil {
		t.Fatal(err)
	}
	if got, _ := c.GetActor(ctx, restarts.ActorId); got.State != atollpb.ActorState_ACTOR_RESTARTING {
		t.Fatalf("a late report of the dead host revived the entry: %v", got)
	}
	// The new host's report.
	again := proto.CloneOf(restarts)
	again.NodeId, again.Address, again.NumRestarts = owner.NodeId, "owner/2", 1
	if err := c.UpdateActor(ctx, again); err != nil {
		t.Fatal(err)
	}
	if got, _ := c.GetActor(ctx, restarts.ActorId); got.State != atollpb.ActorState_ACTOR_ALIVE || got.Address != "owner/2" || !bytes.Equal(got.OwnerNodeId, owner.NodeId) {
		t.Fatalf("after the restart: %v", got)
	}
}
