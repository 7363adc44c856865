package raylet

import (
	"context"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"google.golang.org/protobuf/proto"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/ids"
	"github.com/atoll-runtime/atoll/internal/workerconn"
)

// proxy serves the requests a worker process makes on its own behalf:
// submitting tasks, calling actors, the object store, the GCS. It is
// shared by pool workers and actor hosts; results of tasks the worker
// submitted come back to the proxying actor and go down the connection.
type proxy struct {
	id     ids.WorkerID
	node   ids.NodeID
	cfg    *ProcessConfig
	raylet *actor.PID
}

// handle serves f if it is a request of the worker's own; it reports false
// for frames the owning actor handles itself (task results, ...). It runs
// on the connection's reader goroutine, not in the owning actor's
// mailbox: an actor host blocked while its constructor runs must still
// serve the constructor's own requests (a GetActor, a Put). Results of
// tasks and calls the worker makes come back to self, the owning actor.
func (p *proxy) handle(system *actor.ActorSystem, self *actor.PID, conn *workerconn.Conn, f *atollpb.Frame) bool {
	root := system.Root
	switch b := f.Body.(type) {
	case *atollpb.Frame_SubmitTask:
		root.RequestWithCustomSender(p.raylet, b.SubmitTask, self)
	case *atollpb.Frame_ActorCall:
		node, local := SplitActorAddress(b.ActorCall.Address)
		if !node.IsZero() && node != p.node {
			root.RequestWithCustomSender(p.raylet, &ForwardCall{Node: node, Address: local, Spec: b.ActorCall.Spec}, self)
			break
		}
		root.RequestWithCustomSender(system.NewLocalPID(local), &atollpb.PushTask{Spec: b.ActorCall.Spec}, self)
	case *atollpb.Frame_FetchObjects:
		go p.fetch(conn, f.Id, b.FetchObjects)
	case *atollpb.Frame_CancelTask:
		root.Send(p.raylet, b.CancelTask)
	case *atollpb.Frame_WorkerBlocked:
		root.Send(p.raylet, b.WorkerBlocked)
	case *atollpb.Frame_WorkerUnblocked:
		root.Send(p.raylet, b.WorkerUnblocked)
	case *atollpb.Frame_KillActor:
		root.Send(p.raylet, b.KillActor)
	case *atollpb.Frame_KillWorker:
		root.Send(p.raylet, b.KillWorker)
	case *atollpb.Frame_GcsRequest:
		go p.gcs(conn, f.Id, b.GcsRequest)
	case *atollpb.Frame_CreateObject:
		b.CreateObject.ClientId = p.id.Bytes()
		go p.ask(system, conn, f.Id, b.CreateObject, b.CreateObject.TimeoutMs, func(r any) *atollpb.Frame {
			return &atollpb.Frame{Body: &atollpb.Frame_CreateObjectReply{CreateObjectReply: r.(*atollpb.CreateObjectReply)}}
		})
	case *atollpb.Frame_SealObject:
		b.SealObject.ClientId = p.id.Bytes()
		go p.ask(system, conn, f.Id, b.SealObject, 0, func(r any) *atollpb.Frame {
			return &atollpb.Frame{Body: &atollpb.Frame_SealObjectReply{SealObjectReply: r.(*atollpb.SealObjectReply)}}
		})
	case *atollpb.Frame_AbortObject:
		b.AbortObject.ClientId = p.id.Bytes()
		go p.ask(system, conn, f.Id, b.AbortObject, 0, func(r any) *atollpb.Frame {
			return &atollpb.Frame{Body: &atollpb.Frame_SealObjectReply{SealObjectReply: r.(*atollpb.SealObjectReply)}}
		})
	case *atollpb.Frame_GetObjects:
		b.GetObjects.ClientId = p.id.Bytes()
		go p.ask(system, conn, f.Id, b.GetObjects, b.GetObjects.TimeoutMs, func(r any) *atollpb.Frame {
			return &atollpb.Frame{Body: &atollpb.Frame_GetObjectsReply{GetObjectsReply: r.(*atollpb.GetObjectsReply)}}
		})
	case *atollpb.Frame_ReleaseObjects:
		b.ReleaseObjects.ClientId = p.id.Bytes()
		root.Send(p.cfg.Store, b.ReleaseObjects)
	case *atollpb.Frame_DeleteObjects:
		if p.cfg.Delete != nil {
			p.cfg.Delete(b.DeleteObjects)
		} else {
			root.Send(p.cfg.Store, b.DeleteObjects)
		}
	case *atollpb.Frame_StoreStats:
		go p.ask(system, conn, f.Id, b.StoreStats, 0, func(r any) *atollpb.Frame {
			return &atollpb.Frame{Body: &atollpb.Frame_StoreStatsReply{StoreStatsReply: r.(*atollpb.StoreStats)}}
		})
	default:
		return false
	}
	return true
}

// ask forwards a store request and answers the worker with the store's
// reply, or with an UNAVAILABLE status if the store does not answer.
func (p *proxy) ask(system *actor.ActorSystem, conn *workerconn.Conn, id uint64, req proto.Message, storeWaitMS int64, wrap func(any) *atollpb.Frame) {
	timeout := 70 * time.Second // the store's default creation timeout is 10s
	if storeWaitMS > 0 {
		timeout = time.Duration(storeWaitMS)*time.Millisecond + 10*time.Second
	}
	res, err := system.Root.RequestFuture(p.cfg.Store, req, timeout).Result()
	if id == 0 {
		return
	}
	if err != nil {
		_ = conn.Reply(id, statusFrame(errs.Unavailablef("object store did not answer: %v", err)))
		return
	}
	_ = conn.Reply(id, wrap(res))
}

func (p *proxy) gcs(conn *workerconn.Conn, id uint64, req *atollpb.GcsRequest) {
	if p.cfg.GCS == nil {
		_ = conn.Reply(id, statusFrame(errs.Unavailablef("no GCS on this node")))
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	reply, err := p.cfg.GCS(ctx, req)
	if err != nil {
		reply = &atollpb.GcsReply{Error: errs.ToProto(err)}
	}
	_ = conn.Reply(id, &atollpb.Frame{Body: &atollpb.Frame_GcsReply{GcsReply: reply}})
}

func statusFrame(err error) *atollpb.Frame {
	return &atollpb.Frame{Body: &atollpb.Frame_Status{Status: errs.ToProto(err)}}
}

// forwardDown sends the worker what the node tells it: results of tasks
// it submitted, actor events. It reports false for other messages.
func forwardDown(conn *workerconn.Conn, msg any) bool {
	switch m := msg.(type) {
	case *atollpb.TaskResult:
		_ = conn.Send(&atollpb.Frame{Body: &atollpb.Frame_TaskResult{TaskResult: m}})
	case *atollpb.ActorInfo:
		_ = conn.Send(&atollpb.Frame{Body: &atollpb.Frame_ActorEvent{ActorEvent: m}})
	default:
		return false
	}
	return true
}

// fetch pulls objects held on other nodes into the node's store for the
// worker (cluster mode) and answers with a status.
func (p *proxy) fetch(conn *workerconn.Conn, id uint64, req *atollpb.FetchObjects) {
	var err error
	if p.cfg.Fetch != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		err = p.cfg.Fetch(ctx, req.Refs)
		cancel()
	}
	_ = conn.Reply(id, statusFrame(err))
}
