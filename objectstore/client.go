package objectstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/asynkron/protoactor-go/actor"

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
	deadlineGrace = 100 * time.Millisecond
)

// Object is one object returned by Get.
type Object struct {
	ID    ids.ObjectID
	Codec atollpb.Codec
	// Data is a view into the arena, valid while the pin taken by Get is
	// held (until Release). It must not be written.
	Data []byte
}

// Client is the typed in-process API of the store actor, used by the driver
// and by workers. Every request is made on behalf of one client id, whose
// pins and unsealed creations the store reclaims on Disconnect. A Client is
// safe for concurrent use; it holds no state besides the mapping.
type Client struct {
	root  *actor.RootContext
	pid   *actor.PID
	arena *Arena
	id    ids.WorkerID
	idb   []byte
}

// NewClient returns a client of the store actor pid, reading and writing
// objects through arena (the same memfd the store manages, mapped in this
// process) on behalf of clientID.
func NewClient(root *actor.RootContext, pid *actor.PID, arena *Arena, clientID ids.WorkerID) *Client {
	return &Client{root: root, pid: pid, arena: arena, id: clientID, idb: clientID.Bytes()}
}

// ID returns the client id requests are made for.
func (c *Client) ID() ids.WorkerID { return c.id }

// Create allocates size bytes for a new object and returns a writable view
// of them. The caller fills it and then calls Seal (or Abort); until then
// no one else can read the object. If the store is full, Create waits for
// space until the context's deadline (or the store's CreateTimeout when the
// context has none) and then fails with an error matching
// errs.ErrObjectStoreFull. An id already in use fails with ErrObjectExists.
func (c *Client) Create(ctx context.Context, id ids.ObjectID, size uint64, codec atollpb.Codec) ([]byte, error) {
	return c.CreateOwned(ctx, id, size, codec, ids.WorkerID{})
}

// CreateOwned is Create for an object whose references owner holds: when
// owner disconnects, the object is freed.
func (c *Client) CreateOwned(ctx context.Context, id ids.ObjectID, size uint64, codec atollpb.Codec, owner ids.WorkerID) ([]byte, error) {
	wait, timeoutMS, err := storeBudget(ctx)
	if err != nil {
		return nil, err
	}
	req := &atollpb.CreateObjectRequest{ObjectId: id.Bytes(), Size: size, Codec: codec, ClientId: c.idb, TimeoutMs: timeoutMS}
	if !owner.IsZero() {
		req.OwnerId = owner.Bytes()
	}
	res, err := c.call(ctx, req, wait, nil)
	if err != nil {
		// No answer (cancelled, or the store did not reply in time):
		// withdraw the creation at once, whether it is queued (it would
		// hold up the FIFO) or already granted. The abort is processed
		// after the create: same sender, same mailbox.
		c.root.Send(c.pid, &atollpb.AbortObjectRequest{ObjectId: id.Bytes(), ClientId: c.idb})
		return nil, err
	}
	reply, ok := res.(*atollpb.CreateObjectReply)
	if !ok {
		return nil, unexpected(res)
	}
	if reply.Error != nil {
		return nil, fromProto(reply.Error)
	}
	loc := reply.Location
	return c.arena.Bytes(loc.GetOffset(), loc.GetLength()), nil
}

// Seal makes the object immutable and visible to Get. The view returned by
// Create must not be written afterwards.
func (c *Client) Seal(ctx context.Context, id ids.ObjectID) error {
	return c.errorCall(ctx, &atollpb.SealObjectRequest{ObjectId: id.Bytes(), ClientId: c.idb})
}

// Abort frees an object this client created and has not sealed, or
// withdraws its creation if it still waits for space.
func (c *Client) Abort(ctx context.Context, id ids.ObjectID) error {
	return c.errorCall(ctx, &atollpb.AbortObjectRequest{ObjectId: id.Bytes(), ClientId: c.idb})
}

func (c *Client) errorCall(ctx context.Context, req any) error {
	wait, _, err := storeBudget(ctx)
	if err != nil {
		return err
	}
	res, err := c.call(ctx, req, wait, nil)
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
	if err := c.Seal(ctx, id); err != nil {
		// Best effort: a seal that failed leaves an unsealed object.
		c.root.Send(c.pid, &atollpb.AbortObjectRequest{ObjectId: id.Bytes(), ClientId: c.idb})
		return err
	}
	return nil
}

// Get pins the objects and returns views of them, in the order of idList
// (one pin per entry, duplicates included). Objects not sealed yet are
// awaited up to timeout, shortened to the context's deadline; timeout 0
// (or negative) does not wait. If any object is still missing, Get fails
// with an error matching errs.ErrGetTimeout and holds no pins; on success
// the caller releases every returned object with Release.
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
	req := &atollpb.GetObjectsRequest{ObjectIds: make([][]byte, len(idList)), ClientId: c.idb, TimeoutMs: ceilMS(timeout), Priority: priority}
	for i, id := range idList {
		req.ObjectIds[i] = id.Bytes()
	}
	// Restores are bounded by the store's creation timeout, which the
	// client does not know, and by the disk: without a deadline of its
	// own, wait as long as for a creation.
	res, err := c.call(ctx, req, max(timeout, defaultCallTimeout), func(res any) {
		if reply, ok := res.(*atollpb.GetObjectsReply); ok {
			c.releaseLocations(reply.Locations)
		}
	})
	if errors.Is(err, context.DeadlineExceeded) {
		return nil, &errs.GetTimeoutError{ObjectID: firstID(idList)}
	}
	if err != nil {
		return nil, err
	}
	reply, ok := res.(*atollpb.GetObjectsReply)
	if !ok {
		return nil, unexpected(res)
	}
	if reply.Error == nil && len(reply.Locations) != len(idList) {
		reply.Error = errs.ToProto(fmt.Errorf("objectstore: get of %d ids answered with %d locations", len(idList), len(reply.Locations)))
	}
	if reply.Error == nil {
		for i, loc := range reply.Locations {
			if len(loc.GetObjectId()) == 0 {
				reply.Error = errs.ToProto(&errs.GetTimeoutError{ObjectID: idList[i].String()})
				break
			}
		}
	}
	if reply.Error != nil {
		c.releaseLocations(reply.Locations)
		return nil, fromProto(reply.Error)
	}
	out := make([]Object, len(idList))
	for i, loc := range reply.Locations {
		out[i] = Object{ID: idList[i], Codec: loc.Codec, Data: c.arena.Bytes(loc.Offset, loc.Length)}
	}
	return out, nil
}

func (c *Client) releaseLocations(locs []*atollpb.ObjectLocation) {
	var pinned [][]byte
	for _, loc := range locs {
		if len(loc.GetObjectId()) > 0 {
			pinned = append(pinned, loc.ObjectId)
		}
	}
	if len(pinned) > 0 {
		c.root.Send(c.pid, &atollpb.ReleaseObjectsRequest{ObjectIds: pinned, ClientId: c.idb})
	}
}

// Release drops one pin per id (fire and forget). Views of a released
// object must not be used afterwards.
func (c *Client) Release(idList ...ids.ObjectID) {
	if len(idList) > 0 {
		c.root.Send(c.pid, &atollpb.ReleaseObjectsRequest{ObjectIds: idBytes(idList), ClientId: c.idb})
	}
}

// Delete frees the objects once nothing pins them (fire and forget).
func (c *Client) Delete(idList ...ids.ObjectID) {
	if len(idList) > 0 {
		c.root.Send(c.pid, &atollpb.DeleteObjectsRequest{ObjectIds: idBytes(idList)})
	}
}

// Disconnect tells the store this client is gone: its pins are dropped and
// its unsealed creations aborted. Views it obtained must not be used
// afterwards.
func (c *Client) Disconnect() {
	c.root.Send(c.pid, &atollpb.ClientDisconnected{ClientId: c.idb})
}

// Stats returns the store's counters.
func (c *Client) Stats(ctx context.Context) (*atollpb.StoreStats, error) {
	wait, _, err := storeBudget(ctx)
	if err != nil {
		return nil, err
	}
	res, err := c.call(ctx, &atollpb.StoreStatsRequest{}, wait, nil)
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
// replyGrace. If ctx is cancelled first (or its deadline passes and the
// reply does not follow within deadlineGrace), call returns ctx.Err() and
// hands the reply, when it arrives, to abandon (which may be nil) so that
// whatever it granted is given back.
func (c *Client) call(ctx context.Context, req any, storeWait time.Duration, abandon func(any)) (any, error) {
	fut := c.root.RequestFuture(c.pid, req, storeWait+replyGrace)
	if ctx.Done() == nil {
		return futureResult(fut)
	}
	type result struct {
		v   any
		err error
	}
	done := make(chan result, 1)
	go func() {
		v, err := futureResult(fut)
		done <- result{v, err}
	}()
	select {
	case r := <-done:
		return r.v, r.err
	case <-ctx.Done():
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		// The store was told to answer just before the deadline; its
		// answer (a typed error or a late success) beats a bare
		// DeadlineExceeded, so give it a moment.
		grace := time.NewTimer(deadlineGrace)
		defer grace.Stop()
		select {
		case r := <-done:
			return r.v, r.err
		case <-grace.C:
		}
	}
	if abandon != nil {
		go func() {
			if r := <-done; r.err == nil {
				abandon(r.v)
			}
		}()
	}
	return nil, ctx.Err()
}

func futureResult(fut actor.Future) (any, error) {
	v, err := fut.Result()
	switch {
	case errors.Is(err, actor.ErrTimeout):
		return nil, errs.Unavailablef("object store did not answer in time")
	case errors.Is(err, actor.ErrDeadLetter):
		return nil, errs.Unavailablef("object store is not running")
	case err != nil:
		return nil, errs.Unavailablef("object store: %v", err)
	}
	if _, dead := v.(*actor.DeadLetterResponse); dead {
		return nil, errs.Unavailablef("object store is not running")
	}
	return v, nil
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

func idBytes(idList []ids.ObjectID) [][]byte {
	out := make([][]byte, len(idList))
	for i, id := range idList {
		out[i] = id.Bytes()
	}
	return out
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
