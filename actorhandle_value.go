package atoll

import (
	"context"
	"errors"
	"reflect"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/ids"
	"github.com/atoll-runtime/atoll/internal/owner"
)

// An ActorHandle is a value like any other: pass it to a task or an actor
// method as an argument (Value(h)), inside a struct, a slice or a map, or
// return it. It travels as an atollpb.ActorHandleValue (the actor's id,
// name, type and MaxTaskRetries); the receiving process makes a handle of
// its own from it, which calls the actor like any handle made there:
// calls through it from that process start in the order they were made.
//
// What keeps an actor alive is not its handles: an actor lives until Kill,
// until its restarts run out, or until the job that created it ends. A
// passed handle is therefore usable for as long as the job runs, and no
// handle, passed or not, keeps an actor alive after its job.

// maxActorHandleValue bounds an encoded handle, and the names in it.
const (
	maxActorHandleValue = 4 << 10
	maxActorNameLen     = 1 << 10
)

// GobEncode lets an ActorHandle travel inside values (see ActorHandle).
func (h ActorHandle[T]) GobEncode() ([]byte, error) {
	if h.st == nil {
		return nil, errs.Invalidf("cannot pass a zero ActorHandle: make it with ActorType.New or GetActor first")
	}
	return proto.Marshal(&atollpb.ActorHandleValue{ActorId: h.st.id.Bytes(), Name: h.st.name, ActorType: h.st.typeName,
		MaxTaskRetries: int32(h.st.maxTaskRetries)})
}

// GobDecode makes a handle in this process to the actor b names: the
// actor must be of a type registered in this binary as T. Calls through
// it wait, like calls to an actor being created, until this process knows
// where the actor lives (it asks the GCS at once, and hears of the actor's
// moves as every handle does).
func (h *ActorHandle[T]) GobDecode(b []byte) error {
	if len(b) > maxActorHandleValue {
		return errs.Invalidf("ActorHandle encoding of %d bytes (at most %d): not a handle atoll encoded", len(b), maxActorHandleValue)
	}
	var v atollpb.ActorHandleValue
	if err := proto.Unmarshal(b, &v); err != nil {
		return errs.Invalidf("malformed ActorHandle encoding: %v", err)
	}
	id, err := ids.FromBytes(v.ActorId)
	if err != nil || id.IsZero() {
		return errs.Invalidf("ActorHandle encoding without a valid actor id (%d bytes)", len(v.ActorId))
	}
	if len(v.Name) > maxActorNameLen || len(v.ActorType) > maxActorNameLen {
		return errs.Invalidf("ActorHandle encoding with a name of %d bytes or a type of %d (at most %d)", len(v.Name), len(v.ActorType), maxActorNameLen)
	}
	if v.MaxTaskRetries < -1 {
		return errs.Invalidf("ActorHandle encoding with MaxTaskRetries %d", v.MaxTaskRetries)
	}
	e := lookupActorType(v.ActorType)
	if e == nil {
		return errs.Invalidf("a handle to actor %s of type %q, which this binary does not register: register actor types at package init (NewActorType) so every process knows them", id.Short(), v.ActorType)
	}
	if want := reflect.TypeFor[T](); e.goType != want {
		return errs.Invalidf("a handle to actor %s of type %s (%v) decoded as ActorHandle[%v]: declare the field or argument with the actor's type", id.Short(), v.ActorType, e.goType, want)
	}
	rt, err := running()
	if err != nil {
		return errs.Unavailablef("an ActorHandle can only be decoded while atoll runs in this process (%v)", err)
	}
	h.st = newActorState(rt, id, v.Name, v.ActorType, int(v.MaxTaskRetries), false)
	go rt.locateActor(id)
	return nil
}

// locateActor asks the GCS where actor id lives, for a handle this
// process received: actor events only tell of changes, and the actor may
// have started before this process heard of it. An actor the GCS does not
// know (or knows dead) fails the handle's calls with ActorDiedError.
func (rt *core) locateActor(id ids.ActorID) {
	backoff := 50 * time.Millisecond
	for attempt := 0; attempt < 6 && !rt.closed.Load(); attempt++ {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		info, err := rt.gcs.GetActor(ctx, id.Bytes())
		cancel()
		switch {
		case err == nil && info != nil:
			if info.State == atollpb.ActorState_ACTOR_ALIVE || info.State == atollpb.ActorState_ACTOR_DEAD {
				rt.owner.do(func(t *owner.Table) { t.ActorEvent(info) })
			}
			return // pending or restarting: its ALIVE event comes
		case errors.Is(err, errs.ErrNotFound):
			rt.log.Warn("a passed ActorHandle names an actor the GCS does not know", "actor", id.String())
			rt.owner.do(func(t *owner.Table) {
				t.ActorKilled(id, "the GCS does not know this actor (its handle was passed from a process of another job or cluster?)")
			})
			return
		}
		rt.log.Debug("locating a passed actor handle", "actor", id.String(), "err", err)
		t := time.NewTimer(backoff)
		<-t.C
		backoff *= 2
	}
}

// GetActor asks the GCS for an actor by id through the raylet.
func (g *frameGCS) GetActor(ctx context.Context, actorID []byte) (*atollpb.ActorInfo, error) {
	r, err := g.do(ctx, &atollpb.GcsRequest{Op: &atollpb.GcsRequest_GetActor{GetActor: actorID}})
	if err != nil {
		return nil, err
	}
	if len(r.Actors) == 0 {
		return nil, errs.NotFoundf("no actor %x", actorID)
	}
	return r.Actors[0], nil
}
