package atoll_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/atoll-runtime/atoll"
	"github.com/atoll-runtime/atoll/atolltest"
	"github.com/atoll-runtime/atoll/faultplan"
	"github.com/atoll-runtime/atoll/internal/nodeconfig"
	"github.com/atoll-runtime/atoll/internal/testcluster"
	"github.com/atoll-runtime/atoll/internal/testmain"
	"github.com/atoll-runtime/atoll/internal/testutil"
)

var pgCounterWhere = atoll.NewMethod0(pgCounterType, "Where", func(_ *pgCounter, _ context.Context) (string, error) {
	return atoll.CurrentNodeID(), nil
})

// TestPlacementGroupsInACluster: on three nodes of 2 CPUs, a
// STRICT_SPREAD group of three bundles puts one on each, and actors in its
// bundles run on three distinct nodes; a PACK group of two bundles (of a
// resource only the two nodes but the head have) goes on one node, and
// when that node is killed the group is placed again on the other and its
// actors restart there (MaxRestarts), as new instances.
func TestPlacementGroupsInACluster(t *testing.T) {
	c := testcluster.Start(t, testcluster.Options{Nodes: 3, Node: nodeconfig.Config{NumCPUs: 2, FailureTimeout: 4 * time.Second},
		Config: func(i int, cfg *nodeconfig.Config) {
			if i > 0 {
				cfg.Resources = map[string]float64{"pg.worker": 2}
			}
		}})
	ctx := testmain.Init(t, 3*time.Minute, atoll.WithAddress(c.Address()), atoll.WithSecret(c.Secret()), atoll.WithObjectStoreMemory(256<<20))
	nodes := []string{c.Node(0).ID, c.Node(1).ID, c.Node(2).ID}
	ready := func(pg *atoll.PlacementGroup) {
		t.Helper()
		rctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		if err := pg.Ready(rctx); err != nil {
			t.Fatalf("Ready: %v", err)
		}
	}

	spread, err := atoll.NewPlacementGroup(ctx, []atoll.Resources{{CPU: 1}, {CPU: 1}, {CPU: 1}}, atoll.PlacementStrictSpread)
	if err != nil {
		t.Fatal(err)
	}
	ready(spread)
	var where []string
	for i := range 3 {
		h, err := pgCounterType.New(ctx, atoll.InPlacementGroup(spread, i), atoll.WithTaskResources(atoll.Resources{CPU: 1}))
		if err != nil {
			t.Fatal(err)
		}
		node, err := atoll.Get(ctx, pgCounterWhere.Remote(ctx, h))
		if err != nil {
			t.Fatal(err)
		}
		where = append(where, node)
	}
	slices.Sort(where)
	if want := slices.Sorted(slices.Values(nodes)); !slices.Equal(where, want) {
		t.Fatalf("STRICT_SPREAD actors ran on %v, want one on each of %v", where, want)
	}
	if err := spread.Remove(ctx); err != nil {
		t.Fatal(err)
	}

	worker := atoll.Resources{CPU: 1, Custom: map[string]float64{"pg.worker": 1}}
	pack, err := atoll.NewPlacementGroup(ctx, []atoll.Resources{worker, worker}, atoll.PlacementPack)
	if err != nil {
		t.Fatal(err)
	}
	ready(pack)
	st, err := pack.State(ctx)
	if err != nil || st.BundleNodes[0] != st.BundleNodes[1] {
		t.Fatalf("PACK group: %+v %v, want both bundles on one node", st, err)
	}
	first := st.BundleNodes[0]
	var actors []atoll.ActorHandle[*pgCounter]
	for i := range 2 {
		h, err := pgCounterType.New(ctx, atoll.InPlacementGroup(pack, i), atoll.WithTaskResources(atoll.Resources{CPU: 1}), atoll.MaxRestarts(1), atoll.MaxTaskRetries(3))
		if err != nil {
			t.Fatal(err)
		}
		if n, err := atoll.Get(ctx, pgCounterAdd.Remote(ctx, h, atoll.Value(5))); err != nil || n != 5 {
			t.Fatalf("actor %d: %d %v", i, n, err)
		}
		actors = append(actors, h)
	}
	c.Kill(slices.Index(nodes, first))
	testutil.EventuallyWithin(t, time.Minute, "the PACK group placed again on another node", func() bool {
		st, err = pack.State(ctx)
		return err == nil && st.State == "CREATED" && st.Reschedules == 1 && st.BundleNodes[0] != first
	})
	for i, h := range actors {
		gctx, cancel := context.WithTimeout(ctx, time.Minute)
		node, err := atoll.Get(gctx, pgCounterWhere.Remote(gctx, h))
		cancel()
		if err != nil || node != st.BundleNodes[i] {
			t.Fatalf("actor %d after its node died: on %q (%v), want the bundle's new node %s", i, node, err, st.BundleNodes[i])
		}
		// A new instance: its count starts again.
		if n, err := atoll.Get(ctx, pgCounterAdd.Remote(ctx, h, atoll.Value(1))); err != nil || n != 1 {
			t.Fatalf("actor %d after its restart: %d %v, want a new instance's 1", i, n, err)
		}
	}
}

// TestPlacementGroupRemovedAcrossAPartition: a group is removed while the
// node holding its bundle is cut off from inbound messages, so the
// removal's RELEASE never reaches it; healed, the node's load reports
// still list the bundle, and the head sends the release again. A second
// group needing the same (only) resource is then placed there. (On a
// build without the resend, the bundle stayed held for good and the
// second group never became ready.)
func TestPlacementGroupRemovedAcrossAPartition(t *testing.T) {
	c := testcluster.Start(t, testcluster.Options{Nodes: 3, Node: nodeconfig.Config{NumCPUs: 2, FailureTimeout: 10 * time.Second},
		Config: func(i int, cfg *nodeconfig.Config) {
			if i == 2 {
				cfg.Resources = map[string]float64{"pg.victim": 1}
			}
		}})
	ctx := testmain.JoinCluster(t, c, atoll.WithFailureTimeout(10*time.Second))
	victim := c.Node(2)
	only := []atoll.Resources{{Custom: map[string]float64{"pg.victim": 1}}}
	ready := func(pg *atoll.PlacementGroup, within time.Duration) error {
		rctx, cancel := context.WithTimeout(ctx, within)
		defer cancel()
		return pg.Ready(rctx)
	}

	first, err := atoll.NewPlacementGroup(ctx, only, atoll.PlacementPack)
	if err != nil {
		t.Fatal(err)
	}
	if err := ready(first, time.Minute); err != nil {
		t.Fatalf("the first group: %v", err)
	}
	if st, err := first.State(ctx); err != nil || st.BundleNodes[0] != victim.ID {
		t.Fatalf("the first group: %+v %v, want its bundle on %s", st, err, victim.ID[:8])
	}
	// Cut for well under the failure timeout: the node stays alive.
	if err := atolltest.PartitionNode(ctx, victim.ID, faultplan.Inbound, 2*time.Second); err != nil {
		t.Fatalf("PartitionNode: %v", err)
	}
	if err := first.Remove(ctx); err != nil {
		t.Fatalf("Remove: %v", err)
	}
	second, err := atoll.NewPlacementGroup(ctx, only, atoll.PlacementPack)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := ready(second, time.Minute); err != nil {
		st, _ := second.State(ctx)
		t.Fatalf("the second group after the partition healed: %v (%+v)", err, st)
	}
	t.Logf("the second group was ready %v after the removal", time.Since(start).Round(time.Millisecond))
}
