package atoll_test

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/atoll-runtime/atoll"
	"github.com/atoll-runtime/atoll/atolltest"
	"github.com/atoll-runtime/atoll/faultplan"
	"github.com/atoll-runtime/atoll/internal/actors"
	"github.com/atoll-runtime/atoll/internal/clusterclient"
	"github.com/atoll-runtime/atoll/internal/nodeconfig"
	"github.com/atoll-runtime/atoll/internal/testcluster"
	"github.com/atoll-runtime/atoll/internal/testmain"
)

// Generator tasks on a cluster: the items of an attempt running on
// another node come back through the gateways, and the caller's acks go
// out to it (cluster/generators.go).

// nodeItem is an item that says where it was yielded; every third is
// padded past the inline limit, so it lives in the producer's node store
// and the reader pulls it.
type nodeItem struct {
	I    int
	Node string
	Pad  []byte
}

var (
	genOnNode = atoll.NewGenFunc1("gencl.count", func(ctx context.Context, n int, yield func(nodeItem) error) error {
		for i := range n {
			if err := yield(nodeItem{I: i, Node: atoll.CurrentNodeID(), Pad: makeItem(i).Pad}); err != nil {
				return err
			}
		}
		return nil
	})
	// genReader runs in a worker process: it reads n items of a stream
	// produced on node producer, with a backpressure limit of 2, and
	// returns how many came from there, in order.
	genReader = atoll.NewFunc2("gencl.reader", func(ctx context.Context, producer string, n int) (int, error) {
		gen := genOnNode.Remote(ctx, atoll.Value(n), atoll.OnNode(producer, false), atoll.GeneratorBackpressure(2))
		defer gen.Release() // a worker's GC may be minutes away
		got := 0
		for ref, err := range gen.All(ctx) {
			if err != nil {
				return got, err
			}
			it, err := atoll.Get(ctx, ref)
			ref.Release()
			if err != nil {
				return got, err
			}
			if it.I != got || it.Node != producer || len(it.Pad) != len(makeItem(got).Pad) {
				return got, fmt.Errorf("item %d: index %d from node %.8s with %d padding bytes; want node %.8s", got, it.I, it.Node, len(it.Pad), producer)
			}
			got++
		}
		return got, nil
	})
)

// readNodeItem is Next then Get, checking the item's index, its node and
// its content.
func readNodeItem(t *testing.T, ctx context.Context, g *atoll.ObjectRefGenerator[nodeItem], want int, node string) {
	t.Helper()
	ref, err := g.Next(ctx)
	if err != nil {
		t.Fatalf("Next (want item %d): %v", want, err)
	}
	it, err := atoll.Get(ctx, ref)
	if err != nil {
		t.Fatalf("Get item %d: %v", want, err)
	}
	pad := makeItem(want).Pad
	if it.I != want || it.Node != node || len(it.Pad) != len(pad) || len(pad) > 0 && it.Pad[len(pad)-1] != pad[len(pad)-1] {
		t.Fatalf("item %d: got index %d from node %.8s with %d padding bytes; want node %.8s", want, it.I, it.Node, len(it.Pad), node)
	}
}

// TestGeneratorCluster: a driver connected to a three-node cluster reads
// streams produced on other nodes, with backpressure across them; a task
// on one node reads a stream produced on another; a stream whose worker
// is killed on another node ends with every item, from the retry; the
// single-node
// scenarios (an item while the task runs, an error after items, a release
// mid-stream, a cancel) hold across nodes and leave nothing behind; a
// stream whose node is killed mid-way ends with every item, from the
// retry.
func TestGeneratorCluster(t *testing.T) {
	c := testcluster.Start(t, testcluster.Options{Nodes: 3, Node: nodeconfig.Config{NumCPUs: 2, FailureTimeout: 4 * time.Second}})
	ctx := testmain.JoinCluster(t, c)
	nodes := []string{c.Node(0).ID, c.Node(1).ID, c.Node(2).ID}

	t.Run("DriverReadsAnotherNode", func(t *testing.T) {
		// The consumer waits for the producer to be held back before each
		// Next: every yield past the limit waits for an ack that crossed
		// from the driver's node to node 1.
		const n, limit = 14, 3
		gen := genOnNode.Remote(ctx, atoll.Value(n), atoll.OnNode(nodes[1], false), atoll.GeneratorBackpressure(limit))
		readHeldBack(t, gen, n, limit, func(i int) { readNodeItem(t, ctx, gen, i, nodes[1]) })
		wantNodeEnd(t, ctx, gen)
		gen.Release()
	})

	t.Run("TaskReadsAnotherNode", func(t *testing.T) {
		bounded, cancel := context.WithTimeout(ctx, 2*time.Minute)
		defer cancel()
		got, err := atoll.Get(bounded, genReader.Remote(ctx, atoll.Value(nodes[2]), atoll.Value(10), atoll.OnNode(nodes[1], false)))
		if err != nil || got != 10 {
			t.Fatalf("a task on node 1 read %d items of a stream on node 2 (%v); want 10", got, err)
		}
	})

	t.Run("ProducerWorkerKilled", func(t *testing.T) {
		tr, err := trackerType.New(ctx, atoll.ActorName("gencl-worker-tracker"), atoll.OnNode(nodes[0], false))
		if err != nil {
			t.Fatal(err)
		}
		// The retry runs on node 1 again, as a new attempt through the
		// gateways; the items it yields again are ignored.
		gen := genKillable.Remote(ctx, atoll.Value(killGenArgs{Tracker: "gencl-worker-tracker", N: 12, KillAt: 5}), atoll.MaxRetries(1),
			atoll.GeneratorBackpressure(4), atoll.OnNode(nodes[1], false))
		for i := range 3 {
			readItem(t, ctx, gen, i)
		}
		if err := syscall.Kill(waitForPid(t, ctx, tr), syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		for i := 3; i < 12; i++ {
			readItem(t, ctx, gen, i)
		}
		wantEnd(t, ctx, gen)
		if reported, taken := generatorCounts(gen); reported != 12 || taken != 12 {
			t.Fatalf("%d items reported, %d taken; want 12 of each", reported, taken)
		}
		gen.Release()
		if err := atoll.Kill(ctx, tr); err != nil {
			t.Fatal(err)
		}
	})

	// The driver's node has no CPUs: the single-node scenarios run their
	// generators on the other nodes.
	t.Run("ItemsBeforeTheEnd", func(t *testing.T) { testItemsBeforeTheEnd(t, ctx) })
	t.Run("ErrorAfterItems", func(t *testing.T) { testErrorAfterItems(t, ctx) })
	t.Run("ReleaseMidStream", func(t *testing.T) { testReleaseMidStream(t, ctx) })
	t.Run("Cancel", func(t *testing.T) { testCancel(t, ctx) })
	// Items holding refs: to objects the producer on node 1 put (handed
	// over with each item) and to the one the driver lent it.
	t.Run("ItemsHoldRefs", func(t *testing.T) { testGeneratorItemsHoldRefs(t, ctx, atoll.OnNode(nodes[1], false)) })
	wantClean(t, ctx)

	t.Run("ProducerNodeKilled", func(t *testing.T) {
		tr, err := trackerType.New(ctx, atoll.ActorName("gencl-tracker"), atoll.OnNode(nodes[1], false))
		if err != nil {
			t.Fatal(err)
		}
		// Soft affinity: the retry runs wherever it can once node 2 is gone.
		gen := genKillable.Remote(ctx, atoll.Value(killGenArgs{Tracker: "gencl-tracker", N: 12, KillAt: 5}), atoll.MaxRetries(1),
			atoll.GeneratorBackpressure(4), atoll.OnNode(nodes[2], true))
		for i := range 3 {
			readItem(t, ctx, gen, i)
		}
		waitForPid(t, ctx, tr) // the first attempt yielded its 5 items and waits
		c.Kill(2)
		for i := 3; i < 12; i++ {
			readItem(t, ctx, gen, i)
		}
		wantEnd(t, ctx, gen)
		if reported, taken := generatorCounts(gen); reported != 12 || taken != 12 {
			t.Fatalf("%d items reported, %d taken; want 12 of each", reported, taken)
		}
		if pids, err := atoll.Get(ctx, pids.Remote(ctx, tr)); err != nil || len(pids) != 2 {
			t.Fatalf("attempts registered: %v (%v); want 2 (the killed one and its retry)", pids, err)
		}
		gen.Release()
	})
}

func wantNodeEnd(t *testing.T, ctx context.Context, g *atoll.ObjectRefGenerator[nodeItem]) {
	t.Helper()
	if ref, err := g.Next(ctx); !errors.Is(err, atoll.ErrEndOfStream) {
		t.Fatalf("after the last item: %v, %v; want ErrEndOfStream", ref, err)
	}
}

// TestGeneratorLostAndLateItems: a fault plan on the driver's node (where
// its results arrive) drops the first item a generator on another
// node reports and delays the second past the ones after it. The stream
// still gives every item, in order: the late one is held for, the lost
// one is sent again by the producer, held back by backpressure; and once
// it is released nothing stays in any node's store.
func TestGeneratorLostAndLateItems(t *testing.T) {
	plan := `
seed: 1
rules:
  - name: lose-item
    action: drop
    message: ForwardedResult
    actor: gateway
    node: driver
    probability: 1
    count: 1
  - name: late-item
    action: delay
    message: ForwardedResult
    actor: gateway
    node: driver
    delay: 300ms
    probability: 1
    count: 1
`
	p, err := faultplan.Parse([]byte(plan))
	if err != nil {
		t.Fatal(err)
	}
	c := testcluster.Start(t, testcluster.Options{Nodes: 2, Node: nodeconfig.Config{NumCPUs: 2}})
	fi := actors.NewFaultInjector()
	ctx := testmain.JoinCluster(t, c, atoll.WithFaultInjector(fi))
	p.Install(fi, faultplan.Driver) // after joining: the generator's reports are the first results forwarded
	producer := c.Node(1).ID

	const n, limit = 9, 3
	gen := genOnNode.Remote(ctx, atoll.Value(n), atoll.OnNode(producer, false), atoll.GeneratorBackpressure(limit))
	for i := range n {
		readNodeItem(t, ctx, gen, i, producer)
	}
	wantNodeEnd(t, ctx, gen)
	gen.Release()
	log, err := atolltest.GetFaultLog(ctx)
	if err != nil {
		t.Fatal(err)
	}
	fired := map[string]int{}
	for _, e := range log.Messages {
		fired[e.Rule]++
	}
	if fired["lose-item"] != 1 || fired["late-item"] != 1 {
		t.Fatalf("rules fired: %v; want lose-item and late-item once each", fired)
	}
	waitStoresEmpty(c)
}

// waitStoresEmpty waits for every node's store to hold no object.
func waitStoresEmpty(c *testcluster.Cluster) {
	c.WaitStatus(time.Minute, func(st *clusterclient.Status) bool {
		for _, node := range st.Nodes {
			if node.Objects != 0 {
				return false
			}
		}
		return true
	})
}
