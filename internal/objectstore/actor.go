package objectstore

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/actors"
	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/ids"
	"github.com/atoll-runtime/atoll/internal/objectstore/spill"
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
//
// With spilling configured (Config.SpillDirs or Config.SpillTarget) the
// actor spawns a spiller child on start that does the spill file I/O;
// spilled objects are restored for Gets before they are answered.
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
	if cfg.spilling() {
		if st.target = cfg.SpillTarget; st.target == nil {
			if st.target, err = spill.NewLocal(cfg.SpillDirs, spill.LocalOptions{}); err != nil {
				return nil, fmt.Errorf("objectstore: %w", err)
			}
		}
		st.store = NewSpillingStore(cfg.Capacity, SpillPolicy{
			Threshold:  cfg.SpillThreshold,
			BatchBytes: cfg.SpillBatchBytes,
			MaxObjects: cfg.SpillMaxObjects,
		})
	}
	return actor.PropsFromProducer(func() actor.Actor { return &storeActor{st: st} }, actor.WithDispatcher(actors.HotDispatcher)), nil
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

	// target is where spilled objects go (nil: spilling is off) and
	// spiller the child actor doing the I/O, while it runs.
	target  spill.Target
	spiller *actor.PID
	// reapLogged: the files of dead stores NewLocal removed were logged.
	reapLogged bool

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

// inspectForTest runs fn on the actor's goroutine, so tests can check the
// Store's exact state; the actor answers with struct{}{}.
type inspectForTest struct{ fn func(*Store) }

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
		if local, ok := st.target.(*spill.Local); ok && local.Reaped.Files > 0 && !st.reapLogged {
			st.reapLogged = true
			ctx.Logger().Info("objectstore: removed the spill files of stores whose process died",
				slog.Int64("files", local.Reaped.Files), slog.Int64("bytes", local.Reaped.Bytes))
		}
		st.startSpiller(ctx)
		// Resume what a restart or re-spawn interrupted: spills, and
		// deadlines of requests that waited across it.
		st.expire(ctx)
	case *actor.Restarting:
		// The spiller is stopped with this actor; what it had not done is
		// asked for again once the new spiller runs. No effects are
		// carried out until then.
		st.store.abandonIO(true)
		st.spiller = nil
		return
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
		} else if m.Revived {
			st.store.Revive(idList)
		} else if len(m.StrayNode) > 0 {
			st.store.DeleteStrays(idList, st.now())
		} else {
			st.store.Delete(idList, st.now())
		}
	case *atollpb.ClientDisconnected:
		st.disconnect(ctx, m)
	case *atollpb.StoreStatsRequest:
		respond(ctx, ctx.Sender(), st.store.Stats())
	case *atollpb.ListObjectsRequest:
		respond(ctx, ctx.Sender(), st.store.Inventory(st.now(), time.Duration(m.GraceMs)*time.Millisecond, int(min(m.Limit, 1<<20))))
	case *atollpb.DropCopiesRequest:
		st.dropCopies(ctx, m)
	case *wake:
		if m.gen == st.timerGen {
			st.timer, st.timerAt = nil, time.Time{}
		}
		st.expire(ctx)
	case *crashForTest:
		panic("objectstore: crash requested by test")
	case *inspectForTest:
		m.fn(st.store)
		respond(ctx, ctx.Sender(), struct{}{})
	case *FailCreates:
		st.failCreates += m.N
	case *spillWritten:
		st.spillWritten(ctx, m)
	case *restoreReadDone:
		st.restoreReadDone(ctx, m)
	case *diskSpace:
		st.diskSpace(m)
	}
	st.flush(ctx)
}

// expire fails the creations and gets whose deadline passed and re-arms the
// timer for the next deadline.
func (st *storeState) expire(ctx actor.Context) {
	now := st.now()
	st.store.ExpirePending(now)
	for _, w := range st.gets.expire(now) {
		st.answerGet(ctx, w.token, w.locations, &errs.GetTimeoutError{ObjectID: w.firstMissing().String()})
	}
	st.rearm()
}

// rearm arms the timer for the earliest deadline of the store and the
// waiting gets.
func (st *storeState) rearm() {
	next, ok := st.store.NextDeadline()
	if d, ok2 := st.gets.nextDeadline(); ok2 && (!ok || d.Before(next)) {
		next, ok = d, true
	}
	if ok {
		st.armTimer(next)
	}
}

// flush carries out the store's deferred effects: it returns freed memory to
// the kernel if configured, then reserves and answers admitted creations,
// and hands spill work to the spiller (flushSpill). Holes are punched
// before any reservation, so a block freed and reused in the same step
// ends up reserved.
func (st *storeState) flush(ctx actor.Context) {
	for {
		eff := st.store.TakeEffects()
		if len(eff.Completions) == 0 && len(eff.Freed) == 0 && !eff.hasSpillWork() {
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
		st.flushSpill(ctx, eff)
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
	// The spiller stopped first (children stop before their parent):
	// forget the I/O it had not answered.
	st.store.abandonIO(false)
	st.spiller = nil
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
	// A spill target of our own goes with the store: no file outlives it.
	if local, ok := st.target.(*spill.Local); ok && st.cfg.SpillTarget == nil {
		if err := local.Close(); err != nil {
			ctx.Logger().Warn("objectstore: remove spill files", slog.Any("err", err))
		}
	}
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
