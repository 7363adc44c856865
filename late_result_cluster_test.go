package atoll_test

import (
	"context"
	"testing"
	"time"

	"github.com/atoll-runtime/atoll"
	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/actors"
	"github.com/atoll-runtime/atoll/internal/cluster"
	"github.com/atoll-runtime/atoll/internal/clusterclient"
	"github.com/atoll-runtime/atoll/internal/nodeconfig"
	"github.com/atoll-runtime/atoll/internal/testcluster"
	"github.com/atoll-runtime/atoll/internal/testmain"
	"github.com/atoll-runtime/atoll/internal/testutil"
)

// placedBlob says where it was made; its padding keeps it out of line, in
// the store of the node that ran its task.
type placedBlob struct {
	Node string
	Pad  []byte
}

var (
	blobHere = atoll.NewFunc1("late.blobHere", func(_ context.Context, n int) (placedBlob, error) {
		return placedBlob{Node: atoll.CurrentNodeID(), Pad: make([]byte, n)}, nil
	})
	// holdCPU holds its node's CPU until the named gate opens.
	holdCPU = atoll.NewFunc1("late.holdCPU", func(ctx context.Context, gateName string) (bool, error) {
		err := waitGateActor(ctx, gateName, 10*time.Millisecond)
		return err == nil, err
	})
)

// An attempt failed as lost that was only slow: its result comes back
// after the lease ran out and the task was retried on another node. The
// late attempt stored its return on its own node, under the id the
// retry's return has; the owner frees that copy, and only that one (the
// value still reads, from the retry's node). Before, the late result was
// dropped and the copy stayed until the driver exited.
//
// The first attempt's result is delayed past the lease at the driver's
// gateway; meanwhile a task holds the CPU of the node that ran it, so
// the retry (SPREAD, over the nodes with room) goes to the other node.
func TestLateResultOfALostAttemptFreesItsCopy(t *testing.T) {
	// The driver's gateway fails the attempt once this lease runs out;
	// its result comes 18 s late. The rule matches that result alone (the
	// first with a return of a MiB stored): other results may still come
	// back once it is set (an actor creation's, after the event that let
	// its first call go).
	t.Setenv(cluster.EnvForwardLease, "12s")
	c := testcluster.Start(t, testcluster.Options{Nodes: 2, Node: nodeconfig.Config{NumCPUs: 1}})
	fi := actors.NewFaultInjector()
	ctx := testmain.JoinCluster(t, c, atoll.WithFaultInjector(fi))
	g, err := gateType.New(ctx, atoll.ActorName("late-gate"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := atoll.Get(ctx, gateIsOpen.Remote(ctx, g)); err != nil {
		t.Fatal(err)
	}

	fi.Delay(func(msg any) bool {
		m, ok := msg.(*atollpb.ForwardedResult)
		return ok && len(m.GetResult().GetReturns()) == 1 && m.GetResult().GetReturns()[0].GetValue().GetStored().GetLength() >= 1<<20
	}, 18*time.Second, 1)
	start := time.Now()
	ref := blobHere.Remote(ctx, atoll.Value(1<<20), atoll.Spread(), atoll.MaxRetries(1))
	// The first attempt stored its return: on which node?
	var first string
	c.WaitStatus(time.Minute, func(st *clusterclient.Status) bool {
		for _, node := range st.Nodes {
			if node.Objects > 0 {
				first = node.NodeID
				return true
			}
		}
		return false
	})
	asked, err := atoll.Get(ctx, gateAsks.Remote(ctx, g))
	if err != nil {
		t.Fatal(err)
	}
	hold := holdCPU.Remote(ctx, atoll.Value("late-gate"), atoll.OnNode(first, false))
	// The hold runs once it asks the gate. (The node's status said so
	// before: a CPU taken and a task running, which a status from while
	// the first attempt itself ran says too; in one loaded run the retry
	// then went to the first node, whose CPU the hold did not hold yet.)
	testutil.EventuallyWithin(t, time.Minute, "the hold task running", func() bool {
		n, err := atoll.Get(ctx, gateAsks.Remote(ctx, g))
		return err == nil && n > asked
	})
	if held := time.Since(start); held > 10*time.Second {
		t.Fatalf("the first attempt's node was held only %v after the submit, near the lease: the retry may have gone there", held)
	}

	got, err := atoll.Get(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	if got.Node == first || len(got.Pad) != 1<<20 {
		t.Fatalf("the value came from %s (%d bytes); the first attempt ran on %s: want the retry's, on the other node", got.Node, len(got.Pad), first)
	}
	// The late result frees the first attempt's copy while the ref lives:
	// one object left, on the retry's node.
	c.WaitStatus(time.Minute, func(st *clusterclient.Status) bool {
		objects := map[string]uint64{}
		for _, node := range st.Nodes {
			objects[node.NodeID] = node.Objects
		}
		return objects[first] == 0 && objects[got.Node] == 1
	})
	if st := fi.Stats(); st.Delayed != 1 {
		t.Fatalf("%d results delayed, want 1", st.Delayed)
	}
	if again, err := atoll.Get(ctx, ref); err != nil || again.Node != got.Node {
		t.Fatalf("the value read again: %v (from %s)", err, again.Node)
	}

	if _, err := atoll.Get(ctx, gateOpen.Remote(ctx, g)); err != nil {
		t.Fatal(err)
	}
	if _, err := atoll.Get(ctx, hold); err != nil {
		t.Fatal(err)
	}
	ref.Release()
	waitStoresEmpty(c)
}
