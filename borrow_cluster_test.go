package atoll_test

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/atoll-runtime/atoll"
	"github.com/atoll-runtime/atoll/atolltest"
	"github.com/atoll-runtime/atoll/internal/nodeconfig"
	"github.com/atoll-runtime/atoll/internal/testcluster"
	"github.com/atoll-runtime/atoll/internal/testmain"
	"github.com/atoll-runtime/atoll/internal/testutil"
)

// forwardOn forwards a box through one task per node of path (each a
// borrower lent the ref by the one before) and reads its object on the
// last; it reports the sum and the nodes it went through.
var forwardOn *atoll.Func2[refBox, []string, forwarded]

type forwarded struct {
	Sum   int
	Nodes []string
}

func init() {
	forwardOn = atoll.NewFunc2("borrow.forwardOn", func(ctx context.Context, b refBox, path []string) (forwarded, error) {
		if len(path) > 0 {
			f, err := atoll.Get(ctx, forwardOn.Remote(ctx, atoll.Value(b), atoll.Value(path[1:]), atoll.OnNode(path[0], false)))
			f.Nodes = append([]string{atoll.CurrentNodeID()}, f.Nodes...)
			return f, err
		}
		v, err := atoll.Get(ctx, b.Ref)
		if err != nil {
			return forwarded{}, err
		}
		return forwarded{Sum: blobSum(v), Nodes: []string{atoll.CurrentNodeID()}}, nil
	})
}

// TestBorrowCluster: on a 3-node cluster, a task on node 1 returns a ref
// inside a struct (its object stays in node 1's store, now owned by the
// driver); the driver forwards it inside a value through tasks on nodes
// 1 and 2, the last reading it; an actor on node 2 keeps it after the
// driver dropped every handle, reads it, then drops it. Then the driver's
// owner table and every node's store are empty.
func TestBorrowCluster(t *testing.T) {
	c := testcluster.Start(t, testcluster.Options{Nodes: 3, Node: nodeconfig.Config{NumCPUs: 1, FailureTimeout: 4 * time.Second}})
	ctx := testmain.JoinCluster(t, c)
	nodes := []string{c.Node(0).ID, c.Node(1).ID, c.Node(2).ID}
	want := blobSum(blob(11))

	box, err := atoll.Get(ctx, makeBox.Remote(ctx, atoll.Value(byte(11)), atoll.OnNode(nodes[1], false)))
	if err != nil {
		t.Fatal(err)
	}
	if v, err := atoll.Get(ctx, box.Ref); err != nil || blobSum(v) != want {
		t.Fatalf("driver reads the ref a task on node 1 returned inside a struct: %d %v", blobSum(v), err)
	}
	f, err := atoll.Get(ctx, forwardOn.Remote(ctx, atoll.Value(box), atoll.Value([]string{nodes[2]}), atoll.OnNode(nodes[1], false)))
	if err != nil || f.Sum != want || len(f.Nodes) != 2 || f.Nodes[0] != nodes[1] || f.Nodes[1] != nodes[2] {
		t.Fatalf("forwarded through node 1 to node 2: %+v %v", f, err)
	}

	k, err := keeperType.New(ctx, atoll.OnNode(nodes[2], false))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := atoll.Get(ctx, keep.Remote(ctx, k, atoll.Value(box))); err != nil {
		t.Fatal(err)
	}
	box = refBox{}
	for i := range 3 {
		runtime.GC()
		if s, err := atoll.Get(ctx, readKept.Remote(ctx, k)); err != nil || s != want {
			t.Fatalf("read %d by the actor on node 2 after the driver dropped its ref: %d %v", i, s, err)
		}
	}
	if m, err := atolltest.Memory(ctx); err != nil || m.Borrowers != 1 || m.BorrowedObjects != 1 {
		t.Fatalf("driver tracks %d borrowers holding %d objects (%v), want 1 and 1", m.Borrowers, m.BorrowedObjects, err)
	}
	if _, err := atoll.Get(ctx, dropKept.Remote(ctx, k)); err != nil {
		t.Fatal(err)
	}
	if err := atoll.Kill(ctx, k); err != nil {
		t.Fatal(err)
	}
	k = atoll.ActorHandle[*keeper]{}
	var m atolltest.MemoryStats
	testutil.Eventually(t, "the driver's owner table and store to empty", func() bool {
		runtime.GC()
		if m, err = atolltest.Memory(ctx); err != nil {
			t.Fatal(err)
		}
		return m.OwnedObjects == 0 && m.PendingTasks == 0 && m.Borrowers == 0 && m.BorrowedObjects == 0 && m.StoreObjects == 0
	})
	for _, id := range nodes {
		testutil.EventuallyWithin(t, 30*time.Second, "node "+id[:8]+"'s store to empty", func() bool {
			n, ok := nodeStatus(ctx, c, id)
			return ok && n.Objects == 0
		})
	}
}
