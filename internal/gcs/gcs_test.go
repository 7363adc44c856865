package gcs

import (
	"bytes"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

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
	if err := c.MarkNodeDead(ctx, n1.NodeId, true, strings.Repeat("x", MaxEndReasonBytes+1)); !errors.Is(err, errs.ErrInvalidArgument) {
		t.Fatalf("MarkNodeDead with a reason of %d bytes: %v, want INVALID_ARGUMENT", MaxEndReasonBytes+1, err)
	}
	if err := c.MarkNodeDead(ctx, n1.NodeId, true, "drained"); err != nil {
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
		case dead && (n.State != atollpb.NodeState_NODE_DEAD || n.EndTimeUnixMs == 0 || !n.Left || n.EndReason != "drained"):
			t.Errorf("dead node: %v, want NODE_DEAD, an end time, left, \"drained\"", n)
		case !dead && (n.State != atollpb.NodeState_NODE_ALIVE || n.EndTimeUnixMs != 0):
			t.Errorf("live node: %v", n)
		}
	}
	// Marked again (the head heard it leave): the first end stands.
	if err := c.MarkNodeDead(ctx, n1.NodeId, false, "declared dead"); err != nil {
		t.Errorf("marking a dead node dead again: %v", err)
	}
	if nodes, err := c.ListNodes(ctx); err != nil || !slices.ContainsFunc(nodes, func(n *atollpb.NodeInfo) bool {
		return bytes.Equal(n.NodeId, n1.NodeId) && n.Left && n.EndReason == "drained"
	}) {
		t.Errorf("after a second mark: %v %v, want the first end (left, drained) kept", nodes, err)
	}
	if err := c.MarkNodeDead(ctx, ids.NewNodeID().Bytes(), false, "test"); !errors.Is(err, errs.ErrNotFound) {
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
		if n.State != atollpb.NodeState_NODE_ALIVE || n.Left || n.EndReason != "" {
			t.Errorf("node %s after re-registering: %v, want alive with no end reason", n.Address, n)
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
	if err := c.MarkNodeDead(ctx, n.NodeId, false, "test"); err != nil {
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

// TestRegistrationsOnTheNodesOwnSubject: a node's registration is served
// only on its own subject (which a head's NATS lets only that node
// publish on); the general subject refuses it, another node's subject
// refuses it, and a node's subject serves nothing but the node's own
// registrations and death.
func TestRegistrationsOnTheNodesOwnSubject(t *testing.T) {
	e := newEnv(t)
	a, b := node("a:1"), node("b:1")
	aID, _ := ids.FromBytes(a.NodeId)
	bID, _ := ids.FromBytes(b.NodeId)
	send := func(subject string, req *atollpb.GcsRequest) error {
		t.Helper()
		data, _ := proto.Marshal(req)
		m, err := e.nc.Request(subject, data, 30*time.Second)
		if err != nil {
			t.Fatalf("%s: %v", subject, err)
		}
		var reply atollpb.GcsReply
		if err := proto.Unmarshal(m.Data, &reply); err != nil {
			t.Fatal(err)
		}
		if reply.Error != nil {
			return errs.FromProto(reply.Error)
		}
		return nil
	}
	register := func(n *atollpb.NodeInfo) *atollpb.GcsRequest {
		return &atollpb.GcsRequest{Op: &atollpb.GcsRequest_RegisterNode{RegisterNode: n}}
	}
	reregister := &atollpb.GcsRequest{Op: &atollpb.GcsRequest_ReregisterNode{ReregisterNode: a}}
	general, ownA, ownB := RequestSubject(DefaultPrefix), NodeRequestSubject(DefaultPrefix, aID), NodeRequestSubject(DefaultPrefix, bID)
	for _, c := range []struct {
		what    string
		subject string
		req     *atollpb.GcsRequest
	}{
		{"a registration on the general subject", general, register(a)},
		{"a re-registration on the general subject", general, reregister},
		{"node a's registration on node b's subject", ownB, register(a)},
		{"node a's re-registration on node b's subject", ownB, reregister},
		{"a list on a node's subject", ownA, &atollpb.GcsRequest{Op: &atollpb.GcsRequest_ListNodes{ListNodes: &atollpb.ListNodes{}}}},
		{"node b's death on node a's subject", ownA, &atollpb.GcsRequest{Op: &atollpb.GcsRequest_MarkNodeDead{MarkNodeDead: &atollpb.MarkNodeDead{NodeId: b.NodeId}}}},
	} {
		if err := send(c.subject, c.req); !errors.Is(err, errs.ErrPermissionDenied) {
			t.Errorf("%s: %v, want PERMISSION_DENIED", c.what, err)
		}
	}
	if nodes, err := e.client.ListNodes(ctxT(t)); err != nil || len(nodes) != 0 {
		t.Fatalf("after refused registrations the GCS lists %v (%v), want none", nodes, err)
	}
	if err := send(ownA, register(a)); err != nil {
		t.Fatalf("node a's registration on its own subject: %v", err)
	}
	if err := send(ownA, &atollpb.GcsRequest{Op: &atollpb.GcsRequest_MarkNodeDead{MarkNodeDead: &atollpb.MarkNodeDead{NodeId: a.NodeId, Left: true, Reason: "stopped"}}}); err != nil {
		t.Fatalf("node a's own death on its own subject: %v", err)
	}
	nodes, err := e.client.ListNodes(ctxT(t))
	if err != nil || len(nodes) != 1 || nodes[0].State != atollpb.NodeState_NODE_DEAD || nodes[0].EndReason != "stopped" {
		t.Fatalf("the GCS lists %v (%v), want node a, left: stopped", nodes, err)
	}
}
