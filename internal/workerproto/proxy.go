package workerproto

import (
	"context"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/ids"
	"github.com/atoll-runtime/atoll/internal/objectstore"
	"github.com/atoll-runtime/atoll/internal/raylet"
	"github.com/atoll-runtime/atoll/internal/workerconn"
)

// proxy serves the requests a worker makes on its own behalf: submitting
// tasks, calling actors, the object store (through an
// objectstore.FrameServer), the GCS, fetching objects from other nodes,
// its generator acks, borrow reports, blocking in Get and kills. It is
// shared by pool workers and actor hosts; results of tasks the worker
// submitted come back to the actor that owns the worker (the sender of
// its requests) and go down the connection (forwardDown).
type proxy struct {
	id ids.WorkerID
	// actor is the actor the process hosts (zero for a pool worker).
	actor  ids.ActorID
	node   ids.NodeID
	cfg    *raylet.ProcessConfig
	raylet *actor.PID
}

// handle serves f if it is a request of the worker's own; it reports false
// for frames the owning actor handles itself (task results, ...). It runs
// on the connection's reader goroutine, not in the owning actor's
// mailbox, so that no request waits for that actor. Results of tasks and
// calls the worker makes come back to self, the owning actor, which
// never blocks on its worker (an actor host's constructor runs while the
// host serves: the results of the calls the constructor makes reach it).
func (p *proxy) handle(system *actor.ActorSystem, self *actor.PID, conn *workerconn.Conn, f *atollpb.Frame) bool {
	root := system.Root
	switch b := f.Body.(type) {
	case *atollpb.Frame_SubmitTask:
		root.RequestWithCustomSender(p.raylet, b.SubmitTask, self)
	case *atollpb.Frame_ActorCall:
		node, local := raylet.SplitActorAddress(b.ActorCall.Address)
		if !node.IsZero() && node != p.node {
			root.RequestWithCustomSender(p.raylet, &raylet.ForwardCall{Node: node, Address: local, Spec: b.ActorCall.Spec}, self)
			break
		}
		root.RequestWithCustomSender(system.NewLocalPID(local), &atollpb.PushTask{Spec: b.ActorCall.Spec}, self)
	case *atollpb.Frame_FetchObjects:
		go p.fetch(conn, f.Id, b.FetchObjects)
	case *atollpb.Frame_CancelTask:
		root.Send(p.raylet, b.CancelTask)
	case *atollpb.Frame_GeneratorAck:
		root.Send(p.raylet, b.GeneratorAck) // the worker owns a generator task's stream
	case *atollpb.Frame_BorrowReport:
		// A borrower reports only as itself (its worker, the actor it
		// hosts); the raylet routes it to the owner, here or on another
		// node.
		b.BorrowReport.BorrowerWorkerId, b.BorrowReport.BorrowerActorId = p.id.Bytes(), nil
		if !p.actor.IsZero() {
			b.BorrowReport.BorrowerActorId = p.actor.Bytes()
		}
		root.Send(p.raylet, b.BorrowReport)
	case *atollpb.Frame_WorkerBlocked:
		root.Send(p.raylet, &raylet.WorkerBlocked{Worker: p.id, TaskID: b.WorkerBlocked.GetTaskId(), Blocked: true})
	case *atollpb.Frame_WorkerUnblocked:
		root.Send(p.raylet, &raylet.WorkerBlocked{Worker: p.id, TaskID: b.WorkerUnblocked.GetTaskId()})
	case *atollpb.Frame_KillActor:
		root.Send(p.raylet, b.KillActor)
	case *atollpb.Frame_KillWorker:
		root.Send(p.raylet, b.KillWorker)
	case *atollpb.Frame_GcsRequest:
		go p.gcs(conn, f.Id, b.GcsRequest)
	case *atollpb.Frame_TaskResult:
		return false // the owning actor's (or its submitter's), every task's
	default:
		// The object-store protocol: forwarded in order, with the worker
		// as the client; grants nobody waits for are given back.
		store := objectstore.FrameServer{Root: root, Store: p.cfg.Store, Client: p.id, Delete: p.cfg.Delete, Log: system.Logger()}
		return store.Serve(conn, f)
	}
	return true
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
// it submitted, actor events, borrowers' reports on objects it owns. It reports false for other messages.
func forwardDown(conn *workerconn.Conn, msg any) bool {
	switch m := msg.(type) {
	case *atollpb.TaskResult:
		_ = conn.Send(&atollpb.Frame{Body: &atollpb.Frame_TaskResult{TaskResult: m}})
	case *atollpb.ActorInfo:
		_ = conn.Send(&atollpb.Frame{Body: &atollpb.Frame_ActorEvent{ActorEvent: m}})
	case *atollpb.BorrowReport:
		_ = conn.Send(&atollpb.Frame{Body: &atollpb.Frame_BorrowReport{BorrowReport: m}})
	default:
		return false
	}
	return true
}

// fetch pulls objects held on other nodes into the node's store for the
// worker (cluster mode) and answers with a status. The fetch's context
// ends with the worker's connection: a worker that died wants nothing, and
// the owner of what it asked for may free it meanwhile (a call that fails
// with its actor drops its arguments), so the fetch starts nothing more.
// A transfer under way ends on its own (remote.FinishFunc): other readers
// of the same object may wait on it.
func (p *proxy) fetch(conn *workerconn.Conn, id uint64, req *atollpb.FetchObjects) {
	var err error
	if p.cfg.Fetch != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		go func() {
			select {
			case <-conn.Done():
				cancel()
			case <-ctx.Done():
			}
		}()
		err = p.cfg.Fetch(ctx, req.Refs)
		cancel()
	}
	_ = conn.Reply(id, statusFrame(err))
}
