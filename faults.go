package atoll

import (
	"context"
	"time"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/faultplan"
	"github.com/atoll-runtime/atoll/internal/cluster"
	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/ids"
	"github.com/atoll-runtime/atoll/internal/objectstore"
)

// Fault injection, for testing systems built on atoll: these calls break
// things on purpose, the way real failures do.

// KillTaskWorker kills the worker running the task that produces ref, as
// if the worker crashed: the task is retried within its MaxRetries, else
// fails with WorkerCrashedError. It does nothing if the task is not
// running. (With goroutine workers the task's goroutine cannot be killed:
// its context is cancelled and its result discarded.)
func KillTaskWorker(ctx context.Context, ref Ref) error {
	rt, err := running()
	if err != nil {
		return err
	}
	h := ref.handle()
	if h == nil || h.id.IsPut() {
		return errs.Invalidf("KillTaskWorker: ref is not a task result")
	}
	rt.link.killWorker(&atollpb.KillWorker{TaskId: h.id.TaskID().Bytes(), Reason: "killed by fault injection"})
	return nil
}

// CrashActor makes the actor crash as if its worker died: it restarts
// (its constructor runs again) within its MaxRestarts, else dies.
func CrashActor[T any](ctx context.Context, h ActorHandle[T]) error {
	rt, err := running()
	if err != nil {
		return err
	}
	if h.st == nil {
		return errs.Invalidf("CrashActor: zero ActorHandle")
	}
	rt.link.killActor(&atollpb.KillActor{ActorId: h.st.id.Bytes(), NoRestart: false, Reason: "crashed by fault injection"})
	return nil
}

// FailNextCreates makes the node's object store fail its next n object
// creations with ObjectStoreFullError, as if it were full: Puts fail,
// tasks whose outputs go to the store fail (and retry if they may).
func FailNextCreates(ctx context.Context, n int) error {
	rt, err := running()
	if err != nil {
		return err
	}
	return rt.failNextCreates(n)
}

func (rt *core) failNextCreates(n int) error {
	if rt.node == nil { // a worker process
		return errs.Invalidf("FailNextCreates: call it from the driver")
	}
	if n < 0 {
		return errs.Invalidf("FailNextCreates(%d): negative", n)
	}
	rt.node.System().Root.Send(rt.node.Store(), &objectstore.FailCreates{N: n})
	return nil
}

// KillWorker kills the worker with the given id (as CurrentWorkerID
// reports it inside a task): its running task is retried within its
// MaxRetries; an actor it hosts restarts within its MaxRestarts.
func KillWorker(ctx context.Context, workerID string) error {
	rt, err := running()
	if err != nil {
		return err
	}
	id, err := ids.FromBytes(unhex(workerID))
	if err != nil {
		return errs.Invalidf("KillWorker: bad worker id %q", workerID)
	}
	rt.link.killWorker(&atollpb.KillWorker{WorkerId: id.Bytes(), Reason: "killed by fault injection"})
	return nil
}

// CurrentWorkerID returns the id of the worker running the task or actor
// call under ctx, or "" outside a task.
func CurrentWorkerID(ctx context.Context) string {
	if ti, ok := ctx.Value(taskKey{}).(*taskInfo); ok {
		return ti.worker.String()
	}
	return ""
}

// CurrentAttempt returns which attempt of its task the code under ctx
// is: 0 for the first, n after n retries (a worker or node that died,
// a lost forward, an application error with RetryExceptions) or
// reconstructions of lost outputs; 0 outside a task. Side effects of a
// task (calls to actors, files) happen once per attempt; a history that
// records them can key them by attempt.
func CurrentAttempt(ctx context.Context) int {
	if ti, ok := ctx.Value(taskKey{}).(*taskInfo); ok {
		return ti.attempt
	}
	return 0
}

// KillNode kills the cluster node with the given id (as CurrentNodeID
// reports it) as if its machine failed: the node's process and its worker
// processes die at once (SIGKILL), without leaving the cluster gracefully.
// The other nodes declare it dead within the failure timeout; its tasks are
// retried elsewhere and its actors die. KillNode returns once the node
// acknowledged the order. It fails with ErrInvalidArgument for the
// driver's own node or outside a cluster, and ErrNotFound if no live node
// has that id.
func KillNode(ctx context.Context, nodeID string) error {
	rt, err := running()
	if err != nil {
		return err
	}
	return rt.killNode(ctx, nodeID)
}

// PartitionNode cuts the cluster node with the given id off the others
// for d (at most faultplan.MaxPartition) in dir (faultplan.Both, Inbound
// or Outbound): its NATS connection, object transfers and gossip, as a
// network partition would. The node heals by itself after d. Cut for
// longer than the failure timeout, it is declared dead, its tasks are
// retried elsewhere and its actors restarted per their policy; healed,
// it learns it was declared dead and stops. PartitionNode returns once
// the node acknowledged. It fails with ErrInvalidArgument for the head,
// the driver's own node, a bad direction or duration, or outside a
// cluster, and ErrNotFound if no live node has that id.
func PartitionNode(ctx context.Context, nodeID string, dir faultplan.Direction, d time.Duration) error {
	rt, err := running()
	if err != nil {
		return err
	}
	return rt.partitionNode(ctx, nodeID, dir, d)
}

func (rt *core) partitionNode(ctx context.Context, nodeID string, dir faultplan.Direction, d time.Duration) error {
	g, id, err := rt.peerNode("PartitionNode", nodeID)
	if err != nil {
		return err
	}
	return g.PartitionNode(ctx, id, string(dir), d)
}

// peerNode finds the gateway and parses the id of another node, for the
// fault calls that act on one.
func (rt *core) peerNode(what, nodeID string) (*cluster.Gateway, ids.NodeID, error) {
	var g *cluster.Gateway
	if rt.node != nil {
		g = rt.node.Gateway()
	}
	if g == nil {
		return nil, ids.NodeID{}, errs.Invalidf("%s: this driver is not connected to a cluster (WithAddress)", what)
	}
	id, err := ids.FromBytes(unhex(nodeID))
	if err != nil {
		return nil, ids.NodeID{}, errs.Invalidf("%s: bad node id %q", what, nodeID)
	}
	if id == rt.nodeID {
		return nil, ids.NodeID{}, errs.Invalidf("%s: %s is the driver's own node", what, id.Short())
	}
	return g, id, nil
}

func (rt *core) killNode(ctx context.Context, nodeID string) error {
	g, id, err := rt.peerNode("KillNode", nodeID)
	if err != nil {
		return err
	}
	return g.KillNode(ctx, id)
}
