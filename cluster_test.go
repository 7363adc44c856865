package atoll_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/atoll-runtime/atoll"
	"github.com/atoll-runtime/atoll/atolltest"
	"github.com/atoll-runtime/atoll/internal/clusterclient"
	"github.com/atoll-runtime/atoll/internal/natsembed"
	"github.com/atoll-runtime/atoll/internal/nodeconfig"
	"github.com/atoll-runtime/atoll/internal/testcluster"
	"github.com/atoll-runtime/atoll/internal/testmain"
	"github.com/atoll-runtime/atoll/internal/testutil"
)

// Functions and actors the multi-node tests run on the cluster's nodes.
type sumOn struct {
	Sum  uint64
	Node string
}

var (
	nodeOf   = atoll.NewFunc1("cl.nodeOf", func(_ context.Context, _ int) (string, error) { return atoll.CurrentNodeID(), nil })
	sumBytes = atoll.NewFunc1("cl.sumBytes", func(_ context.Context, b []byte) (sumOn, error) {
		return sumOn{testutil.ByteSum(b), atoll.CurrentNodeID()}, nil
	})
	makeBytes = atoll.NewFunc1("cl.makeBytes", func(_ context.Context, n int) ([]byte, error) { return testutil.Pattern(n), nil })
	// holdFor runs for d (or until cancelled) and says where it ran.
	holdFor = atoll.NewFunc1("cl.holdFor", func(ctx context.Context, d time.Duration) (string, error) {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return "", ctx.Err()
		}
		return atoll.CurrentNodeID(), nil
	})
	// makeAndHold makes an n-byte object on node (owned by this task's
	// worker process) and holds it until cancelled.
	makeAndHold = atoll.NewFunc2("cl.makeAndHold", func(ctx context.Context, node string, n int) (int, error) {
		ref := makeBytes.Remote(ctx, atoll.Value(n), atoll.OnNode(node, false))
		if _, _, err := atoll.Wait(ctx, []atoll.Ref{ref}, atoll.FetchLocal(false)); err != nil {
			return 0, err
		}
		<-ctx.Done()
		ref.Release()
		return 0, ctx.Err()
	})
	// sumRemote runs in a worker process: it has node's task make n bytes
	// and reads them itself (a pull into this worker's node).
	sumRemote = atoll.NewFunc2("cl.sumRemote", func(ctx context.Context, node string, n int) (sumOn, error) {
		b, err := atoll.Get(ctx, makeBytes.Remote(ctx, atoll.Value(n), atoll.OnNode(node, false)))
		if err != nil {
			return sumOn{}, err
		}
		return sumOn{testutil.ByteSum(b), atoll.CurrentNodeID()}, nil
	})
	// addToNamed runs in a worker process: it calls a named actor,
	// wherever it lives.
	addToNamed = atoll.NewFunc2("cl.addToNamed", func(ctx context.Context, name string, d int) (int, error) {
		h, err := atoll.GetActor[*tally](ctx, name)
		if err != nil {
			return 0, err
		}
		return atoll.Get(ctx, tallyAdd.Remote(ctx, h, atoll.Value(d)))
	})
	tallyType = atoll.NewActorType("cl.tally", func(context.Context) (*tally, error) { return &tally{}, nil })
	tallyAdd  = atoll.NewMethod1(tallyType, "Add", func(t *tally, _ context.Context, d int) (int, error) {
		t.n += d
		return t.n, nil
	})
	tallyNode = atoll.NewMethod0(tallyType, "Node", func(*tally, context.Context) (string, error) { return atoll.CurrentNodeID(), nil })
)

type tally struct{ n int }

func pullsByNode(t *testing.T, c *testcluster.Cluster) map[string]uint64 {
	t.Helper()
	st, err := clusterclient.GetStatus(context.Background(), c.Address(), c.Credentials())
	if err != nil {
		t.Fatalf("cluster status: %v", err)
	}
	m := map[string]uint64{}
	for _, n := range st.Nodes {
		m[n.NodeID] = n.Pulls
	}
	return m
}

// TestCluster runs a driver against a real three-node cluster: every node
// a separate process with its own arena, NATS for the control plane,
// memberlist for failures, TCP for object bytes.
func TestCluster(t *testing.T) {
	// A 4 s failure timeout: under `make test` (packages in parallel on 2
	// cores, the race detector) the driver filling 256 MiB once missed a
	// 2 s one and was declared dead mid-test.
	c := testcluster.Start(t, testcluster.Options{Nodes: 3, Node: nodeconfig.Config{NumCPUs: 1, ObjectStoreMemory: 768 << 20, FailureTimeout: 4 * time.Second}})
	ctx := testmain.JoinCluster(t, c)
	nodes := []string{c.Node(0).ID, c.Node(1).ID, c.Node(2).ID}

	t.Run("SpreadUsesEveryNode", func(t *testing.T) {
		if got := testmain.SpreadNodes(ctx, t, 9); !slices.Equal(got, sorted(nodes)) {
			t.Fatalf("SPREAD tasks ran on %v, want every node %v", got, sorted(nodes))
		}
		// Every node's timeline has the attempts it ran.
		events, err := clusterclient.GetTimeline(ctx, c.Address(), c.Credentials())
		if err != nil {
			t.Fatal(err)
		}
		ran := map[string]int{}
		for _, e := range events {
			if e.Name == "testmain.nodeOf" && !e.Failed && !e.End.Before(e.Start) {
				ran[e.NodeID]++
			}
		}
		for _, id := range nodes {
			if ran[id] == 0 {
				t.Errorf("node %s's timeline has no testmain.nodeOf attempt: %v", id[:8], ran)
			}
		}
	})

	t.Run("ArgumentFromAnotherNode", func(t *testing.T) {
		// Produced on node 1 (larger than the inline limit, so it lives in
		// node 1's store), consumed on node 2.
		const n = 3 << 20
		made := makeBytes.Remote(ctx, atoll.Value(n), atoll.OnNode(nodes[1], false))
		got, err := atoll.Get(ctx, sumBytes.Remote(ctx, made, atoll.OnNode(nodes[2], false)))
		if err != nil {
			t.Fatal(err)
		}
		if want := testutil.ByteSum(testutil.Pattern(n)); got.Sum != want || got.Node != nodes[2] {
			t.Fatalf("sum %d on node %s, want %d on %s", got.Sum, got.Node, want, nodes[2])
		}
		// The driver reads it too (pulled into the driver's node).
		b, err := atoll.Get(ctx, made)
		if err != nil || testutil.ByteSum(b) != testutil.ByteSum(testutil.Pattern(n)) {
			t.Fatalf("driver Get of a remote object: %v", err)
		}
	})

	t.Run("RemoteActorKeepsState", func(t *testing.T) {
		h, err := tallyType.New(ctx, atoll.OnNode(nodes[2], false), atoll.ActorName("remote-tally"))
		if err != nil {
			t.Fatal(err)
		}
		where, err := atoll.Get(ctx, tallyNode.Remote(ctx, h))
		if err != nil || where != nodes[2] {
			t.Fatalf("actor runs on %q (%v), want node %s", where, err, nodes[2])
		}
		for i := 1; i <= 5; i++ {
			if v, err := atoll.Get(ctx, tallyAdd.Remote(ctx, h, atoll.Value(10))); err != nil || v != 10*i {
				t.Fatalf("call %d: %d, %v; want %d", i, v, err, 10*i)
			}
		}
		// Kill reaches the host on node 2: the GCS hears the actor died.
		if err := atoll.Kill(ctx, h); err != nil {
			t.Fatal(err)
		}
		testutil.Eventually(t, "the killed actor to be gone from the GCS", func() bool {
			_, err := atoll.GetActor[*tally](ctx, "remote-tally")
			return errors.Is(err, atoll.ErrNotFound) || errors.Is(err, atoll.ErrActorDied)
		})
	})

	t.Run("WorkerProcessesReachOtherNodes", func(t *testing.T) {
		// A task on node 1 reads an object a nested task made on node 2.
		const n = 2 << 20
		got, err := atoll.Get(ctx, sumRemote.Remote(ctx, atoll.Value(nodes[2]), atoll.Value(n), atoll.OnNode(nodes[1], false)))
		if err != nil || got.Sum != testutil.ByteSum(testutil.Pattern(n)) || got.Node != nodes[1] {
			t.Fatalf("nested remote object read in a worker: %+v, %v", got, err)
		}
		// A task on node 0 calls an actor on node 2.
		h, err := tallyType.New(ctx, atoll.OnNode(nodes[2], false), atoll.ActorName("worker-called"))
		if err != nil {
			t.Fatal(err)
		}
		for i := 1; i <= 3; i++ {
			if v, err := atoll.Get(ctx, addToNamed.Remote(ctx, atoll.Value("worker-called"), atoll.Value(7), atoll.OnNode(nodes[0], false))); err != nil || v != 7*i {
				t.Fatalf("call %d from a worker on node 0: %d, %v; want %d", i, v, err, 7*i)
			}
		}
		if err := atoll.Kill(ctx, h); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("LargeObjectTransferredOncePerNode", func(t *testing.T) {
		const n = 64 << 20 // many transfer chunks; larger only costs time under -race
		ref, err := atoll.PutWith(ctx, n, func(b []byte) { copy(b, testutil.Pattern(n)) })
		if err != nil {
			t.Fatal(err)
		}
		before := pullsByNode(t, c)
		refs := make([]atoll.ObjectRef[sumOn], 6)
		for i := range refs {
			refs[i] = sumBytes.Remote(ctx, ref, atoll.Spread())
		}
		res, err := atoll.GetAll(ctx, refs)
		if err != nil {
			t.Fatal(err)
		}
		want := testutil.ByteSum(testutil.Pattern(n))
		ran := map[string]int{}
		for _, r := range res {
			if r.Sum != want {
				t.Fatalf("sum %d on node %s, want %d", r.Sum, r.Node, want)
			}
			ran[r.Node]++
		}
		if len(ran) != 3 {
			t.Fatalf("tasks ran on %v, want all three nodes", ran)
		}
		after := pullsByNode(t, c)
		for _, id := range nodes {
			if d := after[id] - before[id]; d != 1 {
				t.Errorf("node %s pulled %d objects for %d readers, want 1", id[:8], d, ran[id])
			}
		}
		ref.Release()
	})

	t.Run("CancelForwardedTask", func(t *testing.T) {
		cctx, cancel := context.WithCancel(ctx)
		ref := holdFor.Remote(cctx, atoll.Value(time.Minute), atoll.OnNode(nodes[1], false))
		testutil.Eventually(t, "the task to run on node 1", func() bool {
			n, ok := nodeStatus(ctx, c, nodes[1])
			return ok && n.Running == 1
		})
		cancel()
		if _, err := atoll.Get(ctx, ref); !errors.Is(err, atoll.ErrCancelled) {
			t.Fatalf("Get of a cancelled task running on another node: %v, want ErrCancelled", err)
		}
	})

	t.Run("TaskWaitsForANodeThatCanRunIt", func(t *testing.T) {
		ref := nodeOf.Remote(ctx, atoll.Value(0), atoll.WithTaskResources(atoll.Resources{CPU: 1, Custom: map[string]float64{"GPU": 1}}))
		short, stop := context.WithTimeout(ctx, 300*time.Millisecond)
		ready, _, _ := atoll.Wait(short, []atoll.Ref{ref}, atoll.FetchLocal(false))
		stop()
		if len(ready) != 0 {
			t.Fatal("a task demanding a GPU finished on a cluster without GPUs")
		}
		gpu := c.AddNode(func(cfg *nodeconfig.Config) { cfg.Resources = map[string]float64{"GPU": 1} })
		where, err := atoll.Get(ctx, ref)
		if err != nil || where != gpu.ID {
			t.Fatalf("GPU task ran on %q (%v), want the GPU node %s", where, err, gpu.ID)
		}
		c.Stop(gpu.Index)
		// Stopped (SIGTERM): it left, and says so.
		st := waitDead(c, gpu.ID)
		if n, _ := findNode(st, gpu.ID); !n.Left || n.EndReason != "stopped" {
			t.Errorf("the stopped node: %+v, want left, \"stopped\"", n)
		}
	})

	t.Run("NodeFailure", func(t *testing.T) {
		// Four tasks prefer node 2 (one CPU): one runs, three queue there.
		refs := make([]atoll.ObjectRef[string], 4)
		for i := range refs {
			refs[i] = holdFor.Remote(ctx, atoll.Value(3*time.Second), atoll.OnNode(nodes[2], true))
		}
		testutil.Eventually(t, "node 2 to run and queue the tasks", func() bool {
			n, ok := nodeStatus(ctx, c, nodes[2])
			return ok && n.Running+n.Queued == 4
		})
		killed := time.Now()
		c.Kill(2)
		st := waitDead(c, nodes[2])
		detected := time.Since(killed)
		if n, _ := findNode(st, nodes[2]); n.Left || !strings.HasPrefix(n.EndReason, "declared dead") {
			t.Errorf("the killed node: %+v, want dead (not left), declared dead by the failure detector", n)
		}
		t.Logf("node death detected (GCS marked it dead) %v after the kill", detected.Round(time.Millisecond))
		// Detection time is a figure, not a test: on a loaded 2-core machine
		// heartbeats and gossip run late. The bound only catches a death
		// found by something other than the failure detector (a far later
		// fallback), not a slow one.
		if limit := 3*c.Options().Node.FailureTimeout + 2*time.Second; detected > limit {
			t.Errorf("death detected after %v, want within 3x the failure timeout + 2 s (%v)", detected, limit)
		}
		// The queued and running tasks were retried on the survivors.
		for i, r := range refs {
			where, err := atoll.Get(ctx, r)
			if err != nil {
				t.Fatalf("task %d: %v", i, err)
			}
			if where == nodes[2] || !slices.Contains(nodes, where) {
				t.Fatalf("task %d ran on %s after node 2 died", i, where)
			}
		}
		// Hard affinity to the dead node fails with the typed error; soft
		// affinity runs elsewhere.
		_, err := atoll.Get(ctx, nodeOf.Remote(ctx, atoll.Value(0), atoll.OnNode(nodes[2], false)))
		var unsched *atoll.UnschedulableError
		if !errors.As(err, &unsched) || !errors.Is(err, atoll.ErrUnschedulable) {
			t.Fatalf("hard affinity to a dead node: %v, want UnschedulableError", err)
		}
		if where, err := atoll.Get(ctx, nodeOf.Remote(ctx, atoll.Value(0), atoll.OnNode(nodes[2], true))); err != nil || where == nodes[2] {
			t.Fatalf("soft affinity to a dead node: ran on %q, %v", where, err)
		}
	})
}

// waitDead waits until the cluster reports node id dead.
func waitDead(c *testcluster.Cluster, id string) *clusterclient.Status {
	return c.WaitStatus(10*time.Second, func(st *clusterclient.Status) bool {
		n, ok := findNode(st, id)
		return ok && !n.Alive
	})
}

// findNode returns node id's entry in st.
func findNode(st *clusterclient.Status, id string) (clusterclient.NodeStatus, bool) {
	for _, n := range st.Nodes {
		if n.NodeID == id {
			return n, true
		}
	}
	return clusterclient.NodeStatus{}, false
}

// nodeStatus is node id's entry in the cluster's current status, once
// its load report arrived (a status taken on a busy machine may lack it,
// and an entry without a report says nothing of the node's store); false
// if the node is not listed, or does not report within 10 s.
func nodeStatus(ctx context.Context, c *testcluster.Cluster, id string) (clusterclient.NodeStatus, bool) {
	deadline := time.Now().Add(10 * time.Second)
	for {
		st, err := clusterclient.GetStatus(ctx, c.Address(), c.Credentials())
		if err == nil {
			n, ok := findNode(st, id)
			if !ok || n.Reporting || !n.Alive {
				return n, ok && n.Reporting
			}
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return clusterclient.NodeStatus{}, false
		}
	}
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

// TestClusterGCSRestart kills the head (GCS and all) of a cluster whose
// control plane is an existing NATS server, starts it again, and checks
// that the new GCS reloaded its tables: the named actor is still found
// and answers, and the nodes are still known.
func TestClusterGCSRestart(t *testing.T) {
	ns, err := natsembed.Start(natsembed.Config{Port: natsembed.RandomPort, StoreDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ns.Shutdown)
	c := testcluster.Start(t, testcluster.Options{Nodes: 2, Node: nodeconfig.Config{NumCPUs: 1, NATSURL: ns.ClientURL()}})
	ctx := testmain.JoinCluster(t, c)
	worker := c.Node(1).ID
	h, err := tallyType.New(ctx, atoll.ActorName("survivor"), atoll.OnNode(worker, false))
	if err != nil {
		t.Fatal(err)
	}
	if v, err := atoll.Get(ctx, tallyAdd.Remote(ctx, h, atoll.Value(5))); err != nil || v != 5 {
		t.Fatalf("before the restart: %d, %v", v, err)
	}

	oldHead := c.Node(0).ID
	c.Kill(0)
	c.Restart(0)
	st := c.WaitStatus(20*time.Second, func(st *clusterclient.Status) bool {
		known := map[string]bool{}
		for _, n := range st.Nodes {
			known[n.NodeID] = true
		}
		return known[oldHead] && known[worker] && known[c.Node(0).ID]
	})
	t.Logf("after the restart the GCS knows %d nodes", len(st.Nodes))

	again, err := atoll.GetActor[*tally](ctx, "survivor")
	if err != nil {
		t.Fatalf("GetActor after the GCS restart: %v", err)
	}
	if v, err := atoll.Get(ctx, tallyAdd.Remote(ctx, again, atoll.Value(5))); err != nil || v != 10 {
		t.Fatalf("after the restart: %d, %v; want 10 (state kept)", v, err)
	}
}

// TestClusterObjectCopies checks the owner's directory of copies: an
// object whose primary copy died with its node is still read from the
// copy another node pulled earlier.
func TestClusterObjectCopies(t *testing.T) {
	c := testcluster.Start(t, testcluster.Options{Nodes: 3, Node: nodeconfig.Config{NumCPUs: 1, FailureTimeout: 2 * time.Second}})
	ctx := testmain.JoinCluster(t, c)
	nodes := []string{c.Node(0).ID, c.Node(1).ID, c.Node(2).ID}
	const n = 3 << 20
	want := testutil.ByteSum(testutil.Pattern(n))

	made := makeBytes.Remote(ctx, atoll.Value(n), atoll.OnNode(nodes[1], false)) // primary on node 1
	if got, err := atoll.Get(ctx, sumBytes.Remote(ctx, made, atoll.OnNode(nodes[2], false))); err != nil || got.Sum != want {
		t.Fatalf("first read on node 2: %+v, %v", got, err) // node 2 now holds a copy
	}
	// A worker process on node 1 owns an object on node 0.
	storeUsed := func(node string) uint64 {
		x, ok := nodeStatus(ctx, c, node)
		if !ok {
			t.Fatalf("no status of node %s", node)
		}
		return x.StoreUsed
	}
	before := storeUsed(nodes[0])
	holder := makeAndHold.Remote(ctx, atoll.Value(nodes[0]), atoll.Value(n), atoll.OnNode(nodes[1], false))
	testutil.Eventually(t, "node 0 to hold the object a worker on node 1 owns", func() bool { return storeUsed(nodes[0]) >= before+n })
	c.Kill(1)
	waitDead(c, nodes[1])
	// Its owner died with node 1: node 0 frees it.
	testutil.Eventually(t, "node 0 to free the object its dead owner held", func() bool { return storeUsed(nodes[0]) <= before })
	// The task retried after its node died, pinned to that node: it cannot
	// be scheduled any more.
	if _, err := atoll.Get(ctx, holder); !errors.Is(err, atoll.ErrUnschedulable) {
		t.Fatalf("the task that ran on the dead node: %v, want UnschedulableError", err)
	}
	got, err := atoll.Get(ctx, sumBytes.Remote(ctx, made, atoll.OnNode(nodes[0], false)))
	if err != nil || got.Sum != want || got.Node != nodes[0] {
		t.Fatalf("read on node 0 after the primary's node died: %+v, %v; want the sum from node 2's copy", got, err)
	}
	b, err := atoll.Get(ctx, made)
	if err != nil || testutil.ByteSum(b) != want {
		t.Fatalf("driver Get after the primary's node died: %v", err)
	}

	// With no copy left anywhere, the object is lost; its task, pinned to
	// the dead node, cannot rebuild it: a typed error.
	lost := makeBytes.Remote(ctx, atoll.Value(n), atoll.OnNode(nodes[2], false))
	if _, _, err := atoll.Wait(ctx, []atoll.Ref{lost}, atoll.FetchLocal(false)); err != nil {
		t.Fatal(err)
	}
	// Fault injection from the driver: node 2 dies like a failed machine.
	if err := atolltest.KillNode(ctx, atoll.CurrentNodeID()); !errors.Is(err, atoll.ErrInvalidArgument) {
		t.Fatalf("KillNode of the driver's own node: %v, want ErrInvalidArgument", err)
	}
	if err := atolltest.KillNode(ctx, strings.Repeat("ab", 16)); !errors.Is(err, atoll.ErrNotFound) {
		t.Fatalf("KillNode of an unknown node: %v, want ErrNotFound", err)
	}
	if err := atolltest.KillNode(ctx, nodes[2]); err != nil {
		t.Fatal(err)
	}
	select {
	case <-c.Node(2).Done():
	case <-ctx.Done():
		t.Fatal("node 2's process did not exit after KillNode")
	}
	waitDead(c, nodes[2])
	if _, err := atoll.Get(ctx, lost); !errors.Is(err, atoll.ErrObjectReconstructionFailed) || !errors.Is(err, atoll.ErrObjectLost) {
		t.Fatalf("Get of an object whose only copy died: %v, want ErrObjectReconstructionFailed", err)
	}
}

// TestPausedNodeDeclaredDeadExits: a node paused (SIGSTOP) past the
// failure timeout is declared dead; resumed, it learns it from the GCS
// and exits with an error instead of running on as a node the cluster
// will never use.
func TestPausedNodeDeclaredDeadExits(t *testing.T) {
	c := testcluster.Start(t, testcluster.Options{Nodes: 2, Node: nodeconfig.Config{NumCPUs: 1, FailureTimeout: 2 * time.Second}})
	paused := c.Node(1)
	if err := paused.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	resumed := false
	defer func() {
		if !resumed {
			_ = paused.Signal(syscall.SIGCONT)
		}
	}()
	waitDead(c, paused.ID)
	if err := paused.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	resumed = true
	select {
	case <-paused.Done():
	case <-time.After(30 * time.Second):
		t.Fatal("the resumed node is still running 30 s after it was declared dead")
	}
	var exit *exec.ExitError
	if err := paused.ExitErr(); !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("resumed node exited with %v, want exit status 1", paused.ExitErr())
	}
	if log, _ := os.ReadFile(paused.LogFile); !strings.Contains(string(log), "declared this node dead") {
		t.Fatalf("the node's log does not say why it exited:\n%s", log)
	}
}
