package raylet

import (
	"context"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/ids"
)

// workerExited tells the raylet a worker is gone (its process died or
// never started).
type workerExited struct {
	id     ids.WorkerID
	reason string
}

// helloResult reports whether a started worker process registered.
type helloResult struct{ err error }

// procWorker is a pool worker slot backed by a worker process. It runs one
// task at a time; a process that dies is not restarted in place: the
// raylet replaces the slot.
type procWorker struct {
	id      ids.WorkerID
	node    ids.NodeID
	cfg     *ProcessConfig
	raylet  *actor.PID
	proxy   proxy
	p       *workerProcess
	ready   bool
	current *runTask
	unwatch func() bool
}

func (w *procWorker) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		p, err := startProcess(ctx.ActorSystem(), ctx.Self(), 1, w.cfg, &w.proxy, w.id, w.node)
		if err != nil {
			ctx.Send(w.raylet, &workerExited{id: w.id, reason: err.Error()})
			ctx.Stop(ctx.Self())
			return
		}
		w.p = p
		system, self, timeout := ctx.ActorSystem(), ctx.Self(), w.cfg.StartTimeout
		go func() { system.Root.Send(self, &helloResult{err: p.waitHello(timeout)}) }()
	case *helloResult:
		if m.err != nil {
			w.p.kill()
			return // processExited reports it
		}
		w.ready = true
		if w.current != nil {
			w.push(w.current)
		}
	case *runTask:
		w.current = m
		if w.ready {
			w.push(m)
		}
	case *procFrame:
		if res := m.frame.GetTaskResult(); res != nil && w.current != nil {
			ctx.Send(w.raylet, &taskFinished{worker: w.id, attemptID: w.current.attemptID, result: res})
			w.unwatch()
			w.current = nil
		}
	case *processExited:
		ctx.Send(w.raylet, &workerExited{id: w.id, reason: exitReason(m.err)})
		ctx.Stop(ctx.Self())
	case *actor.Stopping:
		if w.p != nil {
			w.p.kill()
			w.p.conn.Close()
		}
	default:
		if w.p != nil {
			forwardDown(w.p.conn, m)
		}
	}
}

// push sends a task to the process and forwards a cancellation of its
// context as a cancel frame.
func (w *procWorker) push(t *runTask) {
	conn, id := w.p.conn, t.spec.TaskId
	_ = conn.Send(&atollpb.Frame{Body: &atollpb.Frame_PushTask{PushTask: &atollpb.PushTask{Spec: t.spec}}})
	w.unwatch = context.AfterFunc(t.ctx, func() {
		_ = conn.Send(&atollpb.Frame{Body: &atollpb.Frame_CancelTask{CancelTask: &atollpb.CancelTask{TaskId: id}}})
	})
}
