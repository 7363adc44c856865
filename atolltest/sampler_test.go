package atolltest_test

import (
	"errors"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/atoll-runtime/atoll"
	"github.com/atoll-runtime/atoll/atolltest"
	"github.com/atoll-runtime/atoll/internal/testcluster"
	"github.com/atoll-runtime/atoll/internal/testmain"
	"github.com/atoll-runtime/atoll/internal/testutil"
	"github.com/atoll-runtime/atoll/memsample"
)

// On the embedded single node, SampleMemory samples the node's own store:
// an object put raises it by the object's size. Shutdown stops a sampler
// still running.
func TestSampleMemoryLocal(t *testing.T) {
	ctx := start(t)
	for _, d := range []time.Duration{0, -time.Second} {
		if _, err := atolltest.SampleMemory(ctx, d); !errors.Is(err, atoll.ErrInvalidArgument) {
			t.Errorf("SampleMemory(%v): %v, want ErrInvalidArgument", d, err)
		}
	}
	s, err := atolltest.SampleMemory(ctx, 5*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	first := s.Samples()
	if len(first.Times) == 0 || len(first.Nodes) != 1 || first.Nodes[0].NodeID != atoll.CurrentNodeID() ||
		first.Nodes[0].Role != memsample.RoleHead || first.Nodes[0].Capacity[0] != 256<<20 {
		t.Fatalf("first sample: %+v", first)
	}
	base := first.Total[0]
	const size = 4 << 20
	ref, err := atoll.Put(ctx, testutil.Pattern(size))
	if err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, "the sampled store use to rise by the object's size", func() bool { return s.Progress().Total >= base+size })
	if p := s.Samples().Peak(); p.Bytes < base+size {
		t.Errorf("peak %d, want at least %d", p.Bytes, base+size)
	}
	runtime.KeepAlive(ref)

	if err := atoll.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case <-s.Done():
	default:
		t.Fatal("the sampler still runs after Shutdown")
	}
	if _, err := atolltest.SampleMemory(ctx, time.Second); !errors.Is(err, atoll.ErrNotInitialized) {
		t.Errorf("SampleMemory after Shutdown: %v", err)
	}
}

// A driver joined to a cluster samples every node: the head, the worker
// and its own node. An object it puts raises its node's line and the
// cluster total by the object's size; a task on another node pulls a copy
// and raises the total again.
func TestSampleMemoryCluster(t *testing.T) {
	c := testcluster.Start(t, testcluster.Options{Nodes: 2})
	ctx := testmain.JoinCluster(t, c)
	s, err := atolltest.SampleMemory(ctx, 20*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	first := s.Samples()
	var roles []memsample.Role
	for _, n := range first.Nodes {
		roles = append(roles, n.Role)
	}
	if !slices.Equal(roles, []memsample.Role{memsample.RoleHead, memsample.RoleWorker, memsample.RoleDriver}) {
		t.Fatalf("nodes %+v: want the head, the worker and the driver's node", first.Nodes)
	}
	if first.Nodes[2].NodeID != atoll.CurrentNodeID() || first.Nodes[0].NodeID != c.Node(0).ID {
		t.Fatalf("nodes %+v: want the head %s first and the driver's node %s last", first.Nodes, c.Node(0).ID, atoll.CurrentNodeID())
	}
	base := first.Total[len(first.Total)-1]

	const size = 4 << 20
	obj, err := atoll.Put(ctx, testutil.Pattern(size))
	if err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, "the cluster total to rise by the object's size", func() bool { return s.Progress().Total >= base+size })
	got, err := atoll.Get(ctx, sumBytes.Remote(ctx, obj, atoll.OnNode(c.Node(1).ID, false)))
	if err != nil || got.Node != c.Node(1).ID {
		t.Fatalf("read on the worker: %+v, %v", got, err)
	}
	testutil.Eventually(t, "the cluster total to rise by the worker's copy", func() bool { return s.Progress().Total >= base+2*size })
	samples := s.Stop()
	if p := samples.Nodes[2].Peak(samples.Times); p.Bytes < size {
		t.Errorf("driver's node peak %d, want at least %d", p.Bytes, size)
	}
	if p := samples.Nodes[1].Peak(samples.Times); p.Bytes < size {
		t.Errorf("worker's peak %d, want at least %d", p.Bytes, size)
	}
	if p := samples.Peak(); p.Bytes < base+2*size {
		t.Errorf("cluster peak %d, want at least %d", p.Bytes, base+2*size)
	}
}
