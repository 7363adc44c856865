package atolltest_test

import (
	"testing"
	"time"

	"github.com/atoll-runtime/atoll"
	"github.com/atoll-runtime/atoll/atolltest"
)

// The cluster-wide fault log: a plan's message rules run in the node
// processes (loaded from faultplan.EnvPlan by node.RunFromEnv) and in
// the driver's node; GetClusterFaultLog returns the faults of every
// node, each labelled with the node that injected it, its counts by
// rule, and reads only new events when given Seen.
func TestClusterFaultLog(t *testing.T) {
	plan := `
seed: 5
rules:
  - name: worker-submits
    action: delay
    message: SubmitTask
    actor: raylet
    node: workers
    delay: 1ms
  - name: driver-creates
    action: delay
    message: CreateObjectRequest
    actor: objectstore
    node: driver
    delay: 1ms
`
	c, ctx := startPlanCluster(t, plan, 2)
	head, worker := c.Node(0).ID, c.Node(1).ID
	// Run tasks until the worker node and the driver's node both faulted.
	var log atolltest.ClusterFaultLog
	byNode := map[string]*atolltest.NodeFaults{}
	deadline := time.Now().Add(time.Minute)
	for {
		ref, err := atoll.Put(ctx, make([]byte, 256<<10)) // a store object on the driver's node
		if err != nil {
			t.Fatal(err)
		}
		refs := []atoll.ObjectRef[string]{}
		for range 4 {
			refs = append(refs, holdFor.Remote(ctx, atoll.Value(time.Millisecond), atoll.Spread()))
		}
		if _, err := atoll.GetAll(ctx, refs); err != nil {
			t.Fatal(err)
		}
		ref.Release()
		if log, err = atolltest.GetClusterFaultLog(ctx, nil); err != nil {
			t.Fatal(err)
		}
		clear(byNode)
		for i := range log.Nodes {
			byNode[log.Nodes[i].Node] = &log.Nodes[i]
		}
		if w := byNode[worker]; w != nil && w.Total > 0 && log.Nodes[0].Total > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no faults on the worker node and the driver's within a minute: %+v", log.Nodes)
		}
	}
	if len(log.Unreachable) != 0 || len(log.Nodes) != 3 || byNode[head] == nil || !log.Nodes[0].Driver {
		t.Fatalf("nodes %+v, unreachable %v; want the driver's, the head %s and the worker %s", log.Nodes, log.Unreachable, head, worker)
	}
	driver := log.Nodes[0].Node
	for _, n := range log.Nodes {
		if !n.Injector {
			t.Errorf("node %s has no injector: the plan did not reach it", n.Node)
		}
	}
	if h := byNode[head]; h.Total != 0 {
		t.Errorf("the head injected %d faults; the plan has none for it", h.Total)
	}
	ruleOf := map[string]string{driver: "driver-creates", worker: "worker-submits"}
	counted := map[string]map[string]uint64{}
	for _, e := range log.Messages {
		if want := ruleOf[e.Node]; e.Rule != want {
			t.Errorf("node %s: event %v, want rule %q", e.Node, e.FaultEvent, ruleOf[e.Node])
		}
		if counted[e.Node] == nil {
			counted[e.Node] = map[string]uint64{}
		}
		counted[e.Node][e.Rule]++
	}
	for _, n := range []string{driver, worker} {
		f := byNode[n]
		r := ruleOf[n]
		if f.Lost != 0 || counted[n][r] != f.Total || f.ByRule[r] != f.Total || f.Stats.Delayed != f.Total {
			t.Errorf("node %s: %d events, counts %+v", n, counted[n][r], *f)
		}
	}
	// Since: only later events come back.
	seen := log.Seen()
	for {
		refs := []atoll.ObjectRef[string]{}
		for range 4 {
			refs = append(refs, holdFor.Remote(ctx, atoll.Value(time.Millisecond), atoll.Spread()))
		}
		if _, err := atoll.GetAll(ctx, refs); err != nil {
			t.Fatal(err)
		}
		next, err := atolltest.GetClusterFaultLog(ctx, seen)
		if err != nil {
			t.Fatal(err)
		}
		newOnWorker := 0
		for _, e := range next.Messages {
			if e.Seq <= seen[e.Node] {
				t.Fatalf("event %v of node %s read again (seen through %d)", e.FaultEvent, e.Node, seen[e.Node])
			}
			if e.Node == worker {
				newOnWorker++
			}
		}
		if newOnWorker > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no new fault on the worker node")
		}
	}
}
