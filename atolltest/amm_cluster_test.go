package atolltest_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/atoll-runtime/atoll"
	"github.com/atoll-runtime/atoll/internal/cluster"
	"github.com/atoll-runtime/atoll/internal/nodeconfig"
	"github.com/atoll-runtime/atoll/internal/testcluster"
	"github.com/atoll-runtime/atoll/internal/testmain"
	"github.com/atoll-runtime/atoll/internal/testutil"
)

// holdArg reads b and holds it (a pinned view) until the file release
// exists in dir; it marks its start with the file started.
var holdArg = atoll.NewFunc2("cl.holdArg", func(ctx context.Context, b []byte, dir string) (sumOn, error) {
	if err := os.WriteFile(filepath.Join(dir, "started"), nil, 0o600); err != nil {
		return sumOn{}, err
	}
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		if _, err := os.Stat(filepath.Join(dir, "release")); err == nil {
			return sumOn{testutil.ByteSum(b), atoll.CurrentNodeID()}, nil
		}
		select {
		case <-ctx.Done():
			return sumOn{}, ctx.Err()
		case <-tick.C:
		}
	}
})

// TestAMMReduceReplicas: with the Active Memory Manager on, the copies a
// SPREAD read of one object left on three nodes go away, except a copy a
// running task pins; a node whose copy was dropped pulls it again when a
// later task reads it, and gets the right bytes; the primary (on the
// driver's node) always stays.
func TestAMMReduceReplicas(t *testing.T) {
	c := testcluster.Start(t, testcluster.Options{Nodes: 3, Node: nodeconfig.Config{NumCPUs: 2, FailureTimeout: 2 * time.Second},
		Env: []string{cluster.EnvAMM + "=1", cluster.EnvAMMInterval + "=200ms"}})
	ctx := testmain.JoinCluster(t, c)
	const n = 3 << 20
	want := testutil.ByteSum(testutil.Pattern(n))
	obj, err := atoll.Put(ctx, testutil.Pattern(n))
	if err != nil {
		t.Fatal(err)
	}
	used := func(node string) uint64 {
		x, ok := nodeStatus(ctx, c, node)
		if !ok {
			t.Fatalf("no status of node %s", node)
		}
		return x.StoreUsed
	}

	// A SPREAD read on every node: each pulls a copy.
	refs := make([]atoll.ObjectRef[sumOn], 3*c.Len())
	for i := range refs {
		refs[i] = sumBytes.Remote(ctx, obj, atoll.Spread())
	}
	got, err := atoll.GetAll(ctx, refs)
	if err != nil {
		t.Fatal(err)
	}
	var readers []string
	for _, g := range got {
		if g.Sum != want {
			t.Fatalf("SPREAD read on node %s: sum %d, want %d", g.Node, g.Sum, want)
		}
		readers = append(readers, g.Node)
	}
	slices.Sort(readers)
	if readers = slices.Compact(readers); len(readers) != 3 {
		t.Fatalf("the SPREAD reads ran on %v, want 3 nodes", readers)
	}

	// A task on readers[1] pins its copy while the AMM runs.
	dir := t.TempDir()
	held := holdArg.Remote(ctx, obj, atoll.Value(dir), atoll.OnNode(readers[1], false))
	testutil.Eventually(t, "the holding task to start", func() bool {
		_, err := os.Stat(filepath.Join(dir, "started"))
		return err == nil
	})
	testutil.Eventually(t, "the AMM to drop the copies on the other two nodes", func() bool {
		return used(readers[0]) < n && used(readers[2]) < n
	})
	if u := used(readers[1]); u < n {
		t.Fatalf("the copy pinned on node %s was dropped (store use %d)", readers[1], u)
	}
	if u := used(atoll.CurrentNodeID()); u < n {
		t.Fatalf("the primary on the driver's node was dropped (store use %d)", u)
	}

	// A node whose copy was dropped pulls it again.
	again, err := atoll.Get(ctx, sumBytes.Remote(ctx, obj, atoll.OnNode(readers[0], false)))
	if err != nil || again.Sum != want || again.Node != readers[0] {
		t.Fatalf("read again on node %s after its copy was dropped: %+v, %v", readers[0], again, err)
	}

	// Released, the pinned copy goes too; the primary stays.
	if err := os.WriteFile(filepath.Join(dir, "release"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if h, err := atoll.Get(ctx, held); err != nil || h.Sum != want {
		t.Fatalf("holding task: %+v, %v", h, err)
	}
	testutil.Eventually(t, "every copy but the primary to go", func() bool {
		return used(readers[0]) < n && used(readers[1]) < n && used(readers[2]) < n
	})
	if u := used(atoll.CurrentNodeID()); u < n {
		t.Fatalf("the primary on the driver's node was dropped (store use %d)", u)
	}
	b, err := atoll.Get(ctx, obj)
	if err != nil || testutil.ByteSum(b) != want {
		t.Fatalf("driver Get at the end: %v", err)
	}
}

// TestAMMReplicate: an object with a tracked count of 3 (SetReplicas) gets
// the two copies it lacks created by the Active Memory Manager on two of
// the cluster's nodes; when a node holding one is killed, the AMM
// restores the count on the third node, whose copy reads right; with the
// count lowered to 1, ReduceReplicas drops the copies it made (they are
// copies, not primaries) and the primary on the driver's node stays. The
// owner's node learns of the copies and forgets them, as for pulls.
func TestAMMReplicate(t *testing.T) {
	c := testcluster.Start(t, testcluster.Options{Nodes: 3, Node: nodeconfig.Config{NumCPUs: 2, FailureTimeout: 2 * time.Second},
		Env: []string{cluster.EnvAMM + "=1", cluster.EnvAMMInterval + "=200ms"}})
	ctx := testmain.JoinCluster(t, c)
	const n = 3 << 20
	want := testutil.ByteSum(testutil.Pattern(n))
	obj, err := atoll.Put(ctx, testutil.Pattern(n))
	if err != nil {
		t.Fatal(err)
	}
	if err := atoll.SetReplicas(ctx, obj, 3); err != nil {
		t.Fatalf("SetReplicas: %v", err)
	}
	dead := -1
	// holders lists the live nodes of c whose store holds the object.
	holders := func() []int {
		var out []int
		for i := range c.Len() {
			if i == dead {
				continue
			}
			x, ok := nodeStatus(ctx, c, c.Node(i).ID)
			if !ok {
				t.Fatalf("no status of node %s", c.Node(i).ID)
			}
			if x.StoreUsed >= n {
				out = append(out, i)
			}
		}
		return out
	}
	// The owner's node (the driver's) keeps the directory of copies.
	copiesKnown := func() uint64 { return c.StatsOf(atoll.CurrentNodeID(), false).Copies }
	if k := copiesKnown(); k != 0 {
		t.Fatalf("the owner's node knows copies of %d objects before any replication", k)
	}
	testutil.Eventually(t, "the AMM to create two copies", func() bool { return len(holders()) == 2 })
	testutil.Eventually(t, "the owner's node to learn of the copies", func() bool { return copiesKnown() == 1 })
	first := holders()
	third := 3 - first[0] - first[1]
	// Kill a holder that is not the head (node 0).
	dead = first[1]
	c.Kill(dead)
	testutil.Eventually(t, "the AMM to restore the third copy on node "+c.Node(third).ID, func() bool {
		return slices.Contains(holders(), third)
	})
	got, err := atoll.Get(ctx, sumBytes.Remote(ctx, obj, atoll.OnNode(c.Node(third).ID, false)))
	if err != nil || got.Sum != want || got.Node != c.Node(third).ID {
		t.Fatalf("read on node %s, which holds the restored copy: %+v, %v", c.Node(third).ID, got, err)
	}

	// The copies are copies: with the count lowered to 1, they go.
	if err := atoll.SetReplicas(ctx, obj, 1); err != nil {
		t.Fatalf("SetReplicas(1): %v", err)
	}
	testutil.Eventually(t, "ReduceReplicas to drop the replicated copies", func() bool { return len(holders()) == 0 })
	testutil.Eventually(t, "the owner's node to forget the dropped copies", func() bool { return copiesKnown() == 0 })
	if x, ok := nodeStatus(ctx, c, atoll.CurrentNodeID()); !ok || x.StoreUsed < n {
		t.Fatalf("the primary on the driver's node was dropped (%+v, %v)", x, ok)
	}
	b, err := atoll.Get(ctx, obj)
	if err != nil || testutil.ByteSum(b) != want {
		t.Fatalf("driver Get at the end: %v", err)
	}
}
