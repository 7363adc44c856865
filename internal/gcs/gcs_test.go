package gcs

import (
	"errors"
	"strings"
	"sync"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/ids"
)

func node(addr string) *atollpb.NodeInfo {
	return &atollpb.NodeInfo{NodeId: ids.NewNodeID().Bytes(), Address: addr, Resources: map[string]float64{"CPU": 2}}
}

func namedActor(namespace, name string) *atollpb.ActorInfo {
	return &atollpb.ActorInfo{ActorId: ids.NewActorID().Bytes(), Namespace: namespace, Name: name, ActorType: "Counter"}
}

func TestNodes(t *testing.T) {
	e, ctx := newEnv(t), ctxT(t)
	c := e.client
	n1, n2 := node("n1:1"), node("n2:1")
	for _, n := range []*atollpb.NodeInfo{n1, n2} {
		if err := c.RegisterNode(ctx, n); err != nil {
			t.Fatalf("RegisterNode: %v", err)
		}
	}
	if err := c.MarkNodeDead(ctx, n1.NodeId); err != nil {
		t.Fatalf("MarkNodeDead: %v", err)
	}
	nodes, err := c.ListNodes(ctx)
	if err != nil || len(nodes) != 2 {
		t.Fatalf("ListNodes: %v %v", nodes, err)
	}
	for _, n := range nodes {
		dead := string(n.NodeId) == string(n1.NodeId)
		switch {
		case n.StartTimeUnixMs == 0:
			t.Errorf("node %s has no start time", n.Address)
		case dead && (n.State != atollpb.NodeState_NODE_DEAD || n.EndTimeUnixMs == 0):
			t.Errorf("dead node: %v", n)
		case !dead && (n.State != atollpb.NodeState_NODE_ALIVE || n.EndTimeUnixMs != 0):
			t.Errorf("live node: %v", n)
		}
	}
	if err := c.MarkNodeDead(ctx, n1.NodeId); err != nil {
		t.Errorf("marking a dead node dead again: %v", err)
	}
	if err := c.MarkNodeDead(ctx, ids.NewNodeID().Bytes()); !errors.Is(err, errs.ErrNotFound) {
		t.Errorf("unknown node: %v, want NOT_FOUND", err)
	}
	if err := c.RegisterNode(ctx, &atollpb.NodeInfo{NodeId: []byte{1, 2}}); !errors.Is(err, errs.ErrInvalidArgument) {
		t.Errorf("short node id: %v, want INVALID_ARGUMENT", err)
	}
	// Re-registering brings a node back.
	if err := c.RegisterNode(ctx, n1); err != nil {
		t.Fatal(err)
	}
	nodes, _ = c.ListNodes(ctx)
	for _, n := range nodes {
		if n.State != atollpb.NodeState_NODE_ALIVE {
			t.Errorf("node %s not alive after re-registering", n.Address)
		}
	}
}

func TestActorsAndNames(t *testing.T) {
	e, ctx := newEnv(t), ctxT(t)
	c := e.client
	a := namedActor("ns", "counter")
	if err := c.RegisterActor(ctx, a); err != nil {
		t.Fatalf("RegisterActor: %v", err)
	}
	if err := c.RegisterActor(ctx, a); err != nil {
		t.Errorf("registering the same actor again: %v", err)
	}
	b := namedActor("ns", "counter")
	err := c.RegisterActor(ctx, b)
	if !errors.Is(err, errs.ErrInvalidArgument) || !strings.Contains(err.Error(), "already taken") {
		t.Fatalf("duplicate name: %v, want INVALID_ARGUMENT saying the name is taken", err)
	}
	if err := c.RegisterActor(ctx, namedActor("other", "counter")); err != nil {
		t.Errorf("same name in another namespace: %v", err)
	}
	if err := c.RegisterActor(ctx, namedActor("ns", "")); err != nil {
		t.Errorf("anonymous actor: %v", err)
	}

	got, err := c.GetNamedActor(ctx, "ns", "counter")
	if err != nil || string(got.ActorId) != string(a.ActorId) || got.State != atollpb.ActorState_ACTOR_PENDING_CREATION {
		t.Fatalf("GetNamedActor: %v %v", got, err)
	}

	alive := proto.CloneOf(a)
	alive.State, alive.Address, alive.NumRestarts = atollpb.ActorState_ACTOR_ALIVE, "w1", 1
	if err := c.UpdateActor(ctx, alive); err != nil {
		t.Fatalf("UpdateActor: %v", err)
	}
	if got, _ := c.GetActor(ctx, a.ActorId); !proto.Equal(got, alive) {
		t.Errorf("after update: %v, want %v", got, alive)
	}

	dead := proto.CloneOf(alive)
	dead.State = atollpb.ActorState_ACTOR_DEAD
	dead.DeathCause = errs.ToProto(&errs.ActorDiedError{Name: "counter", Message: "killed"})
	if err := c.UpdateActor(ctx, dead); err != nil {
		t.Fatalf("UpdateActor dead: %v", err)
	}
	if _, err := c.GetNamedActor(ctx, "ns", "counter"); !errors.Is(err, errs.ErrNotFound) {
		t.Errorf("named lookup of a dead actor: %v, want NOT_FOUND", err)
	}
	got, err = c.GetActor(ctx, a.ActorId)
	if err != nil || got.State != atollpb.ActorState_ACTOR_DEAD || !errors.Is(errs.FromProto(got.DeathCause), errs.ErrActorDied) {
		t.Errorf("dead actor by id: %v %v", got, err)
	}
	if err := c.UpdateActor(ctx, alive); !errors.Is(err, errs.ErrInvalidArgument) {
		t.Errorf("reviving a dead actor: %v, want INVALID_ARGUMENT", err)
	}
	// The name is free again.
	if err := c.RegisterActor(ctx, b); err != nil {
		t.Fatalf("name not released by death: %v", err)
	}
	if got, err := c.GetNamedActor(ctx, "ns", "counter"); err != nil || string(got.ActorId) != string(b.ActorId) {
		t.Errorf("new holder: %v %v", got, err)
	}

	if _, err := c.GetActor(ctx, ids.NewActorID().Bytes()); !errors.Is(err, errs.ErrNotFound) {
		t.Errorf("unknown actor: %v, want NOT_FOUND", err)
	}
	if err := c.UpdateActor(ctx, namedActor("ns", "x")); !errors.Is(err, errs.ErrNotFound) {
		t.Errorf("update of an unknown actor: %v, want NOT_FOUND", err)
	}
	renamed := proto.CloneOf(b)
	renamed.Name, renamed.State = "other", atollpb.ActorState_ACTOR_ALIVE
	if err := c.UpdateActor(ctx, renamed); !errors.Is(err, errs.ErrInvalidArgument) {
		t.Errorf("renaming an actor: %v, want INVALID_ARGUMENT", err)
	}
	if _, err := c.GetNamedActor(ctx, "nope", "none"); !errors.Is(err, errs.ErrNotFound) {
		t.Errorf("unknown name: %v, want NOT_FOUND", err)
	}
	actors, err := c.ListActors(ctx)
	if err != nil || len(actors) != 4 {
		t.Errorf("ListActors: %d actors, %v; want 4", len(actors), err)
	}
}

func TestConcurrentRegistrationsOfOneName(t *testing.T) {
	e, ctx := newEnv(t), ctxT(t)
	const n = 16
	var wg sync.WaitGroup
	results := make(chan error, n)
	for range n {
		wg.Go(func() { results <- e.client.RegisterActor(ctx, namedActor("ns", "singleton")) })
	}
	wg.Wait()
	close(results)
	won := 0
	for err := range results {
		switch {
		case err == nil:
			won++
		case !errors.Is(err, errs.ErrInvalidArgument):
			t.Errorf("loser got %v, want INVALID_ARGUMENT", err)
		}
	}
	if won != 1 {
		t.Fatalf("%d registrations of one name succeeded, want 1", won)
	}
}

func TestJobs(t *testing.T) {
	e, ctx := newEnv(t), ctxT(t)
	c := e.client
	j := &atollpb.JobInfo{JobId: ids.NewJobID().Bytes(), DriverAddress: "driver", Entrypoint: "./sort"}
	if err := c.AddJob(ctx, j); err != nil {
		t.Fatalf("AddJob: %v", err)
	}
	if err := c.FinishJob(ctx, j.JobId); err != nil {
		t.Fatalf("FinishJob: %v", err)
	}
	if err := c.FinishJob(ctx, ids.NewJobID().Bytes()); !errors.Is(err, errs.ErrNotFound) {
		t.Errorf("unknown job: %v, want NOT_FOUND", err)
	}
	jobs, err := c.ListJobs(ctx)
	if err != nil || len(jobs) != 1 {
		t.Fatalf("ListJobs: %v %v", jobs, err)
	}
	if got := jobs[0]; !got.Finished || got.StartTimeUnixMs == 0 || got.EndTimeUnixMs < got.StartTimeUnixMs || got.Entrypoint != "./sort" {
		t.Errorf("job: %v", got)
	}
}

func TestEvents(t *testing.T) {
	e, ctx := newEnv(t), ctxT(t)
	c := e.client
	nodeEvents := make(chan *atollpb.NodeInfo, 8)
	actorEvents := make(chan *atollpb.ActorInfo, 8)
	unsubN, err := c.SubscribeNodeEvents(func(n *atollpb.NodeInfo) { nodeEvents <- n })
	if err != nil {
		t.Fatal(err)
	}
	defer unsubN()
	unsubA, err := c.SubscribeActorEvents(func(a *atollpb.ActorInfo) { actorEvents <- a })
	if err != nil {
		t.Fatal(err)
	}
	defer unsubA()

	n := node("n1")
	if err := c.RegisterNode(ctx, n); err != nil {
		t.Fatal(err)
	}
	if err := c.MarkNodeDead(ctx, n.NodeId); err != nil {
		t.Fatal(err)
	}
	for _, want := range []atollpb.NodeState{atollpb.NodeState_NODE_ALIVE, atollpb.NodeState_NODE_DEAD} {
		select {
		case got := <-nodeEvents:
			if string(got.NodeId) != string(n.NodeId) || got.State != want {
				t.Errorf("node event %v, want state %v", got, want)
			}
		case <-ctx.Done():
			t.Fatalf("no node event with state %v", want)
		}
	}

	a := namedActor("ns", "evented")
	if err := c.RegisterActor(ctx, a); err != nil {
		t.Fatal(err)
	}
	a.State = atollpb.ActorState_ACTOR_ALIVE
	if err := c.UpdateActor(ctx, a); err != nil {
		t.Fatal(err)
	}
	for _, want := range []atollpb.ActorState{atollpb.ActorState_ACTOR_PENDING_CREATION, atollpb.ActorState_ACTOR_ALIVE} {
		select {
		case got := <-actorEvents:
			if string(got.ActorId) != string(a.ActorId) || got.State != want {
				t.Errorf("actor event %v, want state %v", got, want)
			}
		case <-ctx.Done():
			t.Fatalf("no actor event with state %v", want)
		}
	}

	// A refused request changes nothing and announces nothing: the next
	// actor event is the one of the following change.
	if err := c.RegisterActor(ctx, namedActor("ns", "evented")); err == nil {
		t.Fatal("duplicate name accepted")
	}
	next := namedActor("ns", "next")
	if err := c.RegisterActor(ctx, next); err != nil {
		t.Fatal(err)
	}
	select {
	case got := <-actorEvents:
		if string(got.ActorId) != string(next.ActorId) {
			t.Errorf("event %v after a refused registration, want the next actor's", got)
		}
	case <-ctx.Done():
		t.Fatal("no event for the next actor")
	}
}

func TestNoResponderIsUnavailable(t *testing.T) {
	e, ctx := newEnv(t), ctxT(t)
	c := NewClient(e.nc, ClientOptions{Prefix: "nobody"})
	_, err := c.ListNodes(ctx)
	if !errors.Is(err, errs.ErrUnavailable) {
		t.Fatalf("request without a GCS: %v, want UNAVAILABLE", err)
	}
}

func TestConfigValidation(t *testing.T) {
	e := newEnv(t)
	for _, cfg := range []Config{
		{},
		{Conn: e.nc, Prefix: "a.b"},
		{Conn: e.nc, Prefix: "a b"},
		{Conn: e.nc, RequestTimeout: -1},
		{Conn: e.nc, Replicas: -1},
	} {
		if _, err := NewProps(cfg); err == nil {
			t.Errorf("NewProps(%+v) accepted an invalid config", cfg)
		}
	}
}
