package gcs

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/ids"
)

// kvCount is the number of messages in a table's bucket: with one message
// per key and no delete markers, the number of entries it holds.
func kvCount(t *testing.T, e *testEnv, bucket string) uint64 {
	t.Helper()
	js, err := jetstream.New(e.nc)
	if err != nil {
		t.Fatal(err)
	}
	st, err := js.Stream(ctxT(t), "KV_"+bucket)
	if err != nil {
		t.Fatal(err)
	}
	info, err := st.Info(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	return info.State.Msgs
}

// counts reads the tables through the client: every entry, and the dead
// (finished) ones.
func counts(t *testing.T, e *testEnv) (s tableSizes) {
	t.Helper()
	snap := read(t, e)
	s.Nodes, s.Actors, s.Jobs = len(snap.nodes), len(snap.actors), len(snap.jobs)
	for _, n := range snap.nodes {
		if n.State == atollpb.NodeState_NODE_DEAD {
			s.DeadNodes++
		}
	}
	for _, a := range snap.actors {
		if a.State == atollpb.ActorState_ACTOR_DEAD {
			s.DeadActors++
		}
	}
	for _, j := range snap.jobs {
		if j.Finished {
			s.FinishedJobs++
		}
	}
	return s
}

func checkKV(t *testing.T, e *testEnv, want tableSizes) {
	t.Helper()
	for _, c := range []struct {
		bucket string
		want   int
	}{{nodesBucket(DefaultPrefix), want.Nodes}, {actorsBucket(DefaultPrefix), want.Actors}, {jobsBucket(DefaultPrefix), want.Jobs}} {
		if got := kvCount(t, e, c.bucket); got != uint64(c.want) {
			t.Errorf("bucket %s holds %d messages, want %d (one per entry, no markers)", c.bucket, got, c.want)
		}
	}
}

// TestCapsForgetTheOldestInMemoryAndKV: past the caps the oldest dead
// actors, finished jobs and dead nodes go from the GCS and from its KV
// buckets, so a restarted GCS does not reload them; live entries stay;
// a restart with lower caps prunes at load.
func TestCapsForgetTheOldestInMemoryAndKV(t *testing.T) {
	e := newEnv(t)
	e.stopGCS()
	caps := Config{MaxDeadNodes: 2, MaxDeadActors: 3, MaxFinishedJobs: 2}
	e.startGCS(caps)
	ctx, c := ctxT(t), e.client

	host := node("host")
	if err := c.RegisterNode(ctx, host); err != nil {
		t.Fatal(err)
	}
	var actors []*atollpb.ActorInfo
	for i := range 8 {
		a := namedActor("ns", fmt.Sprintf("a%d", i))
		if i >= 6 {
			a.NodeId = host.NodeId // these two die with their node
		}
		if err := c.RegisterActor(ctx, a); err != nil {
			t.Fatal(err)
		}
		actors = append(actors, a)
	}
	// Actors 0..4 die in order; 5 stays alive; 6 and 7 die with the host.
	for _, a := range actors[:5] {
		a.State = atollpb.ActorState_ACTOR_DEAD
		if err := c.UpdateActor(ctx, a); err != nil {
			t.Fatal(err)
		}
	}
	var jobs [][]byte
	for range 5 {
		j := &atollpb.JobInfo{JobId: ids.NewJobID().Bytes()}
		if err := c.AddJob(ctx, j); err != nil {
			t.Fatal(err)
		}
		jobs = append(jobs, j.JobId)
	}
	for _, j := range jobs[:4] {
		if err := c.FinishJob(ctx, j); err != nil {
			t.Fatal(err)
		}
	}
	var nodes [][]byte
	for i := range 3 {
		n := node(fmt.Sprint(i))
		if err := c.RegisterNode(ctx, n); err != nil {
			t.Fatal(err)
		}
		nodes = append(nodes, n.NodeId)
	}
	for _, n := range append(nodes, host.NodeId) {
		if err := c.MarkNodeDead(ctx, n, false, "test"); err != nil {
			t.Fatal(err)
		}
	}

	// Dead actors kept: the last three deaths (4, 6, 7); finished jobs: 2
	// and 3; dead nodes: node 2 and the host.
	want := tableSizes{Nodes: 2, DeadNodes: 2, Actors: 4, DeadActors: 3, Jobs: 3, FinishedJobs: 2}
	check := func(when string) {
		t.Helper()
		if got := counts(t, e); got != want {
			t.Fatalf("%s: tables %+v, want %+v", when, got, want)
		}
		checkKV(t, e, want)
		for i, a := range actors {
			_, err := c.GetActor(ctx, a.ActorId)
			if forgotten := i < 4; forgotten != errors.Is(err, errs.ErrNotFound) {
				t.Errorf("%s: actor %d: %v (forgotten: %v)", when, i, err, forgotten)
			}
		}
		if got, err := c.GetNamedActor(ctx, "ns", "a5"); err != nil || string(got.ActorId) != string(actors[5].ActorId) {
			t.Errorf("%s: live actor: %v %v", when, got, err)
		}
		if err := c.FinishJob(ctx, jobs[0]); !errors.Is(err, errs.ErrNotFound) {
			t.Errorf("%s: forgotten job: %v, want NOT_FOUND", when, err)
		}
		if err := c.MarkNodeDead(ctx, nodes[1], false, "test"); !errors.Is(err, errs.ErrNotFound) {
			t.Errorf("%s: forgotten node: %v, want NOT_FOUND", when, err)
		}
	}
	check("after the deaths")

	e.stopGCS()
	e.startGCS(caps)
	check("after a restart")

	// Lower caps: the next start forgets the excess, oldest first.
	e.stopGCS()
	e.startGCS(Config{MaxDeadNodes: 1, MaxDeadActors: 1, MaxFinishedJobs: 1})
	want = tableSizes{Nodes: 1, DeadNodes: 1, Actors: 2, DeadActors: 1, Jobs: 2, FinishedJobs: 1}
	if got := counts(t, e); got != want {
		t.Fatalf("after a restart with lower caps: tables %+v, want %+v", got, want)
	}
	checkKV(t, e, want)
	snap := read(t, e)
	var kept []string
	for _, a := range snap.actors {
		kept = append(kept, a.Name)
	}
	slices.Sort(kept)
	// 6 and 7 died with the host, in the order of their ids.
	last := "a7"
	if keyOf(t, actors[6].ActorId) > keyOf(t, actors[7].ActorId) {
		last = "a6"
	}
	if !slices.Equal(kept, []string{"a5", last}) {
		t.Errorf("actors kept %v, want the live one and the last to die (%s)", kept, last)
	}
	if len(snap.nodes) != 1 || string(snap.nodes[0].NodeId) != string(host.NodeId) {
		t.Errorf("nodes kept %v, want the last to die", snap.nodes)
	}
}

func TestCapsFromTheEnvironment(t *testing.T) {
	e := newEnv(t)
	t.Setenv(EnvMaxDeadActors, "7")
	cfg, err := Config{Conn: e.nc, MaxDeadNodes: 3}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.MaxDeadActors != 7 || cfg.MaxDeadNodes != 3 || cfg.MaxFinishedJobs != DefaultMaxFinishedJobs {
		t.Errorf("caps %d %d %d: want the environment's, the config's, the default", cfg.MaxDeadActors, cfg.MaxDeadNodes, cfg.MaxFinishedJobs)
	}
	for _, bad := range []string{"0", "-1", "many"} {
		t.Setenv(EnvMaxFinishedJobs, bad)
		if _, err := NewProps(Config{Conn: e.nc}); err == nil {
			t.Errorf("%s=%q accepted", EnvMaxFinishedJobs, bad)
		}
	}
	if _, err := NewProps(Config{Conn: e.nc, MaxDeadNodes: -1}); err == nil {
		t.Error("a negative cap accepted")
	}
}
