package workerproc

import (
	"github.com/asynkron/protoactor-go/actor"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/ids"
	"github.com/atoll-runtime/atoll/internal/raylet"
)

// helloResult reports whether a started worker process registered.
type helloResult struct{ err error }

// taskWorker is a pool worker backed by a worker process. It runs one
// task at a time; a process that dies is not restarted in place: the
// raylet replaces the worker. The actor manages the process's life (start,
// hello, exit) and forwards to it what the node tells it; tasks and their
// results do not pass through it: the raylet writes a task to the
// process's connection through the slot, and the connection reader hands
// the result to its owner (see slot).
type taskWorker struct {
	id     ids.WorkerID
	node   ids.NodeID
	cfg    *raylet.ProcessConfig
	raylet *actor.PID
	proxy  proxy
	slot   *raylet.Slot
	p      *workerProcess
}

func (w *taskWorker) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		system, rayletPID, sl := ctx.ActorSystem(), w.raylet, w.slot
		onResult := func(res *atollpb.TaskResult) {
			if res.GeneratorItem != nil {
				sl.DeliverItem(res) // an item a generator task yielded: it runs on
				return
			}
			if t := sl.Finish(res); t != nil {
				t.Report(system, rayletPID, res)
			}
		}
		p, err := startProcess(ctx.ActorSystem(), ctx.Self(), 1, w.cfg, &w.proxy, w.id, w.node, onResult, sl.Current)
		if err != nil {
			ctx.Send(w.raylet, &raylet.WorkerExited{ID: w.id, Reason: err.Error()})
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
		w.slot.Registered(w.p.conn, w.p.kill)
	case *processExited:
		ctx.Send(w.raylet, &raylet.WorkerExited{ID: w.id, Reason: exitReason(m.err)})
		ctx.Stop(ctx.Self())
	case *actor.Stopping:
		if w.p != nil {
			w.p.stop()
			w.p.conn.Close()
		}
	default:
		if w.p != nil {
			forwardDown(w.p.conn, m)
		}
	}
}
