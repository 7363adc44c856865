package raylet

import (
	"context"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/ids"
)

// runTask hands a task attempt to a goroutine worker.
type runTask struct {
	ctx       context.Context
	spec      *atollpb.TaskSpec
	attemptID uint64
}

// taskFinished reports an attempt's result back to the raylet.
type taskFinished struct {
	worker    ids.WorkerID
	attemptID uint64
	result    *atollpb.TaskResult
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
}

func (w *workerActor) Receive(ctx actor.Context) {
	m, ok := ctx.Message().(*runTask)
	if !ok {
		return
	}
	system, raylet, exec := ctx.ActorSystem(), w.raylet, w.exec
	info := Worker{ID: w.id, NodeID: w.node}
	go func() {
		res := exec.RunTask(m.ctx, info, m.spec)
		system.Root.Send(raylet, &taskFinished{worker: info.ID, attemptID: m.attemptID, result: res})
	}()
}
