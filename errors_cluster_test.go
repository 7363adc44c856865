package atoll_test

import (
	"errors"
	"testing"
	"time"

	"github.com/atoll-runtime/atoll"
	"github.com/atoll-runtime/atoll/internal/nodeconfig"
	"github.com/atoll-runtime/atoll/internal/testcluster"
	"github.com/atoll-runtime/atoll/internal/testmain"
)

// TestClusterErrorsAndHandlesTravel runs on three node processes: task
// errors come back as themselves from every node and through a task on
// another node, and an actor handle passed to tasks on other nodes calls
// the actor in each caller's order.
func TestClusterErrorsAndHandlesTravel(t *testing.T) {
	c := testcluster.Start(t, testcluster.Options{Nodes: 3, Node: nodeconfig.Config{NumCPUs: 1, ObjectStoreMemory: 256 << 20, FailureTimeout: 4 * time.Second}})
	ctx := testmain.JoinCluster(t, c, atoll.WithObjectStoreMemory(128<<20))
	nodes := []string{c.Node(0).ID, c.Node(1).ID, c.Node(2).ID}

	t.Run("FromEveryNode", func(t *testing.T) {
		for _, n := range nodes {
			_, err := atoll.Get(ctx, errOnNode.Remote(ctx, atoll.Value(0), atoll.OnNode(n, false)))
			var ce *chargeError
			if !errors.As(err, &ce) || ce.User != n || !errors.Is(err, errOutOfStock) {
				t.Fatalf("error from node %s: As found %+v, Is(errOutOfStock) %v: %v", n[:8], ce, errors.Is(err, errOutOfStock), err)
			}
			var te *atoll.TaskError
			if !errors.As(err, &te) || te.TaskName != "errt.errOnNode" || te.RemoteStack == "" {
				t.Fatalf("TaskError from node %s: %+v", n[:8], te)
			}
		}
	})
	t.Run("ThroughATaskOnAnotherNode", func(t *testing.T) {
		// failNested runs on node 0 and gets failCharge's error from
		// node 2.
		_, err := atoll.Get(ctx, failNested.Remote(ctx, atoll.Value("carol"), atoll.Value(nodes[2]), atoll.OnNode(nodes[0], false)))
		var ce *chargeError
		if !errors.As(err, &ce) || ce.User != "carol" || ce.Cents != 250 {
			t.Fatalf("errors.As across two nodes found %+v in %v", ce, err)
		}
	})
	t.Run("HandlesPassedToOtherNodes", func(t *testing.T) {
		log, err := seqLogType.New(ctx, atoll.OnNode(nodes[2], false))
		if err != nil {
			t.Fatal(err)
		}
		const n = 40
		a := callThroughPlan.Remote(ctx, atoll.Value(callPlan{Log: log, Caller: "a", N: n}), atoll.OnNode(nodes[0], false))
		b := callThroughPlan.Remote(ctx, atoll.Value(callPlan{Log: log, Caller: "b", N: n}), atoll.OnNode(nodes[1], false))
		if got, err := atoll.GetAll(ctx, []atoll.ObjectRef[int]{a, b}); err != nil || got[0] != n || got[1] != n {
			t.Fatalf("callers on nodes 0 and 1: %v, %v", got, err)
		}
		entries, err := atoll.Get(ctx, seqEntries.Remote(ctx, log))
		if err != nil {
			t.Fatal(err)
		}
		checkCallerOrder(t, entries, map[string]int{"a": n, "b": n})
	})
}
