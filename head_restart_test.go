package atoll_test

import (
	"bytes"
	"context"
	"encoding/hex"
	"os"
	"testing"
	"time"

	"github.com/atoll-runtime/atoll/internal/testutil"

	"github.com/atoll-runtime/atoll"
	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/clusterclient"
	"github.com/atoll-runtime/atoll/internal/nodeconfig"
	"github.com/atoll-runtime/atoll/internal/testcluster"
)

// restartGrace is how long a restarted head waits before it marks dead
// the nodes that did not come back: shorter than the default (three
// failure timeouts, at least 10 s), still many times what a live node
// takes to reconnect and report (a quarter second, then every 100 ms).
const restartGrace = 4 * time.Second

// TestHeadRestartKeepsTheCluster: the head of a cluster (embedded NATS,
// so the GCS's tables are in its GCS directory) runs a job to completion,
// crashes (SIGKILL) and is started again on the same port and directory:
// the new head lists the node that kept running alive (it reconnected and
// registered again) and the finished job, marks the crashed head dead,
// does not declare the running node dead once it has checked which nodes
// came back, and a new job runs on that node.
func TestHeadRestartKeepsTheCluster(t *testing.T) {
	c := testcluster.Start(t, testcluster.Options{Nodes: 2, Node: nodeconfig.Config{NumCPUs: 1, FailureTimeout: 2 * time.Second, RejoinGrace: restartGrace}})
	worker := c.Node(1)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	runJob := func(what string) {
		t.Helper()
		if err := atoll.Init(ctx, atoll.WithAddress(c.Address()), atoll.WithSecret(c.Secret()), atoll.WithObjectStoreMemory(64<<20)); err != nil {
			t.Fatalf("%s: Init: %v", what, err)
		}
		where, err := atoll.Get(ctx, nodeOf.Remote(ctx, atoll.Value(0), atoll.OnNode(worker.ID, false)))
		if sErr := atoll.Shutdown(context.Background()); err == nil {
			err = sErr
		}
		if err != nil || where != worker.ID {
			t.Fatalf("%s: ran on %q, %v; want node %s", what, where, err, worker.ID)
		}
	}
	runJob("before the restart")
	jobs, err := clusterclient.ListJobs(ctx, c.Address(), c.Credentials())
	if err != nil || len(jobs) != 1 || !jobs[0].Finished {
		t.Fatalf("jobs before the restart: %v, %v; want one finished", jobs, err)
	}
	finished := jobs[0].JobId

	oldHead := c.Node(0)
	c.Kill(0)
	head := c.Restart(0)
	if head.Config.GCSDir == "" || head.Config.GCSDir != oldHead.Config.GCSDir || head.Address != oldHead.Address {
		t.Fatalf("restarted head: GCS dir %q at %s, was %q at %s", head.Config.GCSDir, head.Address, oldHead.Config.GCSDir, oldHead.Address)
	}
	restarted := time.Now()

	state := func() map[string]atollpb.NodeState { return nodeStates(ctx, t, c) }
	testutil.EventuallyWithin(t, time.Minute, "the new head to list the running node alive and the crashed head dead", func() bool {
		s := state()
		return s[worker.ID] == atollpb.NodeState_NODE_ALIVE && s[head.ID] == atollpb.NodeState_NODE_ALIVE &&
			s[oldHead.ID] == atollpb.NodeState_NODE_DEAD
	})
	t.Logf("%v after its restart the new head lists the running node alive and the crashed one dead", time.Since(restarted).Round(time.Millisecond))
	jobs, err = clusterclient.ListJobs(ctx, c.Address(), c.Credentials())
	if err != nil || len(jobs) != 1 || !bytes.Equal(jobs[0].JobId, finished) || !jobs[0].Finished {
		t.Fatalf("jobs after the restart: %v, %v; want the finished job", jobs, err)
	}
	// The new head checks which nodes the GCS lists alive came back (after
	// its grace): the running node did, and stays alive.
	testutil.EventuallyWithin(t, time.Minute, "the new head to check which nodes came back", func() bool {
		b, err := os.ReadFile(head.LogFile)
		return err == nil && bytes.Contains(b, []byte("checked the nodes the GCS lists alive"))
	})
	if s := state(); s[worker.ID] != atollpb.NodeState_NODE_ALIVE || !worker.Alive() || c.Node(1).PID != worker.PID {
		t.Fatalf("after the new head's check: the running node is %v (process alive %v)", s[worker.ID], worker.Alive())
	}
	if b, err := os.ReadFile(worker.LogFile); err != nil || !bytes.Contains(b, []byte("registered again with the GCS")) {
		t.Errorf("the running node's log does not say it registered again (%v)", err)
	}

	runJob("after the restart")
	if jobs, err := clusterclient.ListJobs(ctx, c.Address(), c.Credentials()); err != nil || len(jobs) != 2 {
		t.Fatalf("jobs after a second one: %v, %v; want both", jobs, err)
	}
}

// TestHeadRestartForgetsNodesThatDiedMeanwhile: a node dies while the head
// is down, with no peer left to tell the GCS: the restarted head, having
// heard nothing from it (nor from the previous head) within its grace,
// marks both dead.
func TestHeadRestartForgetsNodesThatDiedMeanwhile(t *testing.T) {
	c := testcluster.Start(t, testcluster.Options{Nodes: 2, Node: nodeconfig.Config{NumCPUs: 1, FailureTimeout: 2 * time.Second, RejoinGrace: restartGrace}})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	oldHead, worker := c.Node(0), c.Node(1)
	c.Kill(0)
	c.Kill(1)
	head := c.Restart(0)
	restarted := time.Now()
	if s := nodeStates(ctx, t, c); s[worker.ID] != atollpb.NodeState_NODE_ALIVE || s[oldHead.ID] != atollpb.NodeState_NODE_ALIVE {
		t.Fatalf("the restarted head's GCS lists %v; want the nodes it stored, alive, until it has checked them", s)
	}
	testutil.EventuallyWithin(t, time.Minute, "the new head to mark the nodes that did not come back dead", func() bool {
		s := nodeStates(ctx, t, c)
		return s[worker.ID] == atollpb.NodeState_NODE_DEAD && s[oldHead.ID] == atollpb.NodeState_NODE_DEAD && s[head.ID] == atollpb.NodeState_NODE_ALIVE
	})
	t.Logf("marked dead %v after the restart", time.Since(restarted).Round(time.Millisecond))
	testutil.EventuallyWithin(t, time.Minute, "the new head to log its check", func() bool {
		b, err := os.ReadFile(head.LogFile)
		return err == nil && bytes.Contains(b, []byte("marked_dead=2"))
	})
}

// nodeStates is the state of every node the cluster's GCS lists, by id.
func nodeStates(ctx context.Context, t *testing.T, c *testcluster.Cluster) map[string]atollpb.NodeState {
	t.Helper()
	nodes, err := clusterclient.ListNodes(ctx, c.Address(), c.Credentials())
	if err != nil {
		t.Fatalf("list nodes: %v", err)
	}
	m := map[string]atollpb.NodeState{}
	for _, n := range nodes {
		m[hex.EncodeToString(n.NodeId)] = n.State
	}
	return m
}
