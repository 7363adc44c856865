package atolltest_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/atoll-runtime/atoll"
	"github.com/atoll-runtime/atoll/atolltest"
	"github.com/atoll-runtime/atoll/faultplan"
	"github.com/atoll-runtime/atoll/internal/clusterclient"
	"github.com/atoll-runtime/atoll/internal/testcluster"
	"github.com/atoll-runtime/atoll/internal/testmain"
)

// A plan on a cluster: node processes load its message rules from the
// file faultplan.EnvPlan names, the driver runs its timed kill; the
// workload's tasks all finish correctly (the killed node's are retried)
// and the log names the victim, which the cluster declares dead.
func TestFaultPlanOnCluster(t *testing.T) {
	plan := `
seed: 3
rules:
  - name: slow-submits
    action: delay
    message: SubmitTask
    actor: raylet
    node: workers
    delay: 2ms
    probability: 0.3
  - name: kill-one
    action: kill-node
    at: 1s
`
	c, ctx := startPlanCluster(t, plan, 3)
	var refs []atoll.ObjectRef[string]
	deadline := time.Now().Add(time.Minute)
	for {
		log, err := atolltest.GetFaultLog(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(log.Timed) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the kill-node rule did not fire within a minute")
		}
		for range 4 { // keep the cluster busy until the kill
			refs = append(refs, holdFor.Remote(ctx, atoll.Value(50*time.Millisecond), atoll.Spread()))
		}
		if _, err := atoll.Get(ctx, refs[len(refs)-1]); err != nil {
			t.Fatal(err)
		}
	}
	for i, ref := range refs {
		if _, err := atoll.Get(ctx, ref); err != nil {
			t.Fatalf("task %d of %d: %v", i, len(refs), err)
		}
	}
	log, _ := atolltest.GetFaultLog(ctx)
	e := log.Timed[0]
	if e.Rule != "kill-one" || e.Victim == "" || e.Err != "" {
		t.Fatalf("timed event %+v", e)
	}
	if e.Victim == c.Node(0).ID {
		t.Fatal("the plan killed the head")
	}
	for i := range c.Len() {
		b, err := os.ReadFile(c.Node(i).LogFile)
		if err != nil || !strings.Contains(string(b), "fault plan loaded") {
			t.Errorf("node %d did not load the plan (%v)", i, err)
		}
	}
	st := c.WaitStatus(30*time.Second, func(st *clusterclient.Status) bool {
		return slices.ContainsFunc(st.Nodes, func(n clusterclient.NodeStatus) bool { return n.NodeID == e.Victim && !n.Alive })
	})
	if st == nil {
		t.Fatalf("node %s still alive after the plan killed it", e.Victim)
	}
}

// startPlanCluster writes plan to a file, starts a cluster of n node
// processes that load it (faultplan.EnvPlan), and joins it as a driver
// running the plan (its node's rules and the timed ones) until the
// test ends. Not joinCluster: its wait for every node to run a task
// would race with a plan's kill.
func startPlanCluster(t *testing.T, plan string, n int) (*testcluster.Cluster, context.Context) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "plan.yaml")
	if err := os.WriteFile(file, []byte(plan), 0o600); err != nil {
		t.Fatal(err)
	}
	p, err := faultplan.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	c := testcluster.Start(t, testcluster.Options{Nodes: n, Env: []string{faultplan.EnvPlan + "=" + file}})
	return c, testmain.Init(t, 2*time.Minute, atoll.WithAddress(c.Address()), atoll.WithSecret(c.Secret()),
		atoll.WithObjectStoreMemory(64<<20), atoll.WithFaultPlan(p))
}
