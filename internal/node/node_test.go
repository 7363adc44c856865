package node_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"math"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/clusterclient"
	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/ids"
	"github.com/atoll-runtime/atoll/internal/node"
	"github.com/atoll-runtime/atoll/internal/nodeconfig"
	"github.com/atoll-runtime/atoll/internal/objectstore"
	"github.com/atoll-runtime/atoll/internal/raylet"
	"github.com/atoll-runtime/atoll/internal/testutil"
	"github.com/atoll-runtime/atoll/internal/workerproto"
)

// startNode starts a node for one test and stops it when the test ends.
func startNode(t *testing.T, cfg nodeconfig.Config) *node.Node {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	n, err := node.Start(ctx, cfg)
	if err != nil {
		t.Fatalf("node.Start: %v", err)
	}
	t.Cleanup(func() {
		if err := n.Stop(context.Background()); err != nil {
			t.Errorf("Stop: %v", err)
		}
	})
	return n
}

func rayletState(t *testing.T, n *node.Node) *raylet.State {
	t.Helper()
	res, err := n.System().Root.RequestFuture(n.Raylet(), &raylet.GetState{}, 10*time.Second).Result()
	if err != nil {
		t.Fatalf("raylet GetState: %v", err)
	}
	return res.(*raylet.State)
}

func TestConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		name  string
		cfg   nodeconfig.Config
		hooks node.Hooks
		want  string
	}{
		{"head and address", nodeconfig.Config{Head: true, Address: "127.0.0.1:1"}, node.Hooks{}, "node.Config.Head and node.Config.Address are exclusive"},
		{"driver without address", nodeconfig.Config{Driver: true}, node.Hooks{}, "a driver's node joins a cluster"},
		{"nats url off the head", nodeconfig.Config{Address: "127.0.0.1:1", NATSURL: "nats://127.0.0.1:2"}, node.Hooks{}, "NATSURL is the head's"},
		{"gcs dir off the head", nodeconfig.Config{Address: "127.0.0.1:1", GCSDir: "/tmp/x"}, node.Hooks{}, "GCSDir is the head's"},
		{"gcs dir of an embedded node", nodeconfig.Config{GCSDir: "/tmp/x"}, node.Hooks{}, "GCSDir is the head's"},
		{"gcs dir and nats url", nodeconfig.Config{Head: true, NATSURL: "nats://127.0.0.1:2", GCSDir: "/tmp/x"}, node.Hooks{}, "node.Config.GCSDir and node.Config.NATSURL conflict"},
		{"executor in a cluster", nodeconfig.Config{Head: true}, node.Hooks{InProcess: idleWorkers}, "in-process workers (InProcess) are for an embedded node"},
		{"negative cpus", nodeconfig.Config{NumCPUs: -2}, node.Hooks{}, "must not be negative"},
		{"nan cpus", nodeconfig.Config{NumCPUs: math.NaN()}, node.Hooks{}, "want a number"},
		{"bad port", nodeconfig.Config{Head: true, GossipPort: 70000}, node.Hooks{}, "GossipPort 70000"},
		{"negative failure timeout", nodeconfig.Config{Head: true, FailureTimeout: -time.Second}, node.Hooks{}, "FailureTimeout"},
		{"node ip not an ip", nodeconfig.Config{Head: true, NodeIP: "my-host"}, node.Hooks{}, `NodeIP "my-host"`},
		{"metrics port", nodeconfig.Config{MetricsPort: -2}, node.Hooks{}, "MetricsPort -2"},
	} {
		n, err := node.StartWith(context.Background(), tc.cfg, tc.hooks)
		if n != nil {
			_ = n.Stop(context.Background())
		}
		if !errors.Is(err, errs.ErrInvalidArgument) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v; want ErrInvalidArgument with %q", tc.name, err, tc.want)
		}
	}
}

// TestHugePagesRefused: a node asked to put its store on huge pages where
// the system does not allow them for shared memory fails to start with
// ErrUnavailable, saying it once ("atoll: huge pages ...", not wrapped in
// a second prefix) and what to change.
func TestHugePagesRefused(t *testing.T) {
	if allowed, policy, err := objectstore.ShmemHugePages(); err == nil && allowed {
		t.Skipf("this system allows huge pages for shared memory (%s)", policy)
	}
	cfg := nodeconfig.Config{NumCPUs: nodeconfig.NoCPUs, ObjectStoreMemory: 16 << 20, StoreHugePages: objectstore.HugePagesOn}
	n, err := node.Start(context.Background(), cfg)
	if n != nil {
		_ = n.Stop(context.Background())
	}
	if !errors.Is(err, errs.ErrUnavailable) || !strings.HasPrefix(err.Error(), "atoll: huge pages were asked for") ||
		strings.Count(err.Error(), "atoll:") != 1 {
		t.Fatalf("start with huge pages on, refused by the system: %v; want ErrUnavailable, one \"atoll: huge pages were asked for\"", err)
	}
}

// The zero Config is an embedded single node: the GCS in process lists it
// (head and driver), the store and raylet answer, a spawned actor and an
// actor-event subscription work until Stop, and Stop removes the session
// directory it created. Its workers run in its process, so its arena is
// private memory.
func TestEmbeddedNode(t *testing.T) {
	var private atomic.Int32
	n, err := node.StartWith(context.Background(), nodeconfig.Config{ObjectStoreMemory: 16 << 20, NumCPUs: 2}, node.Hooks{InProcess: func(w node.InProcessWorker) error {
		if w.Arena.Private() && w.Arena.File() == nil {
			private.Add(1)
		}
		return idleWorkers(w)
	}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if n.Address() != "" || n.Gateway() != nil {
		t.Fatalf("embedded node: address %q, gateway %v; want none", n.Address(), n.Gateway())
	}
	nodes, err := n.GCS().ListNodes(ctx)
	if err != nil || len(nodes) != 1 {
		t.Fatalf("GCS nodes: %v, %v", nodes, err)
	}
	if info := nodes[0]; !bytes.Equal(info.NodeId, n.ID().Bytes()) || !info.IsHead || !info.IsDriver || info.Resources["CPU"] != 2 ||
		info.Resources["memory"] <= 0 || info.ObjectStoreBytes != 16<<20 {
		t.Fatalf("the node as the GCS lists it: %v", info)
	}
	if st := rayletState(t, n); st.NodeID != n.ID() || st.Total["CPU"] != 2 || st.Workers != 2 {
		t.Fatalf("raylet state: %+v", st)
	}
	// the raylet may count a worker before its start hook has returned
	testutil.Eventually(t, "both in-process workers given a private arena", func() bool { return private.Load() == 2 })

	// The store, through a worker's client: a put is readable.
	w := ids.NewWorkerID()
	c := n.StoreClient(w)
	if c != n.StoreClient(w) || c.ID() != w {
		t.Fatal("StoreClient: not one client per worker")
	}
	id := ids.PutObjectID(ids.NewTaskID(), 1)
	if err := c.Put(ctx, id, atollpb.Codec_CODEC_BYTES, []byte("hello")); err != nil {
		t.Fatal(err)
	}
	objs, err := c.Get(ctx, []ids.ObjectID{id}, 0)
	if err != nil || string(objs[0].Data) != "hello" {
		t.Fatalf("Get: %v %v", objs, err)
	}
	c.Release(id)

	// An actor of the caller's gets actor events, and is stopped by Stop.
	events := make(chan *atollpb.ActorInfo, 16)
	stopped := make(chan struct{})
	pid, err := n.SpawnNamed(actor.PropsFromFunc(func(c actor.Context) {
		switch m := c.Message().(type) {
		case *atollpb.ActorInfo:
			events <- m
		case *actor.Stopping:
			close(stopped)
		}
	}), "listener")
	if err != nil {
		t.Fatal(err)
	}
	if err := n.SubscribeActorEvents(pid); err != nil {
		t.Fatal(err)
	}
	actorID := ids.NewActorID()
	if err := n.GCS().RegisterActor(ctx, &atollpb.ActorInfo{ActorId: actorID.Bytes(), ActorType: "T", NodeId: n.ID().Bytes()}); err != nil {
		t.Fatal(err)
	}
	select {
	case ev := <-events:
		if !bytes.Equal(ev.ActorId, actorID.Bytes()) {
			t.Fatalf("event for actor %x, want %x", ev.ActorId, actorID.Bytes())
		}
	case <-ctx.Done():
		t.Fatal("no actor event")
	}

	dir := n.SessionDir()
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("session dir: %v", err)
	}
	if err := n.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case <-stopped:
	default:
		t.Fatal("Stop returned before stopping the actor spawned with SpawnNamed")
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("session dir %s after Stop: %v", dir, err)
	}
	if err := n.Stop(ctx); err != nil {
		t.Fatalf("second Stop: %v", err)
	}
	if _, err := n.SpawnNamed(actor.PropsFromFunc(func(actor.Context) {}), "late"); !errors.Is(err, errs.ErrUnavailable) {
		t.Fatalf("SpawnNamed after Stop: %v, want ErrUnavailable", err)
	}
}

// A head, a node joining it and a driver's node, in this process: each
// sees the others, the status and list queries report them with their
// roles and resources, and a node that stops leaves the cluster.
func TestClusterNodes(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir()) // no address file of a real cluster
	head := startNode(t, nodeconfig.Config{Head: true, GCSDir: t.TempDir(), RandomPorts: true, NumCPUs: 2, ObjectStoreMemory: 16 << 20, FailureTimeout: 2 * time.Second})
	if head.Address() == "" || head.Gateway() == nil {
		t.Fatalf("head: address %q, gateway %v", head.Address(), head.Gateway())
	}
	creds := nodeconfig.Credentials{Secret: head.Secret()}
	member, err := node.Start(context.Background(), nodeconfig.Config{Address: head.Address(), RandomPorts: true, NumCPUs: 1,
		Resources: map[string]float64{"GPU": 1}, ObjectStoreMemory: 16 << 20, FailureTimeout: 2 * time.Second, Credentials: creds})
	if err != nil {
		t.Fatal(err)
	}
	memberStopped := false
	t.Cleanup(func() {
		if !memberStopped {
			_ = member.Stop(context.Background())
		}
	})
	if member.Address() != head.Address() {
		t.Fatalf("member's cluster address %q, head's %q", member.Address(), head.Address())
	}
	driver := startNode(t, nodeconfig.Config{Address: head.Address(), Driver: true, ObjectStoreMemory: 16 << 20, FailureTimeout: 2 * time.Second, Credentials: creds})
	if st := rayletState(t, driver); st.Total["CPU"] != 0 {
		t.Fatalf("a driver's node has %v CPUs by default, want none", st.Total["CPU"])
	}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	byID := func(st *clusterclient.Status) map[string]clusterclient.NodeStatus {
		m := map[string]clusterclient.NodeStatus{}
		for _, cn := range st.Nodes {
			m[cn.NodeID] = cn
		}
		return m
	}
	st := waitStatus(ctx, t, head.Address(), creds, func(st *clusterclient.Status) bool {
		m := byID(st)
		return len(m) == 3 && m[head.ID().String()].Reporting && m[member.ID().String()].Reporting && m[driver.ID().String()].Reporting
	})
	m := byID(st)
	if h := m[head.ID().String()]; !h.IsHead || h.Driver || h.Total["CPU"] != 2 {
		t.Errorf("head: %+v", h)
	}
	if w := m[member.ID().String()]; w.IsHead || w.Driver || w.Total["CPU"] != 1 || w.Total["GPU"] != 1 {
		t.Errorf("member: %+v", w)
	}
	if d := m[driver.ID().String()]; d.IsHead || !d.Driver || d.Total["CPU"] != 0 || d.Total["memory"] != 0 {
		t.Errorf("driver's node: %+v", d)
	}
	if st.Address != head.Address() {
		t.Errorf("status address %q, want %q", st.Address, head.Address())
	}
	nodes, err := clusterclient.ListNodes(ctx, head.Address(), creds)
	if err != nil || len(nodes) != 3 {
		t.Fatalf("ListNodes: %d nodes, %v", len(nodes), err)
	}
	if actors, err := clusterclient.ListActors(ctx, head.Address(), creds); err != nil || len(actors) != 0 {
		t.Fatalf("ListActors: %v, %v", actors, err)
	}
	if jobs, err := clusterclient.ListJobs(ctx, head.Address(), creds); err != nil || len(jobs) != 0 {
		t.Fatalf("ListJobs: %v, %v", jobs, err)
	}
	if events, err := clusterclient.GetTimeline(ctx, head.Address(), creds); err != nil || len(events) != 0 {
		t.Fatalf("GetTimeline with no task run: %v, %v", events, err)
	}

	memberStopped = true
	if err := member.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	waitStatus(ctx, t, head.Address(), creds, func(st *clusterclient.Status) bool {
		w, ok := byID(st)[member.ID().String()]
		return ok && !w.Alive
	})
}

// waitStatus polls clusterclient.GetStatus until cond holds or ctx ends.
func waitStatus(ctx context.Context, t *testing.T, address string, creds nodeconfig.Credentials, cond func(*clusterclient.Status) bool) *clusterclient.Status {
	t.Helper()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		st, err := clusterclient.GetStatus(ctx, address, creds)
		if err == nil && cond(st) {
			return st
		}
		select {
		case <-ctx.Done():
			b, _ := json.Marshal(st)
			t.Fatalf("cluster status not as expected: %s (%v)", b, err)
		case <-tick.C:
		}
	}
}

// RunFromEnv's body: a head from an EnvNode config prints its ready line,
// serves, and exits 0 once told to stop.
func TestRunPrintsReadyLineAndStops(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	for _, bad := range []string{``, `{`, `{}`, `{"Driver":true}`} {
		if err := node.ConfigFromEnvForTest(bad); !errors.Is(err, errs.ErrInvalidArgument) {
			t.Errorf("EnvNode %q: %v, want ErrInvalidArgument", bad, err)
		}
	}
	creds := nodeconfig.Credentials{Secret: strings.Repeat("ab", 32)}
	cfg, _ := json.Marshal(nodeconfig.Config{Head: true, GCSDir: t.TempDir(), RandomPorts: true, NumCPUs: 1, ObjectStoreMemory: 16 << 20, Credentials: creds})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r, w := io.Pipe()
	var stderr bytes.Buffer
	code := make(chan int, 1)
	go func() {
		code <- node.RunForTest(ctx, string(cfg), w, &stderr)
		w.Close()
	}()
	line, err := bufio.NewReader(r).ReadString('\n')
	if err != nil {
		t.Fatalf("no ready line: %v (stderr %s)", err, stderr.String())
	}
	rest, ok := strings.CutPrefix(line, node.NodeReadyPrefix)
	var ready node.NodeReady
	if !ok || json.Unmarshal([]byte(rest), &ready) != nil || ready.NodeID == "" || ready.Address == "" || ready.PID != os.Getpid() {
		t.Fatalf("ready line %q", line)
	}
	qctx, qcancel := context.WithTimeout(ctx, 30*time.Second)
	defer qcancel()
	nodes, err := clusterclient.ListNodes(qctx, ready.Address, creds)
	if err != nil || len(nodes) != 1 {
		t.Fatalf("the node process's cluster: %v, %v", nodes, err)
	}
	go func() { _, _ = io.Copy(io.Discard, r) }()
	cancel()
	if c := <-code; c != 0 {
		t.Fatalf("exit code %d; stderr %s", c, stderr.String())
	}
}

// idleWorkers are in-process workers for nodes that are never given
// work in these tests: they test the node's assembly, not tasks (the
// root package's tests run tasks on nodes built by Start). Each is a
// workerproto.Server with an executor that answers at once.
func idleWorkers(w node.InProcessWorker) error {
	var srv *workerproto.Server
	srv = workerproto.NewServer(w.Conn, workerproto.ServerConfig{WorkerID: w.ID, Executor: idleExecutor{}, Exit: func() { srv.Conn().Close() }})
	go srv.Serve(0)
	return nil
}

type idleExecutor struct{}

func (idleExecutor) RunTask(_ context.Context, spec *atollpb.TaskSpec) *atollpb.TaskResult {
	return &atollpb.TaskResult{TaskId: spec.TaskId, Attempt: spec.Attempt}
}

func (idleExecutor) NewActor(context.Context, *atollpb.TaskSpec) (any, error) {
	return struct{}{}, nil
}

func (idleExecutor) RunActorTask(_ context.Context, _ any, spec *atollpb.TaskSpec) (*atollpb.TaskResult, bool) {
	return &atollpb.TaskResult{TaskId: spec.TaskId, Attempt: spec.Attempt}, false
}

// TestWorkerThatCannotStartBacksOff: a worker binary that exits at once
// (never registers) is started again only after a backoff that doubles:
// four such exits take at least 0.1 + 0.2 + 0.4 s after the first, where
// the raylet used to restart it in a loop (a few milliseconds).
func TestWorkerThatCannotStartBacksOff(t *testing.T) {
	bin, err := exec.LookPath("false")
	if err != nil {
		t.Skip("no false(1) on this machine")
	}
	n, err := node.Start(context.Background(), nodeconfig.Config{ObjectStoreMemory: 16 << 20, NumCPUs: 1, WorkerBinary: bin,
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := n.Stop(context.Background()); err != nil {
			t.Error(err)
		}
	}()
	exits := func() uint64 { return rayletState(t, n).Stats.WorkersFailedEarly }
	deadline := time.Now().Add(30 * time.Second)
	for exits() < 1 {
		if time.Now().After(deadline) {
			t.Fatal("the worker's early exit was not counted in 30 s")
		}
	}
	first := time.Now()
	for exits() < 4 {
		if time.Now().After(deadline) {
			t.Fatalf("only %d early exits counted in 30 s", exits())
		}
	}
	// Backoffs of 0.1 + 0.2 + 0.4 s at least; 0.2 s of slack for noticing
	// the first exit late.
	if d := time.Since(first); d < 500*time.Millisecond {
		t.Fatalf("4 early exits within %v of the first: no backoff (at least 0.1 + 0.2 + 0.4 s)", d)
	}
}
