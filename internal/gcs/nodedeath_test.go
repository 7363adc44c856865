package gcs

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/errs"
)

// TestNodeDeathUpdatesEveryActorPastAFailedWrite: a node's death is
// applied to every actor it hosted even when one actor's write fails
// (here the first in key order, whose entry, stored when the GCS took
// larger entries, no longer fits the largest the restarted GCS takes,
// with or without a death cause: an operator lowered
// ATOLL_GCS_MAX_ENTRY_BYTES): the others are no longer ALIVE at the dead
// node's address, and the request fails, typed. Marking the node dead
// again, once the write can succeed, updates the actor still left there.
// (A death cause too large for the entry no longer fails a write:
// TestOversizeDeathCauseIsShortened.)
func TestNodeDeathUpdatesEveryActorPastAFailedWrite(t *testing.T) {
	e, ctx := newEnv(t), ctxT(t)
	const maxEntry = 1024
	c := e.client
	host, owner := node("host"), node("owner")
	for _, n := range []*atollpb.NodeInfo{host, owner} {
		if err := c.RegisterNode(ctx, n); err != nil {
			t.Fatal(err)
		}
	}
	big, small, restarts := namedActor("", ""), namedActor("", ""), namedActor("", "")
	// big comes first in key order: before the fix its failed write
	// left the others as they were.
	for _, a := range []*atollpb.ActorInfo{small, restarts} {
		if bytes.Compare(a.ActorId, big.ActorId) < 0 {
			a.ActorId, big.ActorId = big.ActorId, a.ActorId
		}
	}
	restarts.MaxRestarts, restarts.OwnerNodeId = 1, owner.NodeId
	big.ActorType += strings.Repeat("x", 2*maxEntry)
	for i, a := range []*atollpb.ActorInfo{big, small, restarts} {
		alive := proto.CloneOf(a)
		alive.State, alive.NodeId, alive.Address = atollpb.ActorState_ACTOR_ALIVE, host.NodeId, "host/"+string(rune('1'+i))
		if err := c.RegisterActor(ctx, a); err != nil {
			t.Fatal(err)
		}
		if err := c.UpdateActor(ctx, alive); err != nil {
			t.Fatal(err)
		}
	}
	// The GCS restarts taking smaller entries: it reloads big's, whose
	// next entry it cannot write.
	e.stopGCS()
	e.startGCS(Config{MaxEntryBytes: maxEntry})

	err := c.MarkNodeDead(ctx, host.NodeId, false, "test")
	if !errors.Is(err, errs.ErrInvalidArgument) {
		t.Fatalf("a node death one of whose actors could not be written: %v, want INVALID_ARGUMENT", err)
	}
	nodes, err := c.ListNodes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes {
		if bytes.Equal(n.NodeId, host.NodeId) && n.State != atollpb.NodeState_NODE_DEAD {
			t.Fatalf("host: %v, want dead", n.State)
		}
	}
	check := func(what string, a *atollpb.ActorInfo, state atollpb.ActorState) {
		t.Helper()
		got, err := c.GetActor(ctx, a.ActorId)
		if err != nil {
			t.Fatal(err)
		}
		if got.State != state || (state == atollpb.ActorState_ACTOR_RESTARTING) != (got.Address == "") {
			t.Errorf("%s: %v at %q, want %v", what, got.State, got.Address, state)
		}
	}
	check("the actor whose write failed", big, atollpb.ActorState_ACTOR_ALIVE)
	check("an actor after it without restarts", small, atollpb.ActorState_ACTOR_DEAD)
	check("an actor after it with restarts left", restarts, atollpb.ActorState_ACTOR_RESTARTING)
	// What the death left is listed on its own (the RESTARTING actor has
	// no node any more: it is not left there).
	leftover := func(want ...*atollpb.ActorInfo) {
		t.Helper()
		got, err := c.ListActorsLeftOnDeadNodes(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want) {
			t.Fatalf("left on dead nodes: %d actors, want %d", len(got), len(want))
		}
		for i := range want {
			if !bytes.Equal(got[i].ActorId, want[i].ActorId) {
				t.Errorf("left on dead nodes: actor %d is %x, want %x", i, got[i].ActorId, want[i].ActorId)
			}
		}
	}
	leftover(big)

	// The write can succeed now: the same death, reported again, updates
	// the actor left ALIVE and nothing else.
	e.stopGCS()
	e.startGCS(Config{})
	if err := c.MarkNodeDead(ctx, host.NodeId, false, "again"); err != nil {
		t.Fatalf("the death reported again: %v", err)
	}
	check("the actor whose write failed, once marked again", big, atollpb.ActorState_ACTOR_DEAD)
	if got, _ := c.GetActor(ctx, big.ActorId); got.GetDeathCause().GetCode() != atollpb.ErrorCode_NODE_DIED || strings.HasSuffix(got.GetDeathCause().GetMessage(), truncatedMark) {
		t.Errorf("the actor whose write failed, once marked again: cause %v, want NODE_DIED, whole", got.GetDeathCause())
	}
	check("an actor with restarts left, once marked again", restarts, atollpb.ActorState_ACTOR_RESTARTING)
	leftover()
	if got, _ := c.GetActor(ctx, restarts.ActorId); got.NumRestarts != 1 {
		t.Errorf("a repeated death counted the restart again: %d restarts", got.NumRestarts)
	}
	nodes, err = c.ListNodes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes {
		if bytes.Equal(n.NodeId, host.NodeId) && n.EndReason != "test" {
			t.Errorf("host's end reason: %q, want the first, %q", n.EndReason, "test")
		}
	}
}

// TestOversizeDeathCauseIsShortened: an actor whose new entry, with its
// death cause, exceeds the largest entry the GCS takes changes state all
// the same, its cause shortened and marked: a constructor's failure with
// a panic's stack (DEAD), a crash reported with a restart
// (RESTARTING), and a node's death for an actor whose entry had little
// room left (DEAD; before, the write was refused and the actor stayed
// ALIVE at the dead node's address).
func TestOversizeDeathCauseIsShortened(t *testing.T) {
	e, ctx := newEnv(t), ctxT(t)
	c := e.client
	host := node("host")
	if err := c.RegisterNode(ctx, host); err != nil {
		t.Fatal(err)
	}
	alive := func(a *atollpb.ActorInfo) *atollpb.ActorInfo {
		t.Helper()
		if err := c.RegisterActor(ctx, a); err != nil {
			t.Fatal(err)
		}
		next := proto.CloneOf(a)
		next.State, next.NodeId, next.Address = atollpb.ActorState_ACTOR_ALIVE, host.NodeId, "host/1"
		if err := c.UpdateActor(ctx, next); err != nil {
			t.Fatal(err)
		}
		return next
	}
	// As large as internal/errs lets a task error travel: the message and
	// stack at their bounds, registered values.
	huge := func() *atollpb.ErrorInfo {
		return &atollpb.ErrorInfo{Code: atollpb.ErrorCode_TASK_ERROR, TaskName: "Counter.New",
			Message:     "constructor failed: " + strings.Repeat("é", errs.MaxMessage/2-16),
			RemoteStack: "goroutine 1 [running]:\n" + strings.Repeat("main.f()\n", errs.MaxStack/9-8),
			Registered: []*atollpb.RegisteredError{{Type: "example.com/app.E", Gob: bytes.Repeat([]byte{1}, 8<<10)},
				{Type: "example.com/app.F", Gob: bytes.Repeat([]byte{2}, 8<<10)}},
			Sentinels: []string{"example.com/app.ErrQuota"}}
	}
	shortened := func(what string, a *atollpb.ActorInfo, state atollpb.ActorState, want *atollpb.ErrorInfo) *atollpb.ErrorInfo {
		t.Helper()
		got, err := c.GetActor(ctx, a.ActorId)
		if err != nil {
			t.Fatal(err)
		}
		cause := got.GetDeathCause()
		switch {
		case got.State != state:
			t.Errorf("%s: %v, want %v", what, got.State, state)
		case proto.Size(got) > DefaultMaxEntryBytes:
			t.Errorf("%s: a %d-byte entry, past the largest the GCS takes, %d", what, proto.Size(got), DefaultMaxEntryBytes)
		case cause.GetCode() != want.Code:
			t.Errorf("%s: cause %v, want code %v", what, cause.GetCode(), want.Code)
		case !strings.HasSuffix(cause.GetRemoteStack(), truncatedMark) || !strings.HasPrefix(want.RemoteStack, strings.TrimSuffix(cause.GetRemoteStack(), truncatedMark)):
			t.Errorf("%s: stack of %d bytes, want the first bytes of the %d and the mark", what, len(cause.GetRemoteStack()), len(want.RemoteStack))
		}
		return cause
	}

	// A constructor's failure: the stack is cut, the rest kept whole.
	ctor := alive(namedActor("", "ctor"))
	dead := proto.CloneOf(ctor)
	dead.State, dead.DeathCause = atollpb.ActorState_ACTOR_DEAD, huge()
	if proto.Size(dead) <= DefaultMaxEntryBytes {
		t.Fatalf("the cause leaves the entry at %d bytes: not past the bound", proto.Size(dead))
	}
	if err := c.UpdateActor(ctx, dead); err != nil {
		t.Fatalf("an actor dead with a cause too large for its entry: %v", err)
	}
	cause := shortened("an actor whose constructor failed", ctor, atollpb.ActorState_ACTOR_DEAD, dead.DeathCause)
	if cause.GetMessage() != dead.DeathCause.Message || len(cause.GetRegistered()) != 2 || len(cause.GetSentinels()) != 1 {
		t.Errorf("more than the stack was cut: a %d-byte message, %d values, %d sentinels", len(cause.GetMessage()), len(cause.GetRegistered()), len(cause.GetSentinels()))
	}
	if _, err := c.GetNamedActor(ctx, "", "ctor"); !errors.Is(err, errs.ErrNotFound) {
		t.Errorf("the dead actor still holds its name: %v", err)
	}

	// A crash, restarting: a value the entry cannot hold is dropped too
	// (the last), and the message says the cause was cut.
	crashed := alive(namedActor("", ""))
	restarting := proto.CloneOf(crashed)
	restarting.State, restarting.NumRestarts, restarting.DeathCause = atollpb.ActorState_ACTOR_RESTARTING, 1, huge()
	restarting.DeathCause.Registered[1].Gob = bytes.Repeat([]byte{2}, DefaultMaxEntryBytes)
	if err := c.UpdateActor(ctx, restarting); err != nil {
		t.Fatalf("an actor restarting with a cause too large for its entry: %v", err)
	}
	cause = shortened("a crashed actor restarting", crashed, atollpb.ActorState_ACTOR_RESTARTING, restarting.DeathCause)
	if len(cause.GetRegistered()) != 1 || cause.GetRegistered()[0].GetType() != "example.com/app.E" || cause.GetMessage() != restarting.DeathCause.Message+truncatedMark {
		t.Errorf("a cause too large past its stack: %d values left, a %d-byte message; want the first value, the message and the mark",
			len(cause.GetRegistered()), len(cause.GetMessage()))
	}

	// A node's death, for an actor whose entry has 16 bytes to spare:
	// the GCS's own cause does not fit whole.
	full := namedActor("", "")
	probe := proto.CloneOf(full)
	probe.State, probe.NodeId, probe.Address = atollpb.ActorState_ACTOR_ALIVE, host.NodeId, "host/1"
	full.ActorType += strings.Repeat("x", DefaultMaxEntryBytes-16-proto.Size(probe))
	full = alive(full)
	if err := c.MarkNodeDead(ctx, host.NodeId, false, "test"); err != nil {
		t.Fatalf("a node death whose actor's cause did not fit: %v", err)
	}
	got, err := c.GetActor(ctx, full.ActorId)
	if err != nil {
		t.Fatal(err)
	}
	if got.State != atollpb.ActorState_ACTOR_DEAD || got.GetDeathCause().GetCode() != atollpb.ErrorCode_NODE_DIED || proto.Size(got) > DefaultMaxEntryBytes {
		t.Errorf("an actor of the dead node with 16 bytes to spare: %v, cause %v, %d bytes; want DEAD, NODE_DIED, at most %d",
			got.State, got.GetDeathCause(), proto.Size(got), DefaultMaxEntryBytes)
	}
}
