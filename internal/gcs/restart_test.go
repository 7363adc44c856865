package gcs

import (
	"errors"
	"testing"

	"github.com/asynkron/protoactor-go/actor"
	"google.golang.org/protobuf/proto"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/ids"
)

// snapshot is everything a client can read from the GCS.
type snapshot struct {
	nodes  []*atollpb.NodeInfo
	actors []*atollpb.ActorInfo
	jobs   []*atollpb.JobInfo
}

// populate fills every table with live and dead entries: a dead node, a
// dead named actor whose name was then taken by a live one, a finished job.
func populate(t *testing.T, e *testEnv) snapshot {
	t.Helper()
	ctx, c := ctxT(t), e.client
	n1, n2 := node("n1"), node("n2")
	dead := namedActor("ns", "taken-then-freed")
	live := namedActor("ns", "live")
	j := &atollpb.JobInfo{JobId: ids.NewJobID().Bytes(), Entrypoint: "main"}
	steps := []error{
		c.RegisterNode(ctx, n1),
		c.RegisterNode(ctx, n2),
		c.MarkNodeDead(ctx, n2.NodeId, false, "test"),
		c.RegisterActor(ctx, dead),
		c.RegisterActor(ctx, live),
		c.RegisterActor(ctx, namedActor("", "")),
		c.AddJob(ctx, j),
		c.FinishJob(ctx, j.JobId),
	}
	dead.State = atollpb.ActorState_ACTOR_DEAD
	steps = append(steps, c.UpdateActor(ctx, dead))
	for i, err := range steps {
		if err != nil {
			t.Fatalf("populate step %d: %v", i, err)
		}
	}
	return read(t, e)
}

func read(t *testing.T, e *testEnv) snapshot {
	t.Helper()
	ctx, c := ctxT(t), e.client
	var s snapshot
	var err1, err2, err3 error
	s.nodes, err1 = c.ListNodes(ctx)
	s.actors, err2 = c.ListActors(ctx)
	s.jobs, err3 = c.ListJobs(ctx)
	if err := errors.Join(err1, err2, err3); err != nil {
		t.Fatalf("read tables: %v", err)
	}
	return s
}

func equalSnapshots[M proto.Message](t *testing.T, what string, got, want []M) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d entries after restart, want %d", what, len(got), len(want))
	}
	for i := range got {
		if !proto.Equal(got[i], want[i]) {
			t.Errorf("%s[%d] after restart: %v, want %v", what, i, got[i], want[i])
		}
	}
}

// checkRecovered compares the tables with before and checks that the name
// index was rebuilt: the live name is taken, the freed one is not.
func checkRecovered(t *testing.T, e *testEnv, before snapshot) {
	t.Helper()
	after := read(t, e)
	equalSnapshots(t, "nodes", after.nodes, before.nodes)
	equalSnapshots(t, "actors", after.actors, before.actors)
	equalSnapshots(t, "jobs", after.jobs, before.jobs)

	ctx := ctxT(t)
	if _, err := e.client.GetNamedActor(ctx, "ns", "live"); err != nil {
		t.Errorf("live named actor lost: %v", err)
	}
	if err := e.client.RegisterActor(ctx, namedActor("ns", "live")); !errors.Is(err, errs.ErrInvalidArgument) {
		t.Errorf("live name not taken after restart: %v", err)
	}
	if err := e.client.RegisterActor(ctx, namedActor("ns", "taken-then-freed")); err != nil {
		t.Errorf("freed name taken after restart: %v", err)
	}
}

func TestRestartedGCSReloadsTables(t *testing.T) {
	e := newEnv(t)
	before := populate(t, e)

	e.stopGCS()
	if _, err := e.client.ListNodes(ctxT(t)); !errors.Is(err, errs.ErrUnavailable) {
		t.Fatalf("request with the GCS stopped: %v, want UNAVAILABLE", err)
	}
	e.startGCS(Config{})
	checkRecovered(t, e, before)
}

func TestNATSServerRestartKeepsTables(t *testing.T) {
	e := newEnv(t)
	before := populate(t, e)

	e.stopGCS()
	e.stopNATS()
	e.startNATS() // same StoreDir, new port
	e.startGCS(Config{})
	checkRecovered(t, e, before)
}

func TestPrefixesIsolateClusters(t *testing.T) {
	e := newEnv(t)
	other := e.sys.Root.Spawn(mustProps(t, Config{Conn: e.nc, Prefix: "other"}))
	defer func() { _ = e.sys.Root.StopFuture(other).Wait() }()
	oc := NewClient(e.nc, ClientOptions{Prefix: "other", WaitForServer: true})
	ctx := ctxT(t)
	if err := e.client.RegisterNode(ctx, node("default")); err != nil {
		t.Fatal(err)
	}
	nodes, err := oc.ListNodes(ctx)
	if err != nil || len(nodes) != 0 {
		t.Fatalf("other prefix sees %d nodes (%v), want 0", len(nodes), err)
	}
}

func mustProps(t *testing.T, cfg Config) *actor.Props {
	t.Helper()
	p, err := NewProps(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestReregisterNode: a node registering again after its connection came
// back is alive again whether or not the GCS knew it (a restarted head may
// have lost it), keeps its start time if known, and stays dead (NODE_DIED)
// if the GCS lists it dead; a restarted GCS answers the same.
func TestReregisterNode(t *testing.T) {
	e := newEnv(t)
	ctx, c := ctxT(t), e.client
	known, unknown, dead := node("known"), node("unknown"), node("dead")
	for _, n := range []*atollpb.NodeInfo{known, dead} {
		if err := c.RegisterNode(ctx, n); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.MarkNodeDead(ctx, dead.NodeId, false, "test"); err != nil {
		t.Fatal(err)
	}
	before := read(t, e)
	e.stopGCS()
	e.startGCS(Config{})

	for _, n := range []*atollpb.NodeInfo{known, unknown} {
		again := proto.CloneOf(n)
		again.StartTimeUnixMs = 1
		if err := c.ReregisterNode(ctx, again); err != nil {
			t.Fatalf("reregister %s: %v", n.Address, err)
		}
	}
	var nd *errs.NodeDiedError
	if err := c.ReregisterNode(ctx, dead); !errors.Is(err, errs.ErrNodeDied) || !errors.As(err, &nd) {
		t.Fatalf("reregister a dead node: %v, want NODE_DIED", err)
	}
	got := map[string]*atollpb.NodeInfo{}
	for _, n := range read(t, e).nodes {
		got[n.Address] = n
	}
	var start int64
	for _, n := range before.nodes {
		if n.Address == "known" {
			start = n.StartTimeUnixMs
		}
	}
	if got["known"].State != atollpb.NodeState_NODE_ALIVE || got["known"].StartTimeUnixMs != start ||
		got["unknown"].State != atollpb.NodeState_NODE_ALIVE || got["unknown"].StartTimeUnixMs != 1 ||
		got["dead"].State != atollpb.NodeState_NODE_DEAD {
		t.Fatalf("after reregistering: %v", got)
	}
}
