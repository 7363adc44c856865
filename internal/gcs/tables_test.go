package gcs

import (
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/ids"
)

// registerActor runs a check and, if it yields an entry, puts it, as the actor does
// after a successful write-through.
func registerActor(t *testing.T, tb *tables, a *atollpb.ActorInfo) error {
	t.Helper()
	k, next, err := tb.checkRegisterActor(a)
	if err == nil && next != nil {
		tb.putActor(k, next)
	}
	return err
}

func TestNameIndexSurvivesAnyLoadOrder(t *testing.T) {
	oldHolder := namedActor("ns", "n")
	oldHolder.State = atollpb.ActorState_ACTOR_DEAD
	newHolder := namedActor("ns", "n")
	newHolder.State = atollpb.ActorState_ACTOR_ALIVE

	// KV iteration order is arbitrary: the dead former holder may load
	// after the live one and must not free the live one's name.
	for _, order := range [][]*atollpb.ActorInfo{{oldHolder, newHolder}, {newHolder, oldHolder}} {
		tb := newTables()
		for _, a := range order {
			k, _ := key("actor", a.ActorId)
			tb.putActor(k, a)
		}
		got, err := tb.getNamedActor("ns", "n")
		if err != nil || string(got.ActorId) != string(newHolder.ActorId) {
			t.Errorf("load order %v: named lookup %v %v", order[0].State, got, err)
		}
	}
}

func TestChecksDoNotMutate(t *testing.T) {
	tb := newTables()
	a := namedActor("ns", "n")
	if err := registerActor(t, tb, a); err != nil {
		t.Fatal(err)
	}
	// A check alone (a write that then fails) leaves the tables unchanged.
	dead := namedActor("ns", "n")
	dead.ActorId = a.ActorId
	dead.State = atollpb.ActorState_ACTOR_DEAD
	if _, next, err := tb.checkUpdateActor(dead); err != nil || next == nil {
		t.Fatalf("checkUpdateActor: %v %v", next, err)
	}
	if got, err := tb.getNamedActor("ns", "n"); err != nil || got.State == atollpb.ActorState_ACTOR_DEAD {
		t.Fatalf("check changed the tables: %v %v", got, err)
	}
	if a.State != atollpb.ActorState_ACTOR_STATE_UNSPECIFIED {
		t.Errorf("check mutated the caller's message: %v", a.State)
	}
}

func TestIdempotentChecksReturnNoEntry(t *testing.T) {
	tb := newTables()
	n := node("n")
	k, next, err := tb.checkRegisterNode(n, 10)
	if err != nil {
		t.Fatal(err)
	}
	tb.putNode(k, next)
	k, dead, err := tb.checkMarkNodeDead(&atollpb.MarkNodeDead{NodeId: n.NodeId}, 20)
	if err != nil || dead.EndTimeUnixMs != 20 || dead.StartTimeUnixMs != 10 {
		t.Fatalf("checkMarkNodeDead: %v %v", dead, err)
	}
	tb.putNode(k, dead)
	if _, again, err := tb.checkMarkNodeDead(&atollpb.MarkNodeDead{NodeId: n.NodeId}, 30); err != nil || again != nil {
		t.Errorf("second mark dead: %v %v, want no entry", again, err)
	}
	if _, _, err := tb.checkRegisterActor(&atollpb.ActorInfo{ActorId: n.NodeId, State: atollpb.ActorState_ACTOR_DEAD}); !errors.Is(err, errs.ErrInvalidArgument) {
		t.Errorf("registering a dead actor: %v", err)
	}
}

// kill marks an actor dead in the tables, as a successful update does.
func kill(t *testing.T, tb *tables, a *atollpb.ActorInfo) {
	t.Helper()
	dead := proto.CloneOf(a)
	dead.State = atollpb.ActorState_ACTOR_DEAD
	k, next, err := tb.checkUpdateActor(dead)
	if err != nil || next == nil {
		t.Fatalf("checkUpdateActor: %v %v", next, err)
	}
	tb.putActor(k, next)
}

// prune drops what overCap names, as the actor does after the KV removal.
func prune(tb *tables, l limits) []victim {
	v := tb.overCap(l)
	for _, x := range v {
		tb.drop(x)
	}
	return v
}

func keyOf(t *testing.T, id []byte) string {
	t.Helper()
	k, err := key("id", id)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// TestOverCapForgetsTheOldestDeathsFirst: past each cap the entries that
// died (or finished) first go; live entries never do, however many.
func TestOverCapForgetsTheOldestDeathsFirst(t *testing.T) {
	tb := newTables()
	l := limits{DeadNodes: 2, DeadActors: 2, FinishedJobs: 2}
	var actorKeys, nodeKeys, jobKeys []string
	for i := range 5 {
		a := namedActor("ns", fmt.Sprintf("a%d", i))
		if err := registerActor(t, tb, a); err != nil {
			t.Fatal(err)
		}
		actorKeys = append(actorKeys, keyOf(t, a.ActorId))
		n := node(fmt.Sprint(i))
		k, next, _ := tb.checkRegisterNode(n, 1)
		tb.putNode(k, next)
		nodeKeys = append(nodeKeys, k)
		j := &atollpb.JobInfo{JobId: ids.NewJobID().Bytes()}
		k, nj, _ := tb.checkAddJob(j, 1)
		tb.putJob(k, nj)
		jobKeys = append(jobKeys, k)
	}
	if v := prune(tb, l); len(v) != 0 {
		t.Fatalf("live entries pruned: %v", v)
	}
	// Deaths in the order 3, 0, 4, 1; entry 2 stays alive.
	for _, i := range []int{3, 0, 4, 1} {
		kill(t, tb, tb.actors[actorKeys[i]])
		k, dead, _ := tb.checkMarkNodeDead(&atollpb.MarkNodeDead{NodeId: tb.nodes[nodeKeys[i]].NodeId}, int64(10+i))
		tb.putNode(k, dead)
		k, fin, _ := tb.checkFinishJob(tb.jobs[jobKeys[i]].JobId, int64(10+i))
		tb.putJob(k, fin)
	}
	v := prune(tb, l)
	want := []victim{{nodesTable, nodeKeys[3]}, {nodesTable, nodeKeys[0]}, {actorsTable, actorKeys[3]}, {actorsTable, actorKeys[0]},
		{jobsTable, jobKeys[3]}, {jobsTable, jobKeys[0]}}
	if !slices.Equal(v, want) {
		t.Fatalf("victims %v, want the two oldest deaths of each table %v", v, want)
	}
	sz := tb.sizes()
	if sz != (tableSizes{Nodes: 3, DeadNodes: 2, Actors: 3, DeadActors: 2, Jobs: 3, FinishedJobs: 2}) {
		t.Fatalf("sizes %+v", sz)
	}
	if _, err := tb.getActor(tb.actors[actorKeys[2]].ActorId); err != nil {
		t.Errorf("live actor gone: %v", err)
	}
	if got, err := tb.getNamedActor("ns", "a2"); err != nil || keyOf(t, got.ActorId) != actorKeys[2] {
		t.Errorf("live name gone: %v %v", got, err)
	}
	// Forgotten entries are NOT_FOUND; their names are free.
	if _, _, err := tb.checkMarkNodeDead(&atollpb.MarkNodeDead{NodeId: mustBytes(t, nodeKeys[3])}, 99); !errors.Is(err, errs.ErrNotFound) {
		t.Errorf("forgotten node: %v, want NOT_FOUND", err)
	}
	if err := registerActor(t, tb, namedActor("ns", "a3")); err != nil {
		t.Errorf("the name of a forgotten actor: %v", err)
	}
}

// TestRevivedAndRekilledEntriesKeepTheOrder: a node that registers again
// leaves the dead set, and dies again as the newest; a dead actor updated
// again keeps its place.
func TestRevivedAndRekilledEntriesKeepTheOrder(t *testing.T) {
	tb := newTables()
	var nodes []*atollpb.NodeInfo
	for i := range 3 {
		n := node(fmt.Sprint(i))
		k, next, _ := tb.checkRegisterNode(n, 1)
		tb.putNode(k, next)
		k, dead, _ := tb.checkMarkNodeDead(&atollpb.MarkNodeDead{NodeId: n.NodeId}, 2)
		tb.putNode(k, dead)
		nodes = append(nodes, n)
	}
	// Node 0 comes back: not dead, not a victim however low the cap.
	k, alive, _ := tb.checkRegisterNode(nodes[0], 3)
	tb.putNode(k, alive)
	if got := tb.overCap(limits{DeadNodes: 1, DeadActors: 1, FinishedJobs: 1}); !slices.Equal(got, []victim{{nodesTable, keyOf(t, nodes[1].NodeId)}}) {
		t.Fatalf("victims %v, want node 1 only", got)
	}
	// It dies again: now the newest death.
	k, dead, _ := tb.checkMarkNodeDead(&atollpb.MarkNodeDead{NodeId: nodes[0].NodeId}, 4)
	tb.putNode(k, dead)
	if got := tb.overCap(limits{DeadNodes: 1, DeadActors: 1, FinishedJobs: 1}); !slices.Equal(got, []victim{{nodesTable, keyOf(t, nodes[1].NodeId)}, {nodesTable, keyOf(t, nodes[2].NodeId)}}) {
		t.Fatalf("victims %v, want nodes 1 and 2", got)
	}

	a, b := namedActor("", ""), namedActor("", "")
	for _, x := range []*atollpb.ActorInfo{a, b} {
		if err := registerActor(t, tb, x); err != nil {
			t.Fatal(err)
		}
		kill(t, tb, x)
	}
	kill(t, tb, a) // a second DEAD report
	if got := tb.overCap(limits{DeadNodes: 3, DeadActors: 1, FinishedJobs: 1}); !slices.Equal(got, []victim{{actorsTable, keyOf(t, a.ActorId)}}) {
		t.Fatalf("victims %v, want the first actor to die", got)
	}
}

// TestDeathOrderStaysCompact: a key dying and reviving forever does not
// grow the order's queue.
func TestDeathOrderStaysCompact(t *testing.T) {
	o := newDeathOrder()
	o.set("stays-dead", true)
	for range 10000 {
		o.set("flapping", true)
		o.set("flapping", false)
	}
	if o.len() != 1 || len(o.queue) > 2*o.len()+64 || !slices.Equal(o.oldest(5), []string{"stays-dead"}) {
		t.Fatalf("%d dead, queue of %d, oldest %v", o.len(), len(o.queue), o.oldest(5))
	}
}

func mustBytes(t *testing.T, k string) []byte {
	t.Helper()
	b, err := hex.DecodeString(k)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
