package atoll_test

import (
	"testing"

	"github.com/atoll-runtime/atoll"
	"github.com/atoll-runtime/atoll/atolltest"
	"github.com/atoll-runtime/atoll/internal/nodeconfig"
	"github.com/atoll-runtime/atoll/internal/testcluster"
	"github.com/atoll-runtime/atoll/internal/testmain"
)

// TestWaitFetchLocal: on a cluster, Wait with FetchLocal(false) only
// waits for the value to exist on the node that made it; by default it
// also pulls the ready object into the driver's node, as Ray's
// fetch_local does.
func TestWaitFetchLocal(t *testing.T) {
	c := testcluster.Start(t, testcluster.Options{Nodes: 2, Node: nodeconfig.Config{NumCPUs: 2}})
	ctx := testmain.JoinCluster(t, c)
	far := atoll.OnNode(c.Node(1).ID, false)
	storeObjects := func() uint64 {
		m, err := atolltest.Memory(ctx) // the driver's node
		if err != nil {
			t.Fatal(err)
		}
		return m.StoreObjects
	}
	ref := makeBytes.Remote(ctx, atoll.Value(1<<20), far) // 1 MiB: stored on node 1
	ready, _, err := atoll.Wait(ctx, []atoll.ObjectRef[[]byte]{ref}, atoll.FetchLocal(false))
	if err != nil || len(ready) != 1 {
		t.Fatalf("Wait: %v %v", ready, err)
	}
	if n := storeObjects(); n != 0 {
		t.Fatalf("after Wait with FetchLocal(false) the driver's node holds %d objects, want 0", n)
	}
	if ready, _, err = atoll.Wait(ctx, []atoll.ObjectRef[[]byte]{ref}); err != nil || len(ready) != 1 {
		t.Fatalf("Wait: %v %v", ready, err)
	}
	if n := storeObjects(); n != 1 {
		t.Fatalf("after Wait (FetchLocal by default) the driver's node holds %d objects, want the pulled one", n)
	}
	if xs, err := atoll.Get(ctx, ref); err != nil || len(xs) != 1<<20 {
		t.Fatalf("Get: %d bytes, %v", len(xs), err)
	}
}
