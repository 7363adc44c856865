package objectstore

import (
	"log/slog"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/ids"
)

// The store actor's handlers of the store.proto requests.

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
	req := CreateRequest{ID: id, Size: m.Size, Codec: m.Codec, Client: client, Owner: owner, Copy: m.Copy, Deadline: now.Add(timeout), Token: st.nextToken}
	loc, queued, err := st.store.Create(req, now)
	switch {
	case err != nil:
		respond(ctx, sender, &atollpb.CreateObjectReply{Error: errs.ToProto(err)})
	case queued:
		st.replyTo[req.Token] = sender
		st.armTimer(req.Deadline)
		if st.store.Spilling() {
			st.rearm() // a back-off may end first
		}
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
	before := st.store.ReadsAfterFree()
	res := st.store.Get(idList, client, now)
	if n := st.store.ReadsAfterFree(); n > before {
		ctx.Logger().Warn("objectstore: read after free: a Get asks for an object its owner freed",
			slog.String("client", client.String()), slog.String("first", firstID(idList)), slog.Int("objects", len(idList)),
			slog.Uint64("reads_after_free_total", n))
	}
	// Without a timeout, a Get waits only for spilled objects to come
	// back, and only if that is all it misses.
	if len(res.Missing) == 0 || (m.TimeoutMs <= 0 && len(res.Missing) > len(res.Spilled)) {
		respond(ctx, sender, getReply(res.Locations, nil))
		return
	}
	st.nextToken++
	token := st.nextToken
	var deadline time.Time
	if m.TimeoutMs > 0 {
		deadline = now.Add(time.Duration(m.TimeoutMs) * time.Millisecond)
	}
	st.gets.add(token, client, idList, res, deadline)
	st.replyTo[token] = sender
	if len(res.Spilled) > 0 {
		st.restoreFor(ctx, token, client, idList, res.Spilled, m.Priority, now)
	}
	if !deadline.IsZero() {
		st.armTimer(deadline)
	}
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

// dropCopies drops the copies the Active Memory Manager asked for, if
// they may still go (Store.DropCopies), and answers which went.
func (st *storeState) dropCopies(ctx actor.Context, m *atollpb.DropCopiesRequest) {
	idList, err := objectIDs(m.ObjectIds)
	if err != nil {
		ctx.Logger().Warn("objectstore: bad drop", slog.Any("err", err))
		respond(ctx, ctx.Sender(), &atollpb.DropCopiesReply{Refused: m.ObjectIds})
		return
	}
	dropped, refused := st.store.DropCopies(idList, st.now(), time.Duration(m.GraceMs)*time.Millisecond)
	respond(ctx, ctx.Sender(), &atollpb.DropCopiesReply{Dropped: ids.ObjectIDsBytes(dropped), Refused: ids.ObjectIDsBytes(refused)})
}
