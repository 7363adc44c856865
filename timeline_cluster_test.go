package atoll_test

import (
	"runtime"
	"testing"
	"time"

	"github.com/atoll-runtime/atoll"
	"github.com/atoll-runtime/atoll/internal/clusterclient"
	"github.com/atoll-runtime/atoll/internal/nodeconfig"
	"github.com/atoll-runtime/atoll/internal/raylet"
	"github.com/atoll-runtime/atoll/internal/testcluster"
	"github.com/atoll-runtime/atoll/internal/testmain"
)

// TestTimelineShowsActorsTransfersAndSpills: besides task attempts, a
// node's timeline has its actors' creation and calls, the objects it
// pulled from other nodes, and its store's spills and restores.
func TestTimelineShowsActorsTransfersAndSpills(t *testing.T) {
	c := testcluster.Start(t, testcluster.Options{Nodes: 2, Node: nodeconfig.Config{NumCPUs: 2, ObjectStoreMemory: 64 << 20, FailureTimeout: 10 * time.Second}})
	ctx := testmain.JoinCluster(t, c)
	n0, n1 := c.Node(0).ID, c.Node(1).ID

	// An actor on node 1, called once.
	h, err := tracedAccType.New(ctx, atoll.ActorName("timeline-acc"), atoll.OnNode(n1, false))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := atoll.Get(ctx, tracedAdd.Remote(ctx, h, atoll.Value(1))); err != nil {
		t.Fatal(err)
	}
	// An object made on node 0 and read on node 1: node 1 pulls it.
	made := makeBytes.Remote(ctx, atoll.Value(3<<20), atoll.OnNode(n0, false))
	if _, err := atoll.Get(ctx, sumBytes.Remote(ctx, made, atoll.OnNode(n1, false))); err != nil {
		t.Fatal(err)
	}
	// 72 MiB made on node 1, whose store holds 64: some spill; read
	// there again, they are restored.
	var big []atoll.ObjectRef[[]byte]
	for range 9 {
		big = append(big, makeBytes.Remote(ctx, atoll.Value(8<<20), atoll.OnNode(n1, false)))
	}
	readAll := func() {
		for _, r := range big {
			if _, err := atoll.Get(ctx, sumBytes.Remote(ctx, r, atoll.OnNode(n1, false))); err != nil {
				t.Fatal(err)
			}
		}
	}
	readAll()

	want := map[string]string{ // kind → the node it must show on
		raylet.EventTask: n1, raylet.EventActorCreation: n1, raylet.EventActorCall: n1,
		raylet.EventTransfer: n1, raylet.EventSpill: n1, raylet.EventRestore: n1,
	}
	deadline := time.Now().Add(20 * time.Second)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		events, err := clusterclient.GetTimeline(ctx, c.Address(), c.Credentials())
		if err != nil {
			t.Fatal(err)
		}
		seen, kinds := map[string]bool{}, map[string]int{}
		for _, e := range events {
			kinds[e.Kind+"@"+e.NodeID[:8]]++
			if want[e.Kind] != e.NodeID || e.End.Before(e.Start) {
				continue
			}
			switch e.Kind {
			case raylet.EventActorCall:
				seen[e.Kind] = seen[e.Kind] || (e.Name == "traced.acc.Add" && !e.Failed)
			case raylet.EventActorCreation:
				seen[e.Kind] = seen[e.Kind] || (e.Name == "create traced.acc" && !e.Failed)
			case raylet.EventTransfer:
				seen[e.Kind] = seen[e.Kind] || (e.Bytes >= 3<<20 && !e.Failed)
			case raylet.EventSpill, raylet.EventRestore:
				seen[e.Kind] = seen[e.Kind] || (e.Bytes >= 8<<20 && !e.Failed)
			default:
				seen[e.Kind] = true
			}
		}
		var missing []string
		for kind := range want {
			if !seen[kind] {
				missing = append(missing, kind)
			}
		}
		if len(missing) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("node %s's timeline lacks %v; events by kind@node: %v", n1[:8], missing, kinds)
		}
		if !seen[raylet.EventRestore] && kinds[raylet.EventRestore+"@"+n1[:8]] == 0 {
			readAll() // the reads found every object in memory still: read them again
		}
		<-tick.C
	}
	runtime.KeepAlive(big)
}
