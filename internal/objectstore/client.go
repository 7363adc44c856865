package objectstore

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"google.golang.org/protobuf/proto"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/ids"
)

const (
	// replyGrace is how much longer than the store-side timeout a client
	// waits for the reply, so that the store always answers first.
	replyGrace = 2 * time.Second
	// defaultCallTimeout bounds calls whose context has no deadline and
	// whose store-side wait is not known to the client (a creation using
	// the store's default timeout, seal, abort, stats). It only matters if
	// the store loses a request, e.g. while its actor restarts.
	defaultCallTimeout = time.Minute
	// deadlineGrace is how long past a context's deadline a call still
	// waits for the store's answer, which is due just before the deadline.
	// It only runs out when the store is late: 100 ms did on a loaded
	// machine (the store's timer and reply delayed), and the caller got
	// the deadline's error where the store had answered "full".
	deadlineGrace = time.Second
)

// Object is one object returned by Get.
type Object struct {
	ID    ids.ObjectID
	Codec atollpb.Codec
	// Data is a view into the arena, valid while the pin taken by Get is
	// held (until Release). It must not be written.
	Data []byte
}

// Client is the typed API of the store actor, used by the driver, by the
// node's components and by worker processes. Every request is made on
// behalf of one client id, whose pins and unsealed creations the store
// reclaims when the client disconnects. A Client is safe for concurrent
// use; it holds no state besides its transport and its mapping of the
// arena.
//
// The client logic lives here once, over a Transport: the actor mailbox
// inside the node process (NewClient), workerconn frames in a worker
// process (NewFrameTransport). It builds the requests, turns replies into
// views of the caller's own mapping of the arena and typed errors, and
// gives back what the store grants a caller that gave up (see call).
type Client struct {
	t     Transport
	arena *Arena
	id    ids.WorkerID
	idb   []byte
}

// NewClient returns a client of the store actor pid, reading and writing
// objects through arena (the same memfd the store manages, mapped in this
// process) on behalf of clientID.
func NewClient(root *actor.RootContext, pid *actor.PID, arena *Arena, clientID ids.WorkerID) *Client {
	return NewTransportClient(NewMailbox(root, pid), arena, clientID)
}

// NewTransportClient returns a client of the store reached through t,
// reading and writing objects through arena (this process's mapping of
// the store's memfd) on behalf of clientID.
func NewTransportClient(t Transport, arena *Arena, clientID ids.WorkerID) *Client {
	return &Client{t: t, arena: arena, id: clientID, idb: clientID.Bytes()}
}

// ID returns the client id requests are made for.
func (c *Client) ID() ids.WorkerID { return c.id }

// Create allocates size bytes for a new object and returns a writable view
// of them. The caller fills it and then calls Seal (or Abort); until then
// no one else can read the object. If the store is full, Create waits for
// space until the context's deadline (or the store's CreateTimeout when the
// context has none) and then fails with an error matching
// errs.ErrObjectStoreFull. An id already in use fails with ErrObjectExists.
// If the context ends first, the creation is withdrawn (queued or already
// granted) and Create returns the context's error.
func (c *Client) Create(ctx context.Context, id ids.ObjectID, size uint64, codec atollpb.Codec) ([]byte, error) {
	return c.CreateOwned(ctx, id, size, codec, ids.WorkerID{})
}

// CreateOwned is Create for an object whose references owner holds: when
// owner disconnects, the object is freed.
func (c *Client) CreateOwned(ctx context.Context, id ids.ObjectID, size uint64, codec atollpb.Codec, owner ids.WorkerID) ([]byte, error) {
	return c.create(ctx, id, size, codec, owner, false)
}

// CreateCopy is CreateOwned for a copy of an object another node holds
// (a pull): the Active Memory Manager may drop it later.
func (c *Client) CreateCopy(ctx context.Context, id ids.ObjectID, size uint64, codec atollpb.Codec, owner ids.WorkerID) ([]byte, error) {
	return c.create(ctx, id, size, codec, owner, true)
}

func (c *Client) create(ctx context.Context, id ids.ObjectID, size uint64, codec atollpb.Codec, owner ids.WorkerID, isCopy bool) ([]byte, error) {
	wait, timeoutMS, err := storeBudget(ctx)
	if err != nil {
		return nil, err
	}
	req := &atollpb.CreateObjectRequest{ObjectId: id.Bytes(), Size: size, Codec: codec, ClientId: c.idb, TimeoutMs: timeoutMS, Copy: isCopy}
	if !owner.IsZero() {
		req.OwnerId = owner.Bytes()
	}
	res, err := c.call(ctx, req, wait)
	if err != nil {
		return nil, err
	}
	reply, ok := res.(*atollpb.CreateObjectReply)
	if !ok {
		c.giveBack(res)
		withdraw(c.t, req)
		return nil, unexpected(res)
	}
	if reply.Error != nil {
		return nil, fromProto(reply.Error)
	}
	buf, err := c.view(reply.Location, id)
	if err == nil && uint64(len(buf)) != size {
		err = errs.Unavailablef("objectstore: creation of %d bytes granted %d", size, len(buf))
	}
	if err != nil {
		withdraw(c.t, req)
		return nil, err
	}
	return buf, nil
}

// Seal makes the object immutable and visible to Get. The view returned by
// Create must not be written afterwards.
//
// Seal goes ahead even if ctx is done: the store answers it at once, and
// an object whose bytes are written is better finished than left unsealed
// (only its creator could ever abort it). If the store does not answer,
// Seal aborts the object and fails.
func (c *Client) Seal(ctx context.Context, id ids.ObjectID) error {
	req := &atollpb.SealObjectRequest{ObjectId: id.Bytes(), ClientId: c.idb}
	err := c.errorCall(context.WithoutCancel(ctx), req)
	if errors.Is(err, errs.ErrUnavailable) {
		withdraw(c.t, &atollpb.AbortObjectRequest{ObjectId: id.Bytes(), ClientId: c.idb})
	}
	return err
}

// Abort frees an object this client created and has not sealed, or
// withdraws its creation if it still waits for space. If ctx is already
// done the abort is sent without waiting for the store's answer (it is
// applied all the same) and Abort returns nil.
func (c *Client) Abort(ctx context.Context, id ids.ObjectID) error {
	req := &atollpb.AbortObjectRequest{ObjectId: id.Bytes(), ClientId: c.idb}
	if ctx.Err() != nil {
		withdraw(c.t, req)
		return nil
	}
	return c.errorCall(ctx, req)
}

func (c *Client) errorCall(ctx context.Context, req proto.Message) error {
	wait, _, err := storeBudget(ctx)
	if err != nil {
		return err
	}
	res, err := c.call(ctx, req, wait)
	if err != nil {
		return err
	}
	reply, ok := res.(*atollpb.SealObjectReply)
	if !ok {
		return unexpected(res)
	}
	return fromProto(reply.Error)
}

// Put creates the object, copies data into it and seals it.
func (c *Client) Put(ctx context.Context, id ids.ObjectID, codec atollpb.Codec, data []byte) error {
	return c.PutOwned(ctx, id, codec, data, ids.WorkerID{})
}

// PutOwned is Put for an object owned by owner (see CreateOwned).
func (c *Client) PutOwned(ctx context.Context, id ids.ObjectID, codec atollpb.Codec, data []byte, owner ids.WorkerID) error {
	buf, err := c.CreateOwned(ctx, id, uint64(len(data)), codec, owner)
	if err != nil {
		return err
	}
	copy(buf, data)
	return c.Seal(ctx, id) // aborts the object if it fails
}

// Get pins the objects and returns views of them, in the order of idList
// (one pin per entry, duplicates included). Objects not sealed yet are
// awaited up to timeout, shortened to the context's deadline; timeout 0
// (or negative) does not wait. If any object is still missing, Get fails
// with an error matching errs.ErrGetTimeout and holds no pins; on success
// the caller releases every returned object with Release. If the context
// ends first, Get fails with its error (a deadline as ErrGetTimeout) and
// the pins the store grants later are released.
//
// Objects spilled to disk are restored first, whatever the timeout, at the
// priority of a task argument (PriorityTaskArgument; see GetWithPriority).
// A restore that gets no space within the store's CreateTimeout fails the
// Get with ObjectStoreFull; one whose read fails, with an error matching
// ErrRestoreFailed (and errs.ErrObjectLost).
func (c *Client) Get(ctx context.Context, idList []ids.ObjectID, timeout time.Duration) ([]Object, error) {
	return c.GetWithPriority(ctx, idList, timeout, PriorityTaskArgument)
}

// GetWithPriority is Get whose restores of spilled objects are served at
// priority: PriorityGet for a caller blocked on the objects, PriorityWait
// for a Wait, PriorityTaskArgument for a task's arguments. Higher
// priorities get memory and disk first.
func (c *Client) GetWithPriority(ctx context.Context, idList []ids.ObjectID, timeout time.Duration, priority int32) ([]Object, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	timeout = max(timeout, 0)
	if d, ok := ctx.Deadline(); ok {
		if until := time.Until(d); until < timeout {
			timeout = max(until-until/20, time.Millisecond)
		}
	}
	req := &atollpb.GetObjectsRequest{ObjectIds: ids.ObjectIDsBytes(idList), ClientId: c.idb, TimeoutMs: ceilMS(timeout), Priority: priority}
	// Restores are bounded by the store's creation timeout, which the
	// client does not know, and by the disk: without a deadline of its
	// own, wait as long as for a creation.
	res, err := c.call(ctx, req, max(timeout, defaultCallTimeout))
	if errors.Is(err, context.DeadlineExceeded) {
		return nil, &errs.GetTimeoutError{ObjectID: firstID(idList)}
	}
	if err != nil {
		return nil, err
	}
	reply, ok := res.(*atollpb.GetObjectsReply)
	if !ok {
		c.giveBack(res)
		return nil, unexpected(res)
	}
	if reply.Error == nil && len(reply.Locations) != len(idList) {
		reply.Error = errs.ToProto(errs.Unavailablef("objectstore: get of %d ids answered with %d locations", len(idList), len(reply.Locations)))
	}
	out := make([]Object, len(idList))
	for i, loc := range reply.Locations {
		if reply.Error != nil {
			break
		}
		if len(loc.GetObjectId()) == 0 {
			reply.Error = errs.ToProto(&errs.GetTimeoutError{ObjectID: idList[i].String()})
			break
		}
		data, err := c.view(loc, idList[i])
		if err != nil {
			reply.Error = errs.ToProto(err)
			break
		}
		out[i] = Object{ID: idList[i], Codec: loc.Codec, Data: data}
	}
	if reply.Error != nil {
		c.giveBack(reply)
		return nil, fromProto(reply.Error)
	}
	return out, nil
}

// view returns the bytes of a location the store sent, after checking that
// it names id and lies inside the arena.
func (c *Client) view(loc *atollpb.ObjectLocation, id ids.ObjectID) ([]byte, error) {
	got, err := ids.ObjectIDFromBytes(loc.GetObjectId())
	switch {
	case err != nil || got != id:
		return nil, errs.Unavailablef("objectstore: location of object %x for %s", loc.GetObjectId(), id)
	case loc.Offset > c.arena.Size() || loc.Length > c.arena.Size()-loc.Offset:
		return nil, errs.Unavailablef("objectstore: location [%d, +%d) of %s outside the arena of %d bytes", loc.Offset, loc.Length, id, c.arena.Size())
	}
	return c.arena.Bytes(loc.Offset, loc.Length), nil
}

// PrefaultView maps a created object's pages into this process's page
// tables before it is written (Arena.PrefaultView): for a large object
// written at once, such as a pull's. It is an optimization: a failure
// leaves the pages to fault in as they are written.
func (c *Client) PrefaultView(buf []byte) { _ = c.arena.PrefaultView(buf) }

// Release drops one pin per id (fire and forget). Views of a released
// object must not be used afterwards.
func (c *Client) Release(idList ...ids.ObjectID) {
	if len(idList) > 0 {
		_ = c.t.Send(&atollpb.ReleaseObjectsRequest{ObjectIds: ids.ObjectIDsBytes(idList), ClientId: c.idb})
	}
}

// Delete frees the objects once nothing pins them (fire and forget).
func (c *Client) Delete(idList ...ids.ObjectID) {
	if len(idList) > 0 {
		_ = c.t.Send(&atollpb.DeleteObjectsRequest{ObjectIds: ids.ObjectIDsBytes(idList)})
	}
}

// DeleteStrays asks for the copies on node of objects that live on
// elsewhere to be deleted (fire and forget): copies a late attempt stored
// there after their owner moved on. The store deletes its own; a cluster
// node's raylet passes the request to its gateway, which tells node.
func (c *Client) DeleteStrays(node ids.NodeID, idList ...ids.ObjectID) {
	if len(idList) > 0 {
		_ = c.t.Send(&atollpb.DeleteObjectsRequest{ObjectIds: ids.ObjectIDsBytes(idList), StrayNode: node.Bytes()})
	}
}

// Revive tells the store that objects it was told to delete are being
// rebuilt by their owner (fire and forget): a Get of them is no longer a
// read after free.
func (c *Client) Revive(idList ...ids.ObjectID) {
	if len(idList) > 0 {
		_ = c.t.Send(&atollpb.DeleteObjectsRequest{ObjectIds: ids.ObjectIDsBytes(idList), Revived: true})
	}
}

// Disconnect tells the store this client is gone: its pins are dropped and
// its unsealed creations aborted. Views it obtained must not be used
// afterwards. (A worker process does not disconnect itself: its raylet
// does it when the process ends.)
func (c *Client) Disconnect() {
	_ = c.t.Send(&atollpb.ClientDisconnected{ClientId: c.idb})
}

// Stats returns the store's counters.
func (c *Client) Stats(ctx context.Context) (*atollpb.StoreStats, error) {
	wait, _, err := storeBudget(ctx)
	if err != nil {
		return nil, err
	}
	res, err := c.call(ctx, &atollpb.StoreStatsRequest{}, wait)
	if err != nil {
		return nil, err
	}
	stats, ok := res.(*atollpb.StoreStats)
	if !ok {
		return nil, unexpected(res)
	}
	return stats, nil
}

// call sends req and waits for the reply, at most storeWait plus
// replyGrace. If ctx is cancelled first, or its deadline passes and the
// reply does not follow within deadlineGrace (the store was told to answer
// just before the deadline, and its answer beats a bare
// DeadlineExceeded), call returns ctx.Err().
//
// Whenever call returns without the reply (ctx, timeout, transport
// failure), the caller has given up on req, and what the store grants for
// it must be given back — in one place, here:
//   - a creation is withdrawn at once by an abort, which the transport
//     delivers after the create: it drops the creation from the store's
//     queue (where it would hold up the FIFO) or frees the block if it was
//     granted meanwhile. A late reply then needs nothing more (and an
//     abort sent later could hit a new creation of the same id).
//   - a Get's reply, when it comes, has its pins released (giveBack).
func (c *Client) call(ctx context.Context, req proto.Message, storeWait time.Duration) (proto.Message, error) {
	callCtx, stop := withDeadlineGrace(ctx)
	defer stop()
	res, err := c.t.Request(callCtx, req, storeWait+replyGrace, c.giveBack)
	if err != nil {
		withdraw(c.t, req)
		if callCtx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, err
	}
	return res, nil
}

// giveBack returns what a reply nobody uses granted this client.
func (c *Client) giveBack(reply proto.Message) { giveBack(c.t, reply, c.idb) }

// giveBack releases the pins a Get's reply took for client. A granted
// creation needs nothing: withdraw aborted it when its caller gave up.
func giveBack(t Transport, reply proto.Message, client []byte) {
	r, ok := reply.(*atollpb.GetObjectsReply)
	if !ok {
		return
	}
	var pinned [][]byte
	for _, loc := range r.Locations {
		if len(loc.GetObjectId()) > 0 {
			pinned = append(pinned, loc.ObjectId)
		}
	}
	if len(pinned) > 0 {
		_ = t.Send(&atollpb.ReleaseObjectsRequest{ObjectIds: pinned, ClientId: client})
	}
}

// withdraw aborts a creation whose caller gave up; other requests grant
// nothing until answered.
func withdraw(t Transport, req proto.Message) {
	switch r := req.(type) {
	case *atollpb.CreateObjectRequest:
		_ = t.Send(&atollpb.AbortObjectRequest{ObjectId: r.ObjectId, ClientId: r.ClientId})
	case *atollpb.AbortObjectRequest:
		_ = t.Send(r)
	}
}

// withDeadlineGrace returns a context that ends when ctx is cancelled, or
// deadlineGrace after ctx's deadline.
func withDeadlineGrace(ctx context.Context) (context.Context, context.CancelFunc) {
	d, ok := ctx.Deadline()
	if !ok {
		return ctx, func() {}
	}
	gctx, cancel := context.WithDeadline(context.WithoutCancel(ctx), d.Add(deadlineGrace))
	stop := context.AfterFunc(ctx, func() {
		if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
			cancel()
		}
	})
	return gctx, func() {
		stop()
		cancel()
	}
}

// storeBudget maps the context's deadline into the store-side timeout of a
// request: slightly shorter than the time left, so the store answers before
// the context expires. Without a deadline the store's default applies
// (timeout_ms 0) and the client waits defaultCallTimeout.
func storeBudget(ctx context.Context) (wait time.Duration, timeoutMS int64, err error) {
	if err := ctx.Err(); err != nil {
		return 0, 0, err
	}
	d, ok := ctx.Deadline()
	if !ok {
		return defaultCallTimeout, 0, nil
	}
	left := time.Until(d)
	if left <= 0 {
		return 0, 0, context.DeadlineExceeded
	}
	wait = max(left-left/20, time.Millisecond)
	return wait, ceilMS(wait), nil
}

func ceilMS(d time.Duration) int64 {
	return int64((d + time.Millisecond - 1) / time.Millisecond)
}

// fromProto turns a wire error into its typed form, restoring
// ErrObjectExists (which travels as INVALID_ARGUMENT) and ErrRestoreFailed
// (OBJECT_LOST).
func fromProto(info *atollpb.ErrorInfo) error {
	err := errs.FromProto(info)
	switch {
	case info == nil:
	case info.Code == atollpb.ErrorCode_INVALID_ARGUMENT && strings.Contains(info.Message, "object exists"):
		return existsError{err}
	case info.Code == atollpb.ErrorCode_OBJECT_LOST && strings.Contains(info.Message, restoreFailedText):
		return restoreError{err}
	}
	return err
}

func unexpected(v any) error {
	return errs.Unavailablef("object store: unexpected reply %T", v)
}

func firstID(idList []ids.ObjectID) string {
	if len(idList) == 0 {
		return ""
	}
	return idList[0].String()
}

// ErrorFromProto converts a store reply's error to its typed form, as the
// Client does (ErrObjectExists and ErrRestoreFailed included), for clients
// that reach the store through another transport.
func ErrorFromProto(info *atollpb.ErrorInfo) error { return fromProto(info) }
