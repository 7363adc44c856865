package gcs

import (
	"errors"
	"strings"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/ids"
)

func checkExhausted(t *testing.T, what string, err error) {
	t.Helper()
	var re *errs.ResourceExhaustedError
	if !errors.Is(err, errs.ErrResourceExhausted) || !errors.As(err, &re) {
		t.Fatalf("%s: %v, want RESOURCE_EXHAUSTED", what, err)
	}
}

// TestLiveCapsRefuseNewEntries: past MaxNodes live nodes, MaxActors live
// actors and MaxJobs running jobs, a new one is refused with
// RESOURCE_EXHAUSTED and nothing is stored; updates of known entries go
// on, and a death (or a finished job) makes room again.
func TestLiveCapsRefuseNewEntries(t *testing.T) {
	e := newEnv(t)
	e.stopGCS()
	e.startGCS(Config{MaxNodes: 2, MaxActors: 2, MaxJobs: 2})
	ctx, c := ctxT(t), e.client

	n1, n2, n3 := node("1"), node("2"), node("3")
	for _, n := range []*atollpb.NodeInfo{n1, n2} {
		if err := c.RegisterNode(ctx, n); err != nil {
			t.Fatal(err)
		}
	}
	checkExhausted(t, "a third live node", c.RegisterNode(ctx, n3))
	if err := c.RegisterNode(ctx, n1); err != nil {
		t.Fatalf("a live node registering again: %v", err)
	}
	if err := c.MarkNodeDead(ctx, n2.NodeId, false, "test"); err != nil {
		t.Fatal(err)
	}
	if err := c.RegisterNode(ctx, n3); err != nil {
		t.Fatalf("a node once another died: %v", err)
	}
	checkExhausted(t, "a dead node coming back past the cap", c.RegisterNode(ctx, n2))

	a1, a2, a3 := namedActor("", "a1"), namedActor("", "a2"), namedActor("", "a3")
	for _, a := range []*atollpb.ActorInfo{a1, a2} {
		if err := c.RegisterActor(ctx, a); err != nil {
			t.Fatal(err)
		}
	}
	checkExhausted(t, "a third live actor", c.RegisterActor(ctx, a3))
	if _, err := c.GetNamedActor(ctx, "", "a3"); !errors.Is(err, errs.ErrNotFound) {
		t.Fatalf("the refused actor: %v, want NOT_FOUND (not stored)", err)
	}
	a1.State = atollpb.ActorState_ACTOR_ALIVE
	if err := c.UpdateActor(ctx, a1); err != nil {
		t.Fatalf("an update at the cap: %v", err)
	}
	a1.State = atollpb.ActorState_ACTOR_DEAD
	if err := c.UpdateActor(ctx, a1); err != nil {
		t.Fatal(err)
	}
	if err := c.RegisterActor(ctx, a3); err != nil {
		t.Fatalf("an actor once another died: %v", err)
	}

	j1, j2, j3 := ids.NewJobID().Bytes(), ids.NewJobID().Bytes(), ids.NewJobID().Bytes()
	for _, j := range [][]byte{j1, j2} {
		if err := c.AddJob(ctx, &atollpb.JobInfo{JobId: j}); err != nil {
			t.Fatal(err)
		}
	}
	checkExhausted(t, "a third running job", c.AddJob(ctx, &atollpb.JobInfo{JobId: j3}))
	if err := c.FinishJob(ctx, j1); err != nil {
		t.Fatal(err)
	}
	if err := c.AddJob(ctx, &atollpb.JobInfo{JobId: j3}); err != nil {
		t.Fatalf("a job once another finished: %v", err)
	}
	want := tableSizes{Nodes: 3, DeadNodes: 1, Actors: 3, DeadActors: 1, Jobs: 3, FinishedJobs: 1}
	if got := counts(t, e); got != want {
		t.Fatalf("tables %+v, want %+v", got, want)
	}
	checkKV(t, e, want)
}

// TestBucketsAreBounded: the buckets are created with MaxBytes and
// MaxValueSize and no TTL (and a running GCS's buckets are updated to new
// sizes); a table whose entries fill three quarters of its bucket refuses
// new keys with RESOURCE_EXHAUSTED, memory unchanged, while its entries
// can still change (every node can still die); an entry larger than
// MaxEntryBytes is INVALID_ARGUMENT.
func TestBucketsAreBounded(t *testing.T) {
	e := newEnv(t)
	e.stopGCS()
	js, err := jetstream.New(e.nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, c := ctxT(t), e.client
	for _, b := range []string{"nodes", "actors", "jobs"} {
		info, err := js.Stream(ctx, "KV_atoll_"+b)
		if err != nil {
			t.Fatal(err)
		}
		cfg := info.CachedInfo().Config
		want := map[string]int64{"nodes": DefaultNodesBucketBytes, "actors": DefaultActorsBucketBytes, "jobs": DefaultJobsBucketBytes}[b]
		if cfg.MaxBytes != want || cfg.MaxMsgSize != DefaultMaxEntryBytes || cfg.MaxAge != 0 {
			t.Errorf("bucket %s: MaxBytes %d, MaxMsgSize %d, MaxAge %v; want %d, %d and no TTL", b, cfg.MaxBytes, cfg.MaxMsgSize, cfg.MaxAge, want, DefaultMaxEntryBytes)
		}
	}

	// Restarted with a small nodes bucket (the running GCS's buckets are
	// updated): it fills.
	e.startGCS(Config{NodesBucketBytes: 4 << 10, MaxEntryBytes: 1 << 10})
	var stored []*atollpb.NodeInfo
	var full error
	for range 100 {
		n := node(strings.Repeat("x", 100))
		if err := c.RegisterNode(ctx, n); err != nil {
			full = err
			break
		}
		stored = append(stored, n)
	}
	checkExhausted(t, "a node past the bucket's size", full)
	if len(stored) < 4 {
		t.Fatalf("only %d nodes fit in 4 KiB", len(stored))
	}
	if got := counts(t, e); got.Nodes != len(stored) {
		t.Fatalf("the GCS lists %d nodes, %d were stored", got.Nodes, len(stored))
	}
	for _, n := range stored {
		// Each death makes the entry larger (its end time): the quarter of
		// the bucket kept for updates takes them.
		if err := c.MarkNodeDead(ctx, n.NodeId, false, "test"); err != nil {
			t.Fatalf("a death in a full table: %v", err)
		}
	}
	big := node(strings.Repeat("x", 2<<10))
	if err := c.RegisterNode(ctx, big); !errors.Is(err, errs.ErrInvalidArgument) {
		t.Fatalf("a 2 KiB entry: %v, want INVALID_ARGUMENT", err)
	}
	t.Logf("4 KiB held %d nodes; then: %v", len(stored), full)
}

func TestBoundsFromTheEnvironment(t *testing.T) {
	e := newEnv(t)
	t.Setenv(EnvMaxActors, "9")
	t.Setenv(EnvJobsBucketBytes, "12345")
	cfg, err := Config{Conn: e.nc, MaxNodes: 3}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.MaxNodes != 3 || cfg.MaxActors != 9 || cfg.MaxJobs != DefaultMaxJobs || cfg.JobsBucketBytes != 12345 ||
		cfg.NodesBucketBytes != DefaultNodesBucketBytes || cfg.MaxEntryBytes != DefaultMaxEntryBytes {
		t.Errorf("bounds %+v", cfg)
	}
	t.Setenv(EnvMaxEntryBytes, "x")
	if _, err := NewProps(Config{Conn: e.nc}); err == nil {
		t.Errorf("%s=x accepted", EnvMaxEntryBytes)
	}
}
