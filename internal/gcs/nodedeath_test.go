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
// (here the first in key order, whose DEAD entry, with its death cause,
// no longer fits the largest entry the GCS takes): the others are no
// longer ALIVE at the dead node's address, and the request fails, typed,
// so its sender retries. Marking the node dead again, once the write can
// succeed, updates the actor still left there.
func TestNodeDeathUpdatesEveryActorPastAFailedWrite(t *testing.T) {
	e, ctx := newEnv(t), ctxT(t)
	const maxEntry = 1024
	e.stopGCS()
	e.startGCS(Config{MaxEntryBytes: maxEntry})
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
	for i, a := range []*atollpb.ActorInfo{big, small, restarts} {
		alive := proto.CloneOf(a)
		alive.State, alive.NodeId, alive.Address = atollpb.ActorState_ACTOR_ALIVE, host.NodeId, "host/"+string(rune('1'+i))
		if a == big {
			// Its ALIVE entry fits, with 16 bytes to spare: its death
			// cause does not.
			pad := maxEntry - 16 - proto.Size(alive)
			a.ActorType += strings.Repeat("x", pad)
			alive.ActorType = a.ActorType
		}
		if err := c.RegisterActor(ctx, a); err != nil {
			t.Fatal(err)
		}
		if err := c.UpdateActor(ctx, alive); err != nil {
			t.Fatal(err)
		}
	}

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

	// The write can succeed now: the same death, reported again, updates
	// the actor left ALIVE and nothing else.
	e.stopGCS()
	e.startGCS(Config{})
	if err := c.MarkNodeDead(ctx, host.NodeId, false, "again"); err != nil {
		t.Fatalf("the death reported again: %v", err)
	}
	check("the actor whose write failed, once marked again", big, atollpb.ActorState_ACTOR_DEAD)
	check("an actor with restarts left, once marked again", restarts, atollpb.ActorState_ACTOR_RESTARTING)
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
