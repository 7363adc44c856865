package gcs

import (
	"errors"
	"testing"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/errs"
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
	k, dead, err := tb.checkMarkNodeDead(n.NodeId, 20)
	if err != nil || dead.EndTimeUnixMs != 20 || dead.StartTimeUnixMs != 10 {
		t.Fatalf("checkMarkNodeDead: %v %v", dead, err)
	}
	tb.putNode(k, dead)
	if _, again, err := tb.checkMarkNodeDead(n.NodeId, 30); err != nil || again != nil {
		t.Errorf("second mark dead: %v %v, want no entry", again, err)
	}
	if _, _, err := tb.checkRegisterActor(&atollpb.ActorInfo{ActorId: n.NodeId, State: atollpb.ActorState_ACTOR_DEAD}); !errors.Is(err, errs.ErrInvalidArgument) {
		t.Errorf("registering a dead actor: %v", err)
	}
}
