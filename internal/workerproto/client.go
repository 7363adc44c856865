package workerproto

import (
	"context"
	"time"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/ids"
	"github.com/atoll-runtime/atoll/internal/workerconn"
)

// Client sends a worker's own requests to its raylet, where the proxy
// (proxy.go) serves them: the tasks and actor calls it submits (their
// results come back to Server's Deliver), cancellations, its blocking in
// Get, generator items and acks, borrow reports, kills, object fetches
// and GCS requests. The object store has a client of its own over the
// same connection (objectstore.NewFrameTransport).
type Client struct{ conn *workerconn.Conn }

func (c Client) send(f *atollpb.Frame) error { return c.conn.Send(f) }

// Hello registers the worker: its first frame.
func (c Client) Hello(id ids.WorkerID, pid int) error {
	return c.send(&atollpb.Frame{Body: &atollpb.Frame_Hello{Hello: &atollpb.WorkerHello{WorkerId: id.Bytes(), Pid: int32(pid)}}})
}

// SubmitTask submits a task the worker owns.
func (c Client) SubmitTask(spec *atollpb.TaskSpec) {
	_ = c.send(&atollpb.Frame{Body: &atollpb.Frame_SubmitTask{SubmitTask: &atollpb.SubmitTask{Spec: spec}}})
}

// CancelTask cancels a task the worker owns.
func (c Client) CancelTask(id ids.TaskID, nonRecursive bool) {
	_ = c.send(&atollpb.Frame{Body: &atollpb.Frame_CancelTask{CancelTask: &atollpb.CancelTask{TaskId: id.Bytes(), NonRecursive: nonRecursive}}})
}

// SetBlocked tells the raylet the task id running here waits in Get (its
// CPU is lent), or no longer does.
func (c Client) SetBlocked(id ids.TaskID, blocked bool) {
	if blocked {
		// What the task waits for comes through the reader: if it runs
		// this task (inline), another must read.
		c.conn.Handoff()
		_ = c.send(&atollpb.Frame{Body: &atollpb.Frame_WorkerBlocked{WorkerBlocked: &atollpb.WorkerBlocked{TaskId: id.Bytes()}}})
	} else {
		_ = c.send(&atollpb.Frame{Body: &atollpb.Frame_WorkerUnblocked{WorkerUnblocked: &atollpb.WorkerUnblocked{TaskId: id.Bytes()}}})
	}
}

// CallActor sends an actor call to the host at address.
func (c Client) CallActor(address string, spec *atollpb.TaskSpec) {
	_ = c.send(&atollpb.Frame{Body: &atollpb.Frame_ActorCall{ActorCall: &atollpb.ActorCall{Address: address, Spec: spec}}})
}

// SendBorrows sends a borrower's standalone report; the raylet routes it
// to the owner.
func (c Client) SendBorrows(m *atollpb.BorrowReport) {
	_ = c.send(&atollpb.Frame{Body: &atollpb.Frame_BorrowReport{BorrowReport: m}})
}

// KillActor and KillWorker ask the raylet to kill.
func (c Client) KillActor(m *atollpb.KillActor) {
	_ = c.send(&atollpb.Frame{Body: &atollpb.Frame_KillActor{KillActor: m}})
}

// KillWorker asks the raylet to kill a worker (by task or id).
func (c Client) KillWorker(m *atollpb.KillWorker) {
	_ = c.send(&atollpb.Frame{Body: &atollpb.Frame_KillWorker{KillWorker: m}})
}

// ReportItem reports an item a generator task running here yielded; its
// owner is in another worker or the driver (from_borrower: it adopts
// what the item hands over).
func (c Client) ReportItem(res *atollpb.TaskResult) error {
	res.GeneratorItem.FromBorrower = true
	return c.send(&atollpb.Frame{Body: &atollpb.Frame_TaskResult{TaskResult: res}})
}

// GeneratorAck passes the ack of a stream this worker owns to the
// attempt producing it.
func (c Client) GeneratorAck(m *atollpb.GeneratorAck) {
	_ = c.send(&atollpb.Frame{Body: &atollpb.Frame_GeneratorAck{GeneratorAck: m}})
}

// callTimeout bounds a request to the raylet that has no deadline of its
// own.
const callTimeout = 2 * time.Minute

func (c Client) call(ctx context.Context, f *atollpb.Frame) (*atollpb.Frame, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, callTimeout)
		defer cancel()
	}
	r, err := c.conn.Call(ctx, f)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, errs.Unavailablef("raylet connection: %v", err)
	}
	if st := r.GetStatus(); st != nil && st.Code != atollpb.ErrorCode_ERROR_CODE_UNSPECIFIED {
		return nil, errs.FromProto(st)
	}
	return r, nil
}

// Fetch pulls objects held on other nodes into the node's store.
func (c Client) Fetch(ctx context.Context, refs []*atollpb.ObjectRef) error {
	_, err := c.call(ctx, &atollpb.Frame{Body: &atollpb.Frame_FetchObjects{FetchObjects: &atollpb.FetchObjects{Refs: refs}}})
	return err
}

// GCS asks the GCS, through the raylet.
func (c Client) GCS(ctx context.Context, req *atollpb.GcsRequest) (*atollpb.GcsReply, error) {
	r, err := c.call(ctx, &atollpb.Frame{Body: &atollpb.Frame_GcsRequest{GcsRequest: req}})
	if err != nil {
		return nil, err
	}
	reply := r.GetGcsReply()
	if reply.GetError() != nil {
		return nil, errs.FromProto(reply.Error)
	}
	return reply, nil
}
