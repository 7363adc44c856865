// Package testmain is the TestMain of the packages whose tests run atoll
// with worker processes: the test binary is re-executed as a worker (or a
// node) and must serve instead of running the tests, and the tests must
// leave no goroutine behind. It also starts a driver for one test (Start,
// Init) or joins one to a test cluster (JoinCluster).
package testmain

import (
	"context"
	"os"
	"slices"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/atoll-runtime/atoll"
	"github.com/atoll-runtime/atoll/internal/testutil"
)

// Run serves as a worker or node process if this binary was started as
// one (atoll.Init never returns then), else runs the tests and checks for
// leaked goroutines (testutil.VerifyNoLeaks).
func Run(m *testing.M) { RunThen(m, func() {}) }

// RunThen is Run, and calls after once the tests ran and the leak check
// is done, before the process exits (with the tests' exit code).
func RunThen(m *testing.M, after func()) {
	if atoll.IsWorker() {
		_ = atoll.Init(context.Background())
	}
	testutil.VerifyNoLeaks(m, goleak.Cleanup(func(code int) {
		after()
		os.Exit(code)
	}))
}

// Start runs atoll for one test, with worker processes, 2 CPUs and a
// 256 MiB object store unless opts say otherwise, and shuts it down when
// the test ends. The context it returns ends after 3 minutes.
func Start(t *testing.T, opts ...atoll.Option) context.Context {
	t.Helper()
	return StartWithin(t, 3*time.Minute, opts...)
}

// StartWithin is Start for a test that may take longer than Start's 3
// minutes on a loaded machine: its context ends after timeout.
func StartWithin(t *testing.T, timeout time.Duration, opts ...atoll.Option) context.Context {
	t.Helper()
	return Init(t, timeout, append([]atoll.Option{atoll.WithObjectStoreMemory(256 << 20), atoll.WithNumCPUs(2),
		atoll.WithWorkerMode(atoll.ProcessWorkers)}, opts...)...)
}

// Init runs atoll with opts (and no defaults of its own) until the test
// ends, when it shuts it down and reports a failed Shutdown; the context
// it returns ends after timeout.
func Init(t testing.TB, timeout time.Duration, opts ...atoll.Option) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	t.Cleanup(cancel)
	if err := atoll.Init(ctx, opts...); err != nil {
		t.Fatalf("Init: %v", err)
	}
	t.Cleanup(func() {
		if err := atoll.Shutdown(context.Background()); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
	})
	return ctx
}

// Cluster is what JoinCluster needs of a test cluster (a
// testcluster.Cluster).
type Cluster interface {
	Address() string
	Secret() string
	Len() int
}

// JoinCluster connects this test's driver to c (a 512 MiB object store
// unless opts say otherwise) until the test ends, and waits until its node
// sees every node of c: tasks submitted before would all go to the first
// node it heard of. The context it returns ends after 3 minutes.
func JoinCluster(t testing.TB, c Cluster, opts ...atoll.Option) context.Context {
	t.Helper()
	ctx := Init(t, 3*time.Minute, append([]atoll.Option{atoll.WithAddress(c.Address()), atoll.WithSecret(c.Secret()),
		atoll.WithObjectStoreMemory(512 << 20)}, opts...)...)
	testutil.Eventually(t, "the driver to see the cluster's nodes", func() bool {
		return len(SpreadNodes(ctx, t, 3*c.Len())) == c.Len()
	})
	return ctx
}

// nodeOf says which node it ran on.
var nodeOf = atoll.NewFunc1("testmain.nodeOf", func(_ context.Context, _ int) (string, error) { return atoll.CurrentNodeID(), nil })

// SpreadNodes runs n tasks with the SPREAD strategy and returns the
// distinct nodes they ran on, sorted.
func SpreadNodes(ctx context.Context, t testing.TB, n int) []string {
	t.Helper()
	refs := make([]atoll.ObjectRef[string], n)
	for i := range refs {
		refs[i] = nodeOf.Remote(ctx, atoll.Value(i), atoll.Spread())
	}
	got, err := atoll.GetAll(ctx, refs)
	if err != nil {
		t.Fatalf("spread tasks: %v", err)
	}
	slices.Sort(got)
	return slices.Compact(got)
}
