package autoscaler_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/atoll-runtime/atoll"
	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/atolltest"
	"github.com/atoll-runtime/atoll/internal/clusterclient"
	"github.com/atoll-runtime/atoll/internal/localcluster"
	"github.com/atoll-runtime/atoll/internal/nodeconfig"
	"github.com/atoll-runtime/atoll/internal/testcluster"
	"github.com/atoll-runtime/atoll/internal/testmain"
	"github.com/atoll-runtime/atoll/internal/testutil"
)

func TestMain(m *testing.M) { testmain.Run(m) }

type member struct{ n int }

var (
	memberType  = atoll.NewActorType("autoscale.Member", func(context.Context) (*member, error) { return &member{}, nil })
	memberWhere = atoll.NewMethod0(memberType, "Where", func(_ *member, _ context.Context) (string, error) {
		return atoll.CurrentNodeID(), nil
	})
	memberAdd = atoll.NewMethod1(memberType, "Add", func(m *member, _ context.Context, d int) (int, error) {
		m.n += d
		return m.n, nil
	})
	// memberBlob makes an object in its node's store (the caller owns it).
	memberBlob = atoll.NewMethod1(memberType, "Blob", func(_ *member, _ context.Context, seed int) ([]byte, error) {
		return blob(seed), nil
	})
	needsGPU = atoll.NewFunc0("autoscale.needsGPU", func(context.Context) (int, error) { return 1, nil })
)

func blob(seed int) []byte { return bytes.Repeat([]byte{byte(seed)}, 1<<20) }

// clusterFile is the test's: one worker type of 1 CPU and the resource
// "worker" (the head has 1 CPU and no "worker"), at most two workers, idle
// for 3 s they go.
const clusterFile = `
cluster_name: autoscale-test
max_workers: 2
idle_timeout: 3s
launch_timeout: 2m
interval: 300ms
provider:
  type: local
node_types:
  cpu1:
    resources: {CPU: 1, worker: 1}
    max_workers: 2
    object_store_memory: 128MiB
`

// TestAutoscalerWithLocalProvider is the story on real node
// processes the local provider starts: a STRICT_SPREAD group of 3 bundles
// on a 1-node cluster with at most 2 workers makes the autoscaler add 2
// nodes, the group becomes ready and actors in its bundles run on 3
// distinct nodes; the group removed, the 2 nodes go once idle past the
// idle timeout (drained first: the objects they held stay readable); a
// PACK group's node killed, the group is placed again on a node the
// autoscaler adds and its actors restart there; a demand for a resource
// no node type has is reported infeasible and never scaled for.
func TestAutoscalerWithLocalProvider(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cluster.yaml")
	if err := os.WriteFile(path, []byte(clusterFile), 0o600); err != nil {
		t.Fatal(err)
	}
	c := testcluster.Start(t, testcluster.Options{Nodes: 1, Node: nodeconfig.Config{NumCPUs: 1, FailureTimeout: 4 * time.Second},
		Config: func(_ int, cfg *nodeconfig.Config) { cfg.Autoscaler = path }})
	ctx := testmain.Init(t, 6*time.Minute, atoll.WithAddress(c.Address()), atoll.WithSecret(c.Secret()), atoll.WithObjectStoreMemory(256<<20))
	head := c.Node(0).ID
	t.Cleanup(func() {
		if t.Failed() { // the head's log says what the autoscaler decided and why
			t.Logf("the head's log (the end):\n%s", localcluster.Tail(c.Node(0).LogFile, 200))
		}
	})
	status := func() *atollpb.AutoscalerStatus {
		t.Helper()
		st, err := clusterclient.AutoscalerStatus(ctx, c.Address(), c.Credentials())
		if err != nil {
			t.Fatalf("autoscaler status: %v", err)
		}
		return st
	}
	workersAlive := func() []string {
		st, err := clusterclient.GetStatus(ctx, c.Address(), c.Credentials())
		if err != nil {
			return nil
		}
		var out []string
		for _, n := range st.Nodes {
			if n.Alive && !n.Driver && !n.IsHead {
				out = append(out, n.NodeID)
			}
		}
		return out
	}
	within := func(d time.Duration) context.Context {
		wctx, cancel := context.WithTimeout(ctx, d)
		t.Cleanup(cancel)
		return wctx
	}

	// 1. STRICT_SPREAD of three on one node: two nodes added.
	spread, err := atoll.NewPlacementGroup(ctx, []atoll.Resources{{CPU: 1}, {CPU: 1}, {CPU: 1}}, atoll.PlacementStrictSpread)
	if err != nil {
		t.Fatal(err)
	}
	if err := spread.Ready(within(3 * time.Minute)); err != nil {
		t.Fatalf("the STRICT_SPREAD group: %v; autoscaler %v", err, status())
	}
	var nodes []string
	var blobs []atoll.ObjectRef[[]byte]
	for i := range 3 {
		h, err := memberType.New(ctx, atoll.InPlacementGroup(spread, i), atoll.WithTaskResources(atoll.Resources{CPU: 1}))
		if err != nil {
			t.Fatal(err)
		}
		node, err := atoll.Get(ctx, memberWhere.Remote(ctx, h))
		if err != nil {
			t.Fatal(err)
		}
		nodes = append(nodes, node)
		blobs = append(blobs, memberBlob.Remote(ctx, h, atoll.Value(i+1)))
	}
	if slices.Sort(nodes); len(slices.Compact(slices.Clone(nodes))) != 3 || !slices.Contains(nodes, head) {
		t.Fatalf("the group's actors ran on %v, want 3 distinct nodes, the head among them", nodes)
	}
	added := workersAlive()
	if len(added) != 2 {
		t.Fatalf("workers alive %v, want the 2 the autoscaler added", added)
	}
	if st := status(); !slices.ContainsFunc(st.Decisions, func(d *atollpb.AutoscalerDecision) bool {
		return d.Action == "launch" && d.NodeType == "cpu1" && strings.Contains(d.Reason, "placement group")
	}) {
		t.Errorf("no launch for the placement group among the decisions: %v", st.Decisions)
	}
	// The blobs are made (on the workers), not fetched here.
	refs := make([]atoll.Ref, len(blobs))
	for i, b := range blobs {
		refs[i] = b
	}
	if _, _, err := atoll.Wait(ctx, refs, atoll.NumReady(len(refs)), atoll.FetchLocal(false)); err != nil {
		t.Fatal(err)
	}

	// 2. Removed, the group's nodes go once idle past the idle timeout,
	// drained first.
	if err := spread.Remove(ctx); err != nil {
		t.Fatal(err)
	}
	testutil.EventuallyWithin(t, 3*time.Minute, "the two workers removed", func() bool { return len(workersAlive()) == 0 })
	for i, b := range blobs {
		v, err := atoll.Get(ctx, b)
		if err != nil || !bytes.Equal(v, blob(i+1)) {
			t.Fatalf("blob %d after its node was removed: %d bytes, %v", i, len(v), err)
		}
	}
	st := status()
	drains := 0 // those a node refused (busy since its last report) do not count
	for _, d := range st.Decisions {
		switch d.Action {
		case "drain":
			drains++
		case "drain-refused":
			drains--
		}
	}
	if drains != 2 {
		t.Errorf("%d drains, want 2: %v", drains, st.Decisions)
	}

	// 3. A PACK group on a worker; its node killed: a node is added for
	// it again and its actors restart there.
	worker := atoll.Resources{CPU: 0.5, Custom: map[string]float64{"worker": 0.5}}
	pack, err := atoll.NewPlacementGroup(ctx, []atoll.Resources{worker, worker}, atoll.PlacementPack)
	if err != nil {
		t.Fatal(err)
	}
	if err := pack.Ready(within(3 * time.Minute)); err != nil {
		t.Fatalf("the PACK group: %v; autoscaler %v", err, status())
	}
	ps, err := pack.State(ctx)
	if err != nil || ps.BundleNodes[0] != ps.BundleNodes[1] || ps.BundleNodes[0] == head {
		t.Fatalf("PACK group %+v %v: want both bundles on one worker", ps, err)
	}
	first := ps.BundleNodes[0]
	var members []atoll.ActorHandle[*member]
	for i := range 2 {
		h, err := memberType.New(ctx, atoll.InPlacementGroup(pack, i), atoll.MaxRestarts(1), atoll.MaxTaskRetries(3))
		if err != nil {
			t.Fatal(err)
		}
		if n, err := atoll.Get(ctx, memberAdd.Remote(ctx, h, atoll.Value(5))); err != nil || n != 5 {
			t.Fatalf("member %d: %d %v", i, n, err)
		}
		members = append(members, h)
	}
	if err := atolltest.KillNode(ctx, first); err != nil {
		t.Fatal(err)
	}
	testutil.EventuallyWithin(t, 3*time.Minute, "the PACK group placed again", func() bool {
		ps, err = pack.State(ctx)
		return err == nil && ps.State == "CREATED" && ps.Reschedules >= 1 && ps.BundleNodes[0] != first
	})
	for i, h := range members {
		gctx := within(2 * time.Minute)
		node, err := atoll.Get(gctx, memberWhere.Remote(gctx, h))
		if err != nil || node != ps.BundleNodes[i] {
			t.Fatalf("member %d after its node died: on %q (%v), want %s", i, node, err, ps.BundleNodes[i])
		}
		if n, err := atoll.Get(ctx, memberAdd.Remote(ctx, h, atoll.Value(1))); err != nil || n != 1 {
			t.Fatalf("member %d restarted: %d %v, want a new instance's 1", i, n, err)
		}
	}

	// 4. A resource no node type has: infeasible, never scaled for.
	launches := func() int {
		n := 0
		for _, d := range status().Decisions {
			if d.Action == "launch" {
				n += int(d.Count)
			}
		}
		return n
	}
	before := launches()
	gpu := needsGPU.Remote(ctx, atoll.WithTaskResources(atoll.Resources{CPU: 1, Custom: map[string]float64{"GPU": 1}}))
	testutil.EventuallyWithin(t, time.Minute, "the GPU demand reported infeasible", func() bool {
		st := status()
		return slices.ContainsFunc(st.Demands, func(d *atollpb.AutoscalerDemand) bool { return d.Infeasible && d.Resources["GPU"] == 1 }) &&
			slices.ContainsFunc(st.Decisions, func(d *atollpb.AutoscalerDecision) bool {
				return d.Action == "infeasible" && strings.Contains(d.Reason, "GPU")
			})
	})
	// Several rounds later, still no node for it.
	rounds := status().Rounds
	testutil.EventuallyWithin(t, time.Minute, "three more rounds", func() bool { return status().Rounds >= rounds+3 })
	if after := launches(); after != before {
		t.Fatalf("%d launches after the infeasible demand, %d before", after, before)
	}
	if err := atoll.Cancel(ctx, gpu); err != nil {
		t.Fatal(err)
	}

	// 5. request_resources: room for two "worker" bundles at once, where
	// the PACK group's node has room for one, adds a node, which stays
	// while requested and goes once the request is withdrawn.
	one := atoll.Resources{CPU: 1, Custom: map[string]float64{"worker": 1}}
	if err := atoll.RequestResources(ctx, one, one); err != nil {
		t.Fatal(err)
	}
	testutil.EventuallyWithin(t, 3*time.Minute, "a node added for request_resources", func() bool { return len(workersAlive()) == 2 })
	if st := status(); !slices.ContainsFunc(st.Decisions, func(d *atollpb.AutoscalerDecision) bool {
		return d.Action == "launch" && strings.Contains(d.Reason, "request_resources")
	}) {
		t.Errorf("no launch for request_resources among the decisions: %v", st.Decisions)
	}
	if err := atoll.RequestResources(ctx); err != nil {
		t.Fatal(err)
	}
	testutil.EventuallyWithin(t, 3*time.Minute, "the requested node removed once withdrawn", func() bool { return len(workersAlive()) == 1 })
}
