package objectstore

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/ids"
)

// NewProps returns the props of the node's store actor, which serialises
// every create, seal, get, release and delete decision over arena. Every
// actor spawned from the props shares one Store, which is what lets the
// objects survive a restart by the supervisor (the producer makes a new
// actor value over the same state) and a re-spawn after a stop (e.g. when a
// parent restarts). Only one such actor may run at a time: a second one
// spawned while the first is alive stops itself at once.
//
// Messages and replies (all from store.proto):
//
//	*atollpb.CreateObjectRequest   → *atollpb.CreateObjectReply (possibly later: backpressure)
//	*atollpb.SealObjectRequest     → *atollpb.SealObjectReply
//	*atollpb.AbortObjectRequest    → *atollpb.SealObjectReply (error only), if it has a sender
//	*atollpb.GetObjectsRequest     → *atollpb.GetObjectsReply (possibly later: waits for seals)
//	*atollpb.ReleaseObjectsRequest → no reply
//	*atollpb.DeleteObjectsRequest  → no reply
//	*atollpb.ClientDisconnected    → no reply
//	*atollpb.StoreStatsRequest     → *atollpb.StoreStats
//
// Create and Get requests without a sender are dropped: nobody could learn
// the location, so nobody could seal or release the object.
func NewProps(cfg Config, arena *Arena) (*actor.Props, error) {
	if arena == nil {
		return nil, errors.New("objectstore: NewProps: nil arena")
	}
	cfg, err := cfg.withDefaults(arena.Size())
	if err != nil {
		return nil, err
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if cfg.Capacity > arena.Size() {
		return nil, fmt.Errorf("objectstore: capacity %d exceeds arena of %d bytes", cfg.Capacity, arena.Size())
	}
	st := &storeState{
		cfg:     cfg,
		arena:   arena,
		store:   NewStore(cfg.Capacity),
		gets:    newGetWaiters(),
		replyTo: make(map[uint64]*actor.PID),
		now:     time.Now,
	}
	return actor.PropsFromProducer(func() actor.Actor { return &storeActor{st: st} }), nil
}

// storeState is everything the store actor owns. It is created once per
// NewProps and outlives actor restarts. Only the actor's goroutine touches
// it; timer callbacks only send wake messages.
type storeState struct {
	cfg   Config
	arena *Arena
	store *Store
	// failCreates is how many creations still fail by fault injection.
	failCreates int
	gets        *getWaiters
	// replyTo holds the requester of every queued creation and waiting get.
	replyTo   map[uint64]*actor.PID
	nextToken uint64

	self     *actor.PID
	system   *actor.ActorSystem
	timer    *time.Timer
	timerAt  time.Time
	timerGen uint64
	now      func() time.Time
}

type storeActor struct {
	st *storeState
	// duplicate marks an actor spawned from props whose state another
	// actor already owns; it stops without touching the state.
	duplicate bool
}

// wake is sent by the timer armed as generation gen when a deadline may
// have passed.
type wake struct{ gen uint64 }

// crashForTest makes the actor panic, so tests can check that the state
// survives a restart by the supervisor.
type crashForTest struct{}

// Receive implements actor.Actor.
func (a *storeActor) Receive(ctx actor.Context) {
	st := a.st
	if a.duplicate {
		return
	}
	switch m := ctx.Message().(type) {
	case *actor.Started:
		if st.self != nil && !st.self.Equal(ctx.Self()) {
			// Another live actor owns the state.
			ctx.Logger().Error("objectstore: store props spawned twice; stopping the second actor", slog.Any("owner", st.self))
			a.duplicate = true
			ctx.Stop(ctx.Self())
			return
		}
		st.self, st.system = ctx.Self(), ctx.ActorSystem()
	case *actor.Stopped:
		st.stop(ctx)
		return
	case *atollpb.CreateObjectRequest:
		st.create(ctx, m)
	case *atollpb.SealObjectRequest:
		st.seal(ctx, m)
	case *atollpb.AbortObjectRequest:
		st.abort(ctx, m)
	case *atollpb.GetObjectsRequest:
		st.get(ctx, m)
	case *atollpb.ReleaseObjectsRequest:
		st.release(ctx, m)
	case *atollpb.DeleteObjectsRequest:
		if idList, err := objectIDs(m.ObjectIds); err != nil {
			ctx.Logger().Warn("objectstore: bad delete", slog.Any("err", err))
		} else {
			st.store.Delete(idList, st.now())
		}
	case *atollpb.ClientDisconnected:
		st.disconnect(ctx, m)
	case *atollpb.StoreStatsRequest:
		respond(ctx, ctx.Sender(), st.store.Stats())
	case *wake:
		if m.gen == st.timerGen {
			st.timer, st.timerAt = nil, time.Time{}
		}
		st.expire(ctx)
	case *crashForTest:
		panic("objectstore: crash requested by test")
	case *FailCreates:
		st.failCreates += m.N
	}
	st.flush(ctx)
}

func (st *storeState) create(ctx actor.Context, m *atollpb.CreateObjectRequest) {
	sender := ctx.Sender()
	if sender == nil {
		ctx.Logger().Warn("objectstore: create without sender dropped")
		return
	}
	id, client, err := parseIDs(m.ObjectId, m.ClientId)
	if err == nil && st.failCreates > 0 {
		st.failCreates--
		err = &errs.ObjectStoreFullError{ObjectID: id.String(), Requested: m.Size, Message: "creation failed by fault injection (FailCreates)"}
	}
	if err != nil {
		respond(ctx, sender, &atollpb.CreateObjectReply{Error: errs.ToProto(err)})
		return
	}
	now := st.now()
	timeout := time.Duration(m.TimeoutMs) * time.Millisecond
	switch {
	case m.TimeoutMs == 0:
		timeout = st.cfg.CreateTimeout
	case m.TimeoutMs < 0:
		timeout = 0
	}
	st.nextToken++
	owner, _ := ids.FromBytes(m.OwnerId) // empty: no owner
	req := CreateRequest{ID: id, Size: m.Size, Codec: m.Codec, Client: client, Owner: owner, Deadline: now.Add(timeout), Token: st.nextToken}
	loc, queued, err := st.store.Create(req, now)
	switch {
	case err != nil:
		respond(ctx, sender, &atollpb.CreateObjectReply{Error: errs.ToProto(err)})
	case queued:
		st.replyTo[req.Token] = sender
		st.armTimer(req.Deadline)
	default:
		st.grant(ctx, sender, client, loc)
	}
}

// grant reserves the object's memory and sends its location. If the kernel
// cannot back the range, the creation is aborted and fails with
// ObjectStoreFull.
func (st *storeState) grant(ctx actor.Context, to *actor.PID, client ids.WorkerID, loc Location) {
	if err := st.arena.Reserve(loc.Offset, loc.Length); err != nil {
		_ = st.store.Abort(loc.ID, client, st.now())
		full := &errs.ObjectStoreFullError{ObjectID: loc.ID.String(), Requested: loc.Length, Message: err.Error()}
		respond(ctx, to, &atollpb.CreateObjectReply{Error: errs.ToProto(full)})
		return
	}
	respond(ctx, to, &atollpb.CreateObjectReply{Location: locationProto(loc)})
}

func (st *storeState) seal(ctx actor.Context, m *atollpb.SealObjectRequest) {
	id, client, err := parseIDs(m.ObjectId, m.ClientId)
	if err == nil {
		now := st.now()
		if err = st.store.Seal(id, client, now); err == nil {
			for _, w := range st.gets.sealed(st.store, id, now) {
				st.answerGet(ctx, w.token, w.locations, nil)
			}
		}
	}
	respond(ctx, ctx.Sender(), &atollpb.SealObjectReply{Error: errs.ToProto(err)})
}

func (st *storeState) abort(ctx actor.Context, m *atollpb.AbortObjectRequest) {
	id, client, err := parseIDs(m.ObjectId, m.ClientId)
	if err == nil {
		err = st.store.Abort(id, client, st.now())
	}
	if ctx.Sender() != nil {
		respond(ctx, ctx.Sender(), &atollpb.SealObjectReply{Error: errs.ToProto(err)})
	}
}

func (st *storeState) get(ctx actor.Context, m *atollpb.GetObjectsRequest) {
	sender := ctx.Sender()
	if sender == nil {
		ctx.Logger().Warn("objectstore: get without sender dropped")
		return
	}
	client, err := ids.FromBytes(m.ClientId)
	var idList []ids.ObjectID
	if err == nil {
		idList, err = objectIDs(m.ObjectIds)
	}
	if err != nil {
		respond(ctx, sender, &atollpb.GetObjectsReply{Error: errs.ToProto(errs.Invalidf("get: %v", err))})
		return
	}
	now := st.now()
	res := st.store.Get(idList, client, now)
	if len(res.Missing) == 0 || m.TimeoutMs <= 0 {
		respond(ctx, sender, getReply(res.Locations, nil))
		return
	}
	st.nextToken++
	deadline := now.Add(time.Duration(m.TimeoutMs) * time.Millisecond)
	st.gets.add(st.nextToken, client, idList, res, deadline)
	st.replyTo[st.nextToken] = sender
	st.armTimer(deadline)
}

func (st *storeState) release(ctx actor.Context, m *atollpb.ReleaseObjectsRequest) {
	client, err := ids.FromBytes(m.ClientId)
	var idList []ids.ObjectID
	if err == nil {
		idList, err = objectIDs(m.ObjectIds)
	}
	if err == nil {
		err = st.store.Release(idList, client, st.now())
	}
	if err != nil {
		ctx.Logger().Warn("objectstore: bad release", slog.Any("err", err))
	}
}

func (st *storeState) disconnect(ctx actor.Context, m *atollpb.ClientDisconnected) {
	client, err := ids.FromBytes(m.ClientId)
	if err != nil {
		ctx.Logger().Warn("objectstore: bad disconnect", slog.Any("err", err))
		return
	}
	// The store drops every pin of the client, including those its waiting
	// gets hold, so those gets fail without locations.
	gone := errs.Unavailablef("client %s disconnected", client)
	for _, w := range st.gets.removeClient(client) {
		st.answerGet(ctx, w.token, nil, gone)
	}
	st.store.ClientDisconnected(client, st.now())
}

// expire fails the creations and gets whose deadline passed and re-arms the
// timer for the next deadline.
func (st *storeState) expire(ctx actor.Context) {
	now := st.now()
	st.store.ExpirePending(now)
	for _, w := range st.gets.expire(now) {
		st.answerGet(ctx, w.token, w.locations, &errs.GetTimeoutError{ObjectID: w.firstMissing().String()})
	}
	next, ok := st.store.NextDeadline()
	if d, ok2 := st.gets.nextDeadline(); ok2 && (!ok || d.Before(next)) {
		next, ok = d, true
	}
	if ok {
		st.armTimer(next)
	}
}

// flush carries out the store's deferred effects: it returns freed memory to
// the kernel if configured, then reserves and answers admitted creations.
// Holes are punched before any reservation, so a block freed and reused in
// the same step ends up reserved.
func (st *storeState) flush(ctx actor.Context) {
	for {
		eff := st.store.TakeEffects()
		if len(eff.Completions) == 0 && len(eff.Freed) == 0 {
			return
		}
		if st.cfg.ReleaseFreedMemory {
			for _, r := range eff.Freed {
				if r.Size < releaseThreshold {
					continue
				}
				if err := st.arena.Release(r.Offset, r.Size); err != nil {
					ctx.Logger().Warn("objectstore: release memory", slog.Any("err", err))
				}
			}
		}
		for _, c := range eff.Completions {
			to := st.replyTo[c.Token]
			delete(st.replyTo, c.Token)
			switch {
			case c.Err != nil:
				respond(ctx, to, &atollpb.CreateObjectReply{Error: errs.ToProto(c.Err)})
			case to == nil:
				// Nobody is waiting for this location any more.
				_ = st.store.Abort(c.ID, c.Client, st.now())
			default:
				st.grant(ctx, to, c.Client, c.Location)
			}
		}
	}
}

// armTimer makes sure a wake message arrives by deadline d.
func (st *storeState) armTimer(d time.Time) {
	if st.timer != nil && !d.Before(st.timerAt) {
		return
	}
	if st.timer != nil {
		st.timer.Stop()
	}
	st.timerGen++
	system, self, w := st.system, st.self, &wake{gen: st.timerGen}
	st.timerAt = d
	st.timer = time.AfterFunc(d.Sub(st.now()), func() { system.Root.Send(self, w) })
}

// stop answers every waiting request when the actor stops (for good, or
// because its parent restarts). The objects stay in the state: if the props
// are spawned again, the new actor adopts them.
func (st *storeState) stop(ctx actor.Context) {
	if st.timer != nil {
		st.timer.Stop()
		st.timer, st.timerAt = nil, time.Time{}
	}
	gone := errs.Unavailablef("object store stopped")
	now := st.now()
	for _, w := range st.gets.all() {
		for _, loc := range w.locations {
			if !loc.ID.IsZero() {
				_ = st.store.Release([]ids.ObjectID{loc.ID}, w.client, now)
			}
		}
		st.answerGet(ctx, w.token, nil, gone)
	}
	st.store.failPending(gone)
	st.flush(ctx)
	st.self = nil
}

func (st *storeState) answerGet(ctx actor.Context, token uint64, locs []Location, err error) {
	to := st.replyTo[token]
	delete(st.replyTo, token)
	respond(ctx, to, getReply(locs, err))
}

// FailCreates is a fault-injection message: the store fails its next N
// creations with ObjectStoreFull, as if it were full, without touching
// its state. Send it to the store actor.
type FailCreates struct{ N int }
