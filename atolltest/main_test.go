package atolltest_test

import (
	"context"
	"testing"
	"time"

	"github.com/atoll-runtime/atoll"
	"github.com/atoll-runtime/atoll/internal/clusterclient"
	"github.com/atoll-runtime/atoll/internal/testcluster"
	"github.com/atoll-runtime/atoll/internal/testmain"
	"github.com/atoll-runtime/atoll/internal/testutil"
)

// The tests of the ops and chaos calls run atoll for real: worker
// processes are this test binary re-executed (TestMain serves them), and
// the multi-node tests start real clusters of node processes
// (internal/testcluster).
func TestMain(m *testing.M) { testmain.Run(m) }

// start runs atoll for one test with a small object store and goroutine
// workers (tests that need worker processes use startProcesses).
func start(t *testing.T, opts ...atoll.Option) context.Context {
	t.Helper()
	return testmain.Init(t, 2*time.Minute, append([]atoll.Option{atoll.WithObjectStoreMemory(256 << 20), atoll.WithNumCPUs(2),
		atoll.WithWorkerMode(atoll.InProcessWorkers)}, opts...)...)
}

func startProcesses(t *testing.T, opts ...atoll.Option) context.Context {
	t.Helper()
	return start(t, append([]atoll.Option{atoll.WithWorkerMode(atoll.ProcessWorkers)}, opts...)...)
}

// Functions and actors the tests run on workers and cluster nodes.
type sumOn struct {
	Sum  uint64
	Node string
}

type counter struct{ n int }

var (
	sumBytes = atoll.NewFunc1("ops.sumBytes", func(_ context.Context, b []byte) (sumOn, error) {
		return sumOn{testutil.ByteSum(b), atoll.CurrentNodeID()}, nil
	})
	// holdFor runs for d (or until cancelled) and says where it ran.
	holdFor = atoll.NewFunc1("ops.holdFor", func(ctx context.Context, d time.Duration) (string, error) {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return "", ctx.Err()
		}
		return atoll.CurrentNodeID(), nil
	})
)

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

func findNode(st *clusterclient.Status, id string) (clusterclient.NodeStatus, bool) {
	for _, n := range st.Nodes {
		if n.NodeID == id {
			return n, true
		}
	}
	return clusterclient.NodeStatus{}, false
}
