package atoll_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/atoll-runtime/atoll"
	"github.com/atoll-runtime/atoll/atolltest"
	"github.com/atoll-runtime/atoll/internal/nodeconfig"
	"github.com/atoll-runtime/atoll/internal/testcluster"
	"github.com/atoll-runtime/atoll/internal/testmain"
	"github.com/atoll-runtime/atoll/internal/testutil"
)

// incBytes returns b with every byte plus one.
var incBytes = atoll.NewFunc1("cl.incBytes", func(_ context.Context, b []byte) ([]byte, error) {
	out := make([]byte, len(b))
	for i, x := range b {
		out[i] = x + 1
	}
	return out, nil
})

// TestLineageReconstruction kills the node holding the only copies of a
// task's output and of a chain of three outputs (a → b → c, each made from
// the one before, a and b released by the program): a Get of the lone
// object has its task run again on another node, and a Get of the chain's
// end rebuilds the three, recursively; the bytes are right. An object made by Put is not
// rebuilt: its loss fails with ObjectReconstructionFailedError.
func TestLineageReconstruction(t *testing.T) {
	c := testcluster.Start(t, testcluster.Options{Nodes: 3, Node: nodeconfig.Config{NumCPUs: 2, FailureTimeout: 2 * time.Second}})
	ctx := testmain.JoinCluster(t, c)
	victim := c.Node(2)
	const n = 1 << 20
	// Soft affinity: the first run is on the victim, a rerun anywhere.
	on := atoll.OnNode(victim.ID, true)
	lone := makeBytes.Remote(ctx, atoll.Value(n), on)
	a := makeBytes.Remote(ctx, atoll.Value(n), on)
	b := incBytes.Remote(ctx, a, on)
	cEnd := incBytes.Remote(ctx, b, on)
	// Wait without FetchLocal, not Get: either would pull a copy to the
	// driver's node.
	if _, _, err := atoll.Wait(ctx, []atoll.Ref{lone, a, b, cEnd}, atoll.NumReady(4), atoll.FetchLocal(false)); err != nil {
		t.Fatal(err)
	}
	// The program is done with a and b: their data goes, c's lineage
	// keeps their records.
	a.Release()
	b.Release()
	where := nodeOf.Remote(ctx, atoll.Value(0), on)
	if got, err := atoll.Get(ctx, where); err != nil || got != victim.ID {
		t.Fatalf("the soft affinity ran on %q (%v), want the victim %s", got, err, victim.ID)
	}

	c.Kill(2)
	testutil.Eventually(t, "the cluster to declare the victim dead", func() bool {
		x, ok := nodeStatus(ctx, c, victim.ID)
		return ok && !x.Alive || !ok
	})

	got, err := atoll.Get(ctx, lone)
	if err != nil || testutil.ByteSum(got) != testutil.ByteSum(testutil.Pattern(n)) {
		t.Fatalf("Get of the lost object: %v", err)
	}
	end, err := atoll.Get(ctx, cEnd)
	if err != nil {
		t.Fatalf("Get of the chain's end: %v", err)
	}
	want := testutil.Pattern(n)
	for i := range want {
		want[i] += 2
	}
	if testutil.ByteSum(end) != testutil.ByteSum(want) {
		t.Fatal("the rebuilt chain's bytes are wrong")
	}
	m, err := atolltest.Memory(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if m.Reconstructions < 4 {
		t.Errorf("%d reconstructions, want at least 4 (the lone object, c, b, a)", m.Reconstructions)
	}
	t.Logf("reconstructions %d, lineage kept %d tasks (%d bytes)", m.Reconstructions, m.Lineage, m.LineageBytes)
}

// TestLineageNotKept: an object whose task keeps no lineage (MaxRetries(0),
// as in Ray) is not rebuilt when its node dies; the Get fails with
// ObjectReconstructionFailedError, which is also an ErrObjectLost.
func TestLineageNotKept(t *testing.T) {
	c := testcluster.Start(t, testcluster.Options{Nodes: 2, Node: nodeconfig.Config{NumCPUs: 2, FailureTimeout: 2 * time.Second}})
	ctx := testmain.JoinCluster(t, c)
	victim := c.Node(1)
	ref := makeBytes.Remote(ctx, atoll.Value(1<<20), atoll.OnNode(victim.ID, true), atoll.MaxRetries(0))
	if _, _, err := atoll.Wait(ctx, []atoll.Ref{ref}, atoll.FetchLocal(false)); err != nil {
		t.Fatal(err)
	}
	c.Kill(1)
	testutil.Eventually(t, "the cluster to declare the victim dead", func() bool {
		x, ok := nodeStatus(ctx, c, victim.ID)
		return ok && !x.Alive || !ok
	})
	_, err := atoll.Get(ctx, ref)
	var rf *atoll.ObjectReconstructionFailedError
	if !errors.As(err, &rf) || !errors.Is(err, atoll.ErrObjectLost) {
		t.Fatalf("Get of a lost object without lineage: %v, want ObjectReconstructionFailedError", err)
	}
	t.Logf("%v", err)
}
