package testcluster_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/atoll-runtime/atoll/internal/testutil"

	"github.com/atoll-runtime/atoll"
	"github.com/atoll-runtime/atoll/internal/cluster"
	"github.com/atoll-runtime/atoll/internal/clusterclient"
	"github.com/atoll-runtime/atoll/internal/nodeconfig"
	"github.com/atoll-runtime/atoll/internal/testcluster"
)

func TestMain(m *testing.M) {
	if atoll.IsWorker() {
		// This test binary was started as a node or a worker process.
		_ = atoll.Init(context.Background())
	}
	os.Exit(m.Run())
}

// count returns the alive and dead nodes of a status.
func count(st *clusterclient.Status) (alive, dead int) {
	for _, n := range st.Nodes {
		if n.Alive {
			alive++
		} else {
			dead++
		}
	}
	return alive, dead
}

// TestCluster starts three nodes, checks the cluster sees them, kills one
// and checks it is declared dead within the failure timeout.
func TestCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("starts node processes")
	}
	c := testcluster.Start(t, testcluster.Options{Nodes: 3})
	if c.Len() != 3 || !c.Node(0).Config.Head || c.Node(1).Config.Head || c.Address() == "" {
		t.Fatalf("cluster of %d nodes at %q", c.Len(), c.Address())
	}
	ids := map[string]bool{}
	for i := range 3 {
		n := c.Node(i)
		if n.ID == "" || n.PID <= 0 || !n.Alive() || n.Index != i || ids[n.ID] {
			t.Fatalf("node %d: %+v", i, n)
		}
		ids[n.ID] = true
	}
	c.WaitStatus(testcluster.ReadyTimeout, func(st *clusterclient.Status) bool {
		alive, _ := count(st)
		return alive == 3
	})

	victim := c.Node(2)
	c.Kill(2)
	if victim.Alive() {
		t.Fatal("killed node still alive")
	}
	st := c.WaitStatus(c.Options().Node.FailureTimeout+3*time.Second, func(st *clusterclient.Status) bool {
		for _, n := range st.Nodes {
			if n.NodeID == victim.ID {
				return !n.Alive
			}
		}
		return false
	})
	if alive, dead := count(st); alive != 2 || dead != 1 {
		t.Errorf("after the kill: %d alive, %d dead; want 2 and 1", alive, dead)
	}
}

// TestAddAndRestart adds a node with its own resources and restarts a
// node: the new incarnation joins under a new id.
func TestAddAndRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("starts node processes")
	}
	c := testcluster.Start(t, testcluster.Options{Nodes: 2})
	added := c.AddNode(func(cfg *nodeconfig.Config) { cfg.Resources = map[string]float64{"GPU": 2} })
	if added.Index != 2 || c.Len() != 3 || c.Node(2) != added || added.Config.Address != c.Address() {
		t.Fatalf("added node %+v (cluster of %d)", added, c.Len())
	}
	c.WaitStatus(testcluster.ReadyTimeout, func(st *clusterclient.Status) bool {
		for _, n := range st.Nodes {
			if n.NodeID == added.ID {
				return n.Alive && n.Total["GPU"] == 2
			}
		}
		return false
	})

	old := c.Node(1)
	restarted := c.Restart(1)
	if old.Alive() || !restarted.Alive() || c.Node(1) != restarted || restarted.ID == old.ID || restarted.PID == old.PID {
		t.Fatalf("restart: old %+v, new %+v", old, restarted)
	}
	c.WaitStatus(testcluster.ReadyTimeout, func(st *clusterclient.Status) bool {
		state := map[string]bool{}
		for _, n := range st.Nodes {
			state[n.NodeID] = n.Alive
		}
		alive, known := state[old.ID]
		return state[restarted.ID] && (!known || !alive)
	})
	c.Stop(2)
	if added.Alive() {
		t.Error("stopped node still alive")
	}
}

// TestStatsAndEnv: Options.Env reaches the node processes, NodeStats and
// GCSSizes read a node's tables and the GCS's.
func TestStatsAndEnv(t *testing.T) {
	if testing.Short() {
		t.Skip("starts node processes")
	}
	c := testcluster.Start(t, testcluster.Options{Nodes: 2, Env: []string{cluster.EnvMaxDeadNodes + "=7"}})
	c.WaitStatus(testcluster.ReadyTimeout, func(st *clusterclient.Status) bool {
		alive, _ := count(st)
		return alive == 2
	})
	st := c.NodeStats(0, true)
	if st.MaxDeadNodes != 7 || st.HeapAllocBytes == 0 || st.Goroutines == 0 || st.Peers != 1 || st.HeardNodes != 1 {
		t.Fatalf("stats %v: want the cap from Options.Env, a heap, goroutines and the other node", st)
	}
	c.Stop(1)
	testutil.EventuallyWithin(t, 10*time.Second, "the head to count the stopped node dead", func() bool {
		return c.NodeStats(0, false).DeadNodes == 1
	})
	if g := c.GCSSizes(); g.Nodes != 2 || g.DeadNodes != 1 {
		t.Errorf("GCS sizes %+v, want 2 nodes, 1 dead", g)
	}
}
