package atoll_test

import (
	"context"
	"encoding/hex"
	"errors"
	"testing"
	"time"

	"github.com/atoll-runtime/atoll/internal/testutil"

	"github.com/atoll-runtime/atoll"
	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/clusterclient"
	"github.com/atoll-runtime/atoll/internal/testcluster"
)

// dtKeeper is an actor whose state shows whether it is the same instance.
type dtKeeper struct{ n int }

var (
	dtKeeperType = atoll.NewActorType("dt.keeper", func(context.Context) (*dtKeeper, error) { return &dtKeeper{}, nil })
	dtKeeperAdd  = atoll.NewMethod1(dtKeeperType, "Add", func(k *dtKeeper, _ context.Context, d int) (int, error) {
		k.n += d
		return k.n, nil
	})
	dtKeeperNode = atoll.NewMethod0(dtKeeperType, "Node", func(*dtKeeper, context.Context) (string, error) { return atoll.CurrentNodeID(), nil })
)

// actorState is the GCS's state of the actor with id (hex), or
// UNSPECIFIED if the GCS does not list it.
func actorState(ctx context.Context, t *testing.T, c *testcluster.Cluster, id string) atollpb.ActorState {
	t.Helper()
	list, err := clusterclient.ListActors(ctx, c.Address(), c.Credentials())
	if err != nil {
		t.Fatalf("list actors: %v", err)
	}
	for _, a := range list {
		if hex.EncodeToString(a.ActorId) == id {
			return a.State
		}
	}
	return atollpb.ActorState_ACTOR_STATE_UNSPECIFIED
}

// TestDetachedActorOutlivesDriver: a driver connected to a cluster
// creates a detached actor and an ordinary one, uses both and shuts
// down. The ordinary one dies with the job; the detached one survives
// both the driver's Shutdown and its hosting node learning that the
// driver's node left. A second driver finds it by name, in the state the
// first left it, and kills it.
func TestDetachedActorOutlivesDriver(t *testing.T) {
	c := testcluster.Start(t, testcluster.Options{Nodes: 2})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	initDriver := func(what string) {
		t.Helper()
		if err := atoll.Init(ctx, atoll.WithAddress(c.Address()), atoll.WithSecret(c.Secret()), atoll.WithObjectStoreMemory(64<<20)); err != nil {
			t.Fatalf("%s: Init: %v", what, err)
		}
	}
	shutdown := func(what string) {
		t.Helper()
		if err := atoll.Shutdown(context.Background()); err != nil {
			t.Fatalf("%s: Shutdown: %v", what, err)
		}
	}

	initDriver("first driver")
	firstNode := atoll.CurrentNodeID()
	kept, err := dtKeeperType.New(ctx, atoll.ActorName("dt.kept"), atoll.Detached())
	if err != nil {
		t.Fatal(err)
	}
	plain, err := dtKeeperType.New(ctx, atoll.ActorName("dt.plain"))
	if err != nil {
		t.Fatal(err)
	}
	if n, err := atoll.Get(ctx, dtKeeperAdd.Remote(ctx, kept, atoll.Value(5))); err != nil || n != 5 {
		t.Fatalf("detached actor: Add = %d, %v", n, err)
	}
	if n, err := atoll.Get(ctx, dtKeeperAdd.Remote(ctx, plain, atoll.Value(1))); err != nil || n != 1 {
		t.Fatalf("ordinary actor: Add = %d, %v", n, err)
	}
	host, err := atoll.Get(ctx, dtKeeperNode.Remote(ctx, kept))
	if err != nil {
		t.Fatal(err)
	}
	hostIdx := -1
	for i := range c.Len() {
		if c.Node(i).ID == host {
			hostIdx = i
		}
	}
	if hostIdx < 0 {
		t.Fatalf("the detached actor runs on node %s, not a node of the cluster (the first driver's is %s)", host, firstNode)
	}
	keptID, plainID := kept.ID(), plain.ID()
	shutdown("first driver")

	// The job's end kills the ordinary actor at once; the hosting node
	// then hears that the driver's node left, which kills the actors its
	// owners there had (not the detached one).
	testutil.EventuallyWithin(t, time.Minute, "the ordinary actor to die with its job", func() bool {
		return actorState(ctx, t, c, plainID) == atollpb.ActorState_ACTOR_DEAD
	})
	// A stats reply whose gateway no longer counts the driver's node as a
	// peer was asked of the raylet after the gateway told it the node was
	// gone (raylet.NodeGone), so its hosted actors are counted after that.
	testutil.EventuallyWithin(t, time.Minute, "the detached actor's node to see the first driver's node go", func() bool {
		st := c.NodeStats(hostIdx, false)
		if st == nil || st.Peers != uint64(c.Len()-1) {
			return false
		}
		if st.HostedActors != 1 {
			t.Fatalf("the detached actor's node hosts %d actors once the driver's node is gone, want 1 (the detached one)", st.HostedActors)
		}
		return true
	})
	if s := actorState(ctx, t, c, keptID); s != atollpb.ActorState_ACTOR_ALIVE {
		t.Fatalf("the detached actor is %v once its driver is gone, want ALIVE", s)
	}

	initDriver("second driver")
	defer shutdown("second driver")
	if atoll.CurrentNodeID() == firstNode {
		t.Fatal("the second driver runs the first driver's node")
	}
	if _, err := dtKeeperType.New(ctx, atoll.Detached()); !errors.Is(err, atoll.ErrInvalidArgument) {
		t.Fatalf("Detached without a name: %v, want ErrInvalidArgument", err)
	}
	h, err := atoll.GetActor[*dtKeeper](ctx, "dt.kept")
	if err != nil {
		t.Fatalf("second driver: GetActor: %v", err)
	}
	if h.ID() != keptID {
		t.Fatalf("second driver found actor %s, want %s", h.ID(), keptID)
	}
	if n, err := atoll.Get(ctx, dtKeeperAdd.Remote(ctx, h, atoll.Value(1))); err != nil || n != 6 {
		t.Fatalf("second driver: Add = %d, %v; want 6 (the first driver's 5, plus 1)", n, err)
	}
	if err := atoll.Kill(ctx, h); err != nil {
		t.Fatal(err)
	}
	testutil.EventuallyWithin(t, time.Minute, "the killed detached actor to be dead", func() bool {
		return actorState(ctx, t, c, keptID) == atollpb.ActorState_ACTOR_DEAD
	})
	if _, err := atoll.GetActor[*dtKeeper](ctx, "dt.kept"); !errors.Is(err, atoll.ErrNotFound) {
		t.Fatalf("GetActor of the killed actor: %v, want ErrNotFound", err)
	}
}
