package raylet

import (
	"context"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/ids"
)

// Assignment is a task attempt assigned to a worker (see Slot).
type Assignment struct {
	ctx       context.Context
	spec      *atollpb.TaskSpec
	attemptID uint64
	worker    ids.WorkerID
	// owner gets the result, through deliver.
	owner   *actor.PID
	deliver func(owner *actor.PID, res *atollpb.TaskResult)
	// unwatch stops forwarding the attempt's cancellation (Slot.mu).
	unwatch func() bool
}

// taskFinished reports an attempt's result back to the raylet. delivered:
// the worker gave the result to its owner already.
type taskFinished struct {
	worker    ids.WorkerID
	attemptID uint64
	result    *atollpb.TaskResult
	delivered bool
}

// workerActor is one worker slot. It runs each task on a goroutine of its
// own so that the actor stays responsive (it can be stopped while user
// code runs; Go cannot kill a goroutine, so a killed task's goroutine runs
// on with a cancelled context and its result is ignored).
type workerActor struct {
	id     ids.WorkerID
	node   ids.NodeID
	exec   Executor
	raylet *actor.PID
	slot   *Slot
}

func (w *workerActor) Receive(ctx actor.Context) {
	m, ok := ctx.Message().(*Assignment)
	if !ok {
		return
	}
	system, raylet, exec, slot := ctx.ActorSystem(), w.raylet, w.exec, w.slot
	info := Worker{ID: w.id, NodeID: w.node}
	go func() {
		res := exec.RunTask(m.ctx, info, m.spec)
		if t := slot.Finish(res); t != nil {
			t.Report(system, raylet, res)
		}
	}()
}
