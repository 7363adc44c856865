package objectstore

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"google.golang.org/protobuf/proto"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/ids"
	"github.com/atoll-runtime/atoll/internal/workerconn"
)

// The object-store protocol between a worker process and its raylet: the
// worker's Client sends store requests as workerconn frames
// (FrameTransport); the raylet's FrameServer forwards them to the store
// actor with the worker as the client and answers with the store's reply.

// FrameTransport is the Transport of a worker process: store requests are
// frames to its raylet, which serves them with a FrameServer. A reply that
// arrives after the caller gave up is kept for the caller's late handler
// (workerconn.Conn.CallLate).
type FrameTransport struct {
	conn *workerconn.Conn
}

var _ Transport = (*FrameTransport)(nil)

// NewFrameTransport returns the transport over a worker's connection to
// its raylet.
func NewFrameTransport(conn *workerconn.Conn) *FrameTransport {
	return &FrameTransport{conn: conn}
}

// Request implements Transport.
func (t *FrameTransport) Request(ctx context.Context, req proto.Message, timeout time.Duration, late func(proto.Message)) (proto.Message, error) {
	f := requestFrame(req)
	if f == nil {
		return nil, errs.Invalidf("objectstore: %T does not travel to the store from a worker", req)
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var onLate workerconn.Late
	if late != nil {
		onLate = func(r *atollpb.Frame) {
			// On the connection's reader: give back on a goroutine, which
			// may write frames.
			if m, err := replyOf(r); err == nil {
				go late(m)
			}
		}
	}
	r, err := t.conn.CallLate(cctx, f, onLate)
	switch {
	case err == nil:
		return replyOf(r)
	case ctx.Err() != nil:
		return nil, ctx.Err()
	case cctx.Err() != nil:
		return nil, errs.Unavailablef("object store did not answer within %v", timeout)
	default:
		return nil, errs.Unavailablef("raylet connection: %v", err)
	}
}

// Send implements Transport.
func (t *FrameTransport) Send(msg proto.Message) error {
	f := requestFrame(msg)
	if f == nil {
		return errs.Invalidf("objectstore: %T does not travel to the store from a worker", msg)
	}
	return t.conn.Send(f)
}

// requestFrame wraps a store request, or returns nil for a message the
// worker protocol does not carry (ClientDisconnected: the raylet says it).
func requestFrame(m proto.Message) *atollpb.Frame {
	switch r := m.(type) {
	case *atollpb.CreateObjectRequest:
		return &atollpb.Frame{Body: &atollpb.Frame_CreateObject{CreateObject: r}}
	case *atollpb.SealObjectRequest:
		return &atollpb.Frame{Body: &atollpb.Frame_SealObject{SealObject: r}}
	case *atollpb.AbortObjectRequest:
		return &atollpb.Frame{Body: &atollpb.Frame_AbortObject{AbortObject: r}}
	case *atollpb.GetObjectsRequest:
		return &atollpb.Frame{Body: &atollpb.Frame_GetObjects{GetObjects: r}}
	case *atollpb.ReleaseObjectsRequest:
		return &atollpb.Frame{Body: &atollpb.Frame_ReleaseObjects{ReleaseObjects: r}}
	case *atollpb.DeleteObjectsRequest:
		return &atollpb.Frame{Body: &atollpb.Frame_DeleteObjects{DeleteObjects: r}}
	case *atollpb.StoreStatsRequest:
		return &atollpb.Frame{Body: &atollpb.Frame_StoreStats{StoreStats: r}}
	}
	return nil
}

// replyFrame wraps a store reply, or returns nil for anything else.
func replyFrame(m proto.Message) *atollpb.Frame {
	switch r := m.(type) {
	case *atollpb.CreateObjectReply:
		return &atollpb.Frame{Body: &atollpb.Frame_CreateObjectReply{CreateObjectReply: r}}
	case *atollpb.SealObjectReply:
		return &atollpb.Frame{Body: &atollpb.Frame_SealObjectReply{SealObjectReply: r}}
	case *atollpb.GetObjectsReply:
		return &atollpb.Frame{Body: &atollpb.Frame_GetObjectsReply{GetObjectsReply: r}}
	case *atollpb.StoreStats:
		return &atollpb.Frame{Body: &atollpb.Frame_StoreStatsReply{StoreStatsReply: r}}
	}
	return nil
}

// replyOf unwraps a reply frame: a store reply, or the raylet's status
// (an error: it could not ask the store).
func replyOf(f *atollpb.Frame) (proto.Message, error) {
	switch b := f.Body.(type) {
	case *atollpb.Frame_CreateObjectReply:
		return nonNil(b.CreateObjectReply, f)
	case *atollpb.Frame_SealObjectReply:
		return nonNil(b.SealObjectReply, f)
	case *atollpb.Frame_GetObjectsReply:
		return nonNil(b.GetObjectsReply, f)
	case *atollpb.Frame_StoreStatsReply:
		return nonNil(b.StoreStatsReply, f)
	case *atollpb.Frame_Status:
		if b.Status.GetCode() != atollpb.ErrorCode_ERROR_CODE_UNSPECIFIED {
			return nil, errs.FromProto(b.Status)
		}
	}
	return nil, errs.Unavailablef("object store: unexpected reply frame %T", f.Body)
}

func nonNil[M interface {
	proto.Message
	comparable
}](m M, f *atollpb.Frame) (proto.Message, error) {
	var zero M
	if m == zero {
		return nil, errs.Unavailablef("object store: empty reply frame %T", f.Body)
	}
	return m, nil
}

// maxServerWait bounds how long a FrameServer waits for one store reply,
// whatever timeout the worker asked for.
const maxServerWait = time.Hour

// FrameServer serves the object-store frames of one worker process on the
// raylet side: each request goes to the store actor with Client (the
// worker) as the client, whatever client id the frame carried (a worker
// can only pin as itself), in the order the frames arrive, and the store's
// reply goes back down the connection.
//
// The server waits for a reply as long as the worker's client does (the
// timeout the worker asked for, plus the same margins), so the worker's
// deadline is the one that counts: if the worker gave up meanwhile, its
// client gives back what the forwarded reply grants. If the server gives
// up first (the store did not answer in that time), it gives back itself
// what a later reply grants, as the worker (an abort at once for a
// creation, a release for a Get's pins). If the connection ends, it gives
// back nothing: the raylet tells the store the worker is gone
// (ClientDisconnected), which reclaims everything the worker held.
type FrameServer struct {
	Root   *actor.RootContext
	Store  *actor.PID
	Client ids.WorkerID
	// Delete, if set, replaces sending a worker's DeleteObjects to the
	// store (in a cluster, the copies on other nodes go too).
	Delete func(*atollpb.DeleteObjectsRequest)
	// Log receives bad requests; default slog.Default().
	Log *slog.Logger

	// waitCap, if set, shortens every wait (tests of the server giving up).
	waitCap time.Duration
}

// Serve handles f if it is an object-store request and reports whether it
// was one. It runs on the connection's reader goroutine and never blocks:
// the request is sent to the store at once and a goroutine waits for the
// reply.
func (s *FrameServer) Serve(conn *workerconn.Conn, f *atollpb.Frame) bool {
	client := s.Client.Bytes()
	switch b := f.Body.(type) {
	case *atollpb.Frame_CreateObject:
		b.CreateObject.ClientId = client
		s.ask(conn, f.Id, b.CreateObject, requestWait(b.CreateObject.TimeoutMs, 0))
	case *atollpb.Frame_GetObjects:
		b.GetObjects.ClientId = client
		s.ask(conn, f.Id, b.GetObjects, requestWait(b.GetObjects.TimeoutMs, defaultCallTimeout))
	case *atollpb.Frame_SealObject:
		b.SealObject.ClientId = client
		s.ask(conn, f.Id, b.SealObject, requestWait(0, 0))
	case *atollpb.Frame_AbortObject:
		b.AbortObject.ClientId = client
		s.ask(conn, f.Id, b.AbortObject, requestWait(0, 0))
	case *atollpb.Frame_StoreStats:
		s.ask(conn, f.Id, b.StoreStats, requestWait(0, 0))
	case *atollpb.Frame_ReleaseObjects:
		b.ReleaseObjects.ClientId = client
		s.Root.Send(s.Store, b.ReleaseObjects)
	case *atollpb.Frame_DeleteObjects:
		if s.Delete != nil {
			s.Delete(b.DeleteObjects)
		} else {
			s.Root.Send(s.Store, b.DeleteObjects)
		}
	default:
		return false
	}
	return true
}

// requestWait is how long the store may take to answer a request that
// waits up to timeoutMS (0: the store's default), at least floor, plus the
// margin the Client allows.
func requestWait(timeoutMS int64, floor time.Duration) time.Duration {
	wait := defaultCallTimeout
	if timeoutMS > 0 {
		wait = time.Duration(min(timeoutMS, int64(maxServerWait/time.Millisecond))) * time.Millisecond
	}
	return max(wait, floor) + replyGrace
}

func (s *FrameServer) ask(conn *workerconn.Conn, id uint64, req proto.Message, wait time.Duration) {
	if id == 0 {
		switch req.(type) {
		case *atollpb.CreateObjectRequest, *atollpb.GetObjectsRequest, *atollpb.StoreStatsRequest:
			// Nobody would learn what the store grants.
			s.log().Warn("objectstore: worker store request without an id dropped", slog.String("worker", s.Client.Short()), slog.String("request", fmt.Sprintf("%T", req)))
		default:
			s.Root.Send(s.Store, req) // a seal or an abort nobody waits for
		}
		return
	}
	if s.waitCap > 0 {
		wait = min(wait, s.waitCap)
	}
	mc := NewMailbox(s.Root, s.Store).start(req, wait)
	go s.answer(conn, id, req, mc, wait)
}

func (s *FrameServer) answer(conn *workerconn.Conn, id uint64, req proto.Message, mc *mailboxCall, wait time.Duration) {
	store := NewMailbox(s.Root, s.Store)
	gone := errs.Unavailablef("worker %s disconnected", s.Client.Short())
	res, err := mc.wait(conn.Done(), func() error { return gone }, wait, func(reply proto.Message) {
		// Not once the worker is gone: ClientDisconnected gave everything
		// back, and a second release would be a misuse.
		if conn.Err() == nil {
			giveBack(store, reply, s.Client.Bytes())
		}
	})
	if err == gone { // nobody to answer
		return
	}
	var out *atollpb.Frame
	if err == nil {
		if out = replyFrame(res); out == nil {
			giveBack(store, res, s.Client.Bytes())
			err = unexpected(res)
		}
	} else {
		// No answer in time: withdraw a creation now, before the worker
		// learns it failed (and may create the id again).
		withdraw(store, req)
	}
	if err != nil {
		out = &atollpb.Frame{Body: &atollpb.Frame_Status{Status: errs.ToProto(err)}}
	}
	_ = conn.Reply(id, out) // fails only if the worker is gone: see above
}

func (s *FrameServer) log() *slog.Logger {
	if s.Log != nil {
		return s.Log
	}
	return slog.Default()
}
