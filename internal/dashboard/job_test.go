package dashboard_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/atoll-runtime/atoll"
	"github.com/atoll-runtime/atoll/internal/cluster"
	"github.com/atoll-runtime/atoll/internal/clusterkey"
	"github.com/atoll-runtime/atoll/internal/nodeconfig"
	"github.com/atoll-runtime/atoll/internal/testcluster"
	"github.com/atoll-runtime/atoll/internal/testmain"
)

// The job the dashboard tests run on their cluster: squares spread over
// the nodes, a task that fails, and an actor with a few calls.
var (
	square = atoll.NewFunc1("dash.square", func(_ context.Context, x int) (int, error) {
		fmt.Printf("dash.square(%d) on node %s\n", x, atoll.CurrentNodeID()) // to the node's log
		return x * x, nil
	})
	// blob makes n bytes in its node's store.
	blob = atoll.NewFunc1("dash.blob", func(_ context.Context, n int) ([]byte, error) { return make([]byte, n), nil })
	fail = atoll.NewFunc1("dash.fail", func(_ context.Context, x int) (int, error) {
		return 0, fmt.Errorf("dash.fail refuses %d", x)
	})
	counterType = atoll.NewActorType("dash.counter", func(context.Context) (*counter, error) { return &counter{}, nil })
	counterAdd  = atoll.NewMethod1(counterType, "Add", func(c *counter, _ context.Context, d int) (int, error) {
		c.n += d
		return c.n, nil
	})
)

type counter struct{ n int }

// The job's shape.
const (
	numSquares = 6
	numFails   = 1
	numCalls   = 3
	// numBlobs objects of blobBytes stay in the nodes' stores (one per
	// node); numPuts of putBytes, more than the driver's store holds,
	// make it spill.
	numBlobs  = 3
	blobBytes = 4 << 20
	numPuts   = 5
	putBytes  = 4 << 20
	// driverStore is the driver's store: numPuts*putBytes do not fit.
	driverStore = 16 << 20
	// The task attempts: finished (squares and blobs), and all.
	numFinished = numSquares + numBlobs
	numAttempts = numFinished + numFails
)

const failureTimeout = 20 * time.Second

// traceURL links the tasks to a trace viewer (none runs: the test only
// reads the links).
const traceURL = "http://traces.example/trace/{trace_id}"

// startCluster starts a 3-node cluster whose head serves the dashboard,
// joins it as a traced driver and runs the job; it returns the driver's
// context and the dashboard's URL.
func startCluster(t *testing.T) (*testcluster.Cluster, context.Context) {
	t.Helper()
	// No node dies in this test: a long failure timeout keeps a loaded
	// machine from declaring one dead.
	c := testcluster.Start(t, testcluster.Options{Nodes: 3, Node: nodeconfig.Config{Dashboard: true, ObjectStoreMemory: 64 << 20, FailureTimeout: failureTimeout},
		Config: func(i int, cfg *nodeconfig.Config) {
			if i == 0 {
				cfg.DashboardTraceURL = traceURL
			}
		}})
	secret, err := clusterkey.Parse(c.Secret())
	if err != nil {
		t.Fatal(err)
	}
	readerToken = secret.NATSPassword(cluster.ReaderUser)
	tp := sdktrace.NewTracerProvider() // samples every trace: task events carry trace ids
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	ctx := testmain.Init(t, 3*time.Minute, atoll.WithAddress(c.Address()), atoll.WithSecret(c.Secret()),
		atoll.WithObjectStoreMemory(driverStore), atoll.WithTracerProvider(tp), atoll.WithFailureTimeout(failureTimeout))
	runJob(ctx, t, c)
	return c, ctx
}

// runJob runs the job on c; the objects it keeps live until the test
// ends.
func runJob(ctx context.Context, t *testing.T, c *testcluster.Cluster) {
	t.Helper()
	var kept []atoll.ObjectRef[[]byte]
	t.Cleanup(func() {
		for _, r := range kept {
			r.Release()
		}
	})
	for range numPuts {
		r, err := atoll.Put(ctx, make([]byte, putBytes))
		if err != nil {
			t.Fatalf("put: %v", err)
		}
		kept = append(kept, r)
	}
	blobs := make([]atoll.Ref, numBlobs)
	for i := range blobs {
		// one on each node (Spread is best effort: a loaded node may
		// take two)
		r := blob.Remote(ctx, atoll.Value(blobBytes), atoll.OnNode(c.Node(i).ID, false))
		blobs[i] = r
		kept = append(kept, r)
	}
	if _, _, err := atoll.Wait(ctx, blobs, atoll.NumReady(numBlobs), atoll.FetchLocal(false)); err != nil {
		t.Fatalf("wait for the blobs: %v", err)
	}
	refs := make([]atoll.ObjectRef[int], numSquares)
	for i := range refs {
		refs[i] = square.Remote(ctx, atoll.Value(i), atoll.Spread())
	}
	for i, r := range refs {
		if v, err := atoll.Get(ctx, r); err != nil || v != i*i {
			t.Fatalf("square(%d) = %d, %v", i, v, err)
		}
	}
	if _, err := atoll.Get(ctx, fail.Remote(ctx, atoll.Value(7), atoll.MaxRetries(0))); !errors.Is(err, atoll.ErrTask) {
		t.Fatalf("fail(7): %v, want a task error", err)
	}
	h, err := counterType.New(ctx, atoll.ActorName("dash-counter"))
	if err != nil {
		t.Fatalf("new counter: %v", err)
	}
	for i := 1; i <= numCalls; i++ {
		if v, err := atoll.Get(ctx, counterAdd.Remote(ctx, h, atoll.Value(1))); err != nil || v != i {
			t.Fatalf("counter.Add = %d, %v; want %d", v, err, i)
		}
	}
	// A second actor, killed: the dashboard shows its death cause.
	victim, err := counterType.New(ctx, atoll.ActorName("dash-victim"))
	if err != nil {
		t.Fatalf("new victim: %v", err)
	}
	if _, err := atoll.Get(ctx, counterAdd.Remote(ctx, victim, atoll.Value(1))); err != nil {
		t.Fatalf("victim.Add: %v", err)
	}
	if err := atoll.Kill(ctx, victim); err != nil {
		t.Fatalf("kill victim: %v", err)
	}
	// A placement group that outlives the job (the page lists it).
	pg, err := atoll.NewPlacementGroup(ctx, []atoll.Resources{{CPU: 0.5}}, atoll.PlacementPack, atoll.PlacementGroupName("dash-group"),
		atoll.DetachedPlacementGroup())
	if err != nil {
		t.Fatalf("new placement group: %v", err)
	}
	if err := pg.Ready(ctx); err != nil {
		t.Fatalf("placement group ready: %v", err)
	}
}

// readerToken is the test cluster's reader token: the dashboard's logs
// need it.
var readerToken string

// getJSON GETs url and decodes its JSON into v, failing t unless the
// status is want.
func getJSON(t *testing.T, url string, want int, v any) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(url, "/api/logs/") {
		req.Header.Set("Authorization", "Bearer "+readerToken) // the logs need it
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	if resp.StatusCode != want {
		t.Fatalf("GET %s: status %d, want %d: %s", url, resp.StatusCode, want, body)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Fatalf("GET %s: Content-Type %q", url, ct)
	}
	if err := json.Unmarshal(body, v); err != nil {
		t.Fatalf("GET %s: %v in %s", url, err, body)
	}
}
