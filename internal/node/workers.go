package node

import (
	"context"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/ids"
	"github.com/atoll-runtime/atoll/internal/raylet"
)

// How the node's raylet runs tasks: in worker processes it starts (or on
// the driver's goroutines, Hooks.Executor), and what happens when one
// dies.

// processConfig returns how the raylet starts worker processes, or nil
// for goroutine workers.
func (n *Node) processConfig() *raylet.ProcessConfig {
	if n.hooks.Executor != nil {
		return nil
	}
	pc := &raylet.ProcessConfig{
		Binary: n.cfg.WorkerBinary, Arena: n.arena.File(), ArenaSize: n.arena.Size(), Store: n.storePID,
		GCS: n.gcsClient.Do, Output: n.cfg.WorkerOutput,
	}
	if !n.cfg.Embedded() && !n.cfg.Driver {
		// A cluster node runs each job's own binary unless it was given one.
		pc.PerJobBinary = true
		pc.Args = []string{}
		if n.workerLogs != nil {
			pc.OutputFor = n.workerLogs.outputFor
		}
	}
	if g := n.gateway; g != nil {
		pc.Fetch = g.Fetch
		pc.Delete = func(req *atollpb.DeleteObjectsRequest) {
			if req.Revived {
				g.Revive(req.ObjectIds)
			} else {
				g.Free(req.ObjectIds)
			}
		}
	}
	return pc
}

// workerDied reclaims a dead worker's pins, its unsealed objects and the
// objects it owned (the raylet calls it on its goroutine: it only sends).
func (n *Node) workerDied(w ids.WorkerID) {
	n.workerStores.Delete(w)
	n.system.Root.Send(n.storePID, &atollpb.ClientDisconnected{ClientId: w.Bytes()})
	n.gateway.OwnerExited(w) // other nodes free what it owned there (nil-safe)
}

// processOnly is the raylet's executor on a node whose tasks run in
// worker processes: the raylet hands every task and actor to a process
// there, never to an executor, so these calls only report the mistake.
type processOnly struct{}

var errProcessOnly = errs.Invalidf("this node runs tasks in worker processes, not in its own process")

func (processOnly) RunTask(_ context.Context, w raylet.Worker, spec *atollpb.TaskSpec) *atollpb.TaskResult {
	return &atollpb.TaskResult{TaskId: spec.TaskId, Attempt: spec.Attempt, Error: errs.ToProto(errProcessOnly), WorkerId: w.ID.Bytes()}
}

func (processOnly) NewActor(context.Context, raylet.Worker, *atollpb.TaskSpec) (any, error) {
	return nil, errProcessOnly
}

func (processOnly) RunActorTask(_ context.Context, w raylet.Worker, _ any, spec *atollpb.TaskSpec) (*atollpb.TaskResult, bool) {
	return &atollpb.TaskResult{TaskId: spec.TaskId, Attempt: spec.Attempt, Error: errs.ToProto(errProcessOnly), WorkerId: w.ID.Bytes()}, false
}
