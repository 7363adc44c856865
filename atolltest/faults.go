package atolltest

import (
	"context"
	"encoding/hex"
	"time"

	"github.com/atoll-runtime/atoll"
	"github.com/atoll-runtime/atoll/faultplan"
	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/ids"
	"github.com/atoll-runtime/atoll/internal/runtime"
)

// KillTaskWorker kills the worker running the task that produces ref, as
// if the worker crashed: the task is retried within its MaxRetries, else
// fails with WorkerCrashedError. It does nothing if the task is not
// running. (With in-process workers the task's goroutine cannot be killed:
// its context is cancelled and its result discarded.)
func KillTaskWorker(ctx context.Context, ref atoll.Ref) error {
	rt, err := runtime.Running(ctx)
	if err != nil {
		return err
	}
	id, err := ids.ObjectIDFromBytes(unhex(ref.ID()))
	if err != nil || id.IsPut() {
		return errs.Invalidf("KillTaskWorker: ref is not a task result")
	}
	rt.KillWorker(ids.WorkerID{}, id.TaskID())
	return nil
}

// CrashActor makes the actor crash as if its worker died: it restarts
// (its constructor runs again) within its MaxRestarts, else dies.
func CrashActor[T any](ctx context.Context, h atoll.ActorHandle[T]) error {
	rt, err := runtime.Running(ctx)
	if err != nil {
		return err
	}
	id, err := ids.FromHex(h.ID())
	if err != nil || id.IsZero() {
		return errs.Invalidf("CrashActor: zero ActorHandle")
	}
	rt.CrashActor(id)
	return nil
}

// KillWorker kills the worker with the given id (as atoll.CurrentWorkerID
// reports it inside a task): its running task is retried within its
// MaxRetries; an actor it hosts restarts within its MaxRestarts.
func KillWorker(ctx context.Context, workerID string) error {
	rt, err := runtime.Running(ctx)
	if err != nil {
		return err
	}
	id, err := ids.FromBytes(unhex(workerID))
	if err != nil {
		return errs.Invalidf("KillWorker: bad worker id %q", workerID)
	}
	rt.KillWorker(id, ids.TaskID{})
	return nil
}

// FailNextCreates makes the node's object store fail its next n object
// creations with ObjectStoreFullError, as if it were full: Puts fail,
// tasks whose outputs go to the store fail (and retry if they may). Call
// it from the driver (a worker process gets ErrInvalidArgument).
func FailNextCreates(ctx context.Context, n int) error {
	d, err := runtime.DriverOf(ctx, "FailNextCreates")
	if err != nil {
		return err
	}
	return d.FailNextCreates(n)
}

// KillNode kills the cluster node with the given id (as
// atoll.CurrentNodeID reports it) as if its machine failed: the node's
// process and its worker processes die at once (SIGKILL), without leaving
// the cluster gracefully. The other nodes declare it dead within the
// failure timeout; its tasks are retried elsewhere and its actors die.
// KillNode returns once the node acknowledged the order. It fails with
// ErrInvalidArgument for the driver's own node, outside a cluster or in a
// worker process, and ErrNotFound if no live node has that id.
func KillNode(ctx context.Context, nodeID string) error {
	d, err := runtime.DriverOf(ctx, "KillNode")
	if err != nil {
		return err
	}
	return d.KillNode(ctx, nodeID)
}

// PartitionNode cuts the cluster node with the given id off the others
// for d (at most faultplan.MaxPartition) in dir (faultplan.Both, Inbound
// or Outbound): its NATS connection, object transfers and gossip, as a
// network partition would. The node heals by itself after d. Cut for
// longer than the failure timeout, it is declared dead, its tasks are
// retried elsewhere and its actors restarted per their policy; healed,
// it learns it was declared dead and stops. PartitionNode returns once
// the node acknowledged. It fails with ErrInvalidArgument for the head,
// the driver's own node, a bad direction or duration, outside a cluster
// or in a worker process, and ErrNotFound if no live node has that id.
func PartitionNode(ctx context.Context, nodeID string, dir faultplan.Direction, d time.Duration) error {
	drv, err := runtime.DriverOf(ctx, "PartitionNode")
	if err != nil {
		return err
	}
	return drv.PartitionNode(ctx, nodeID, dir, d)
}

func unhex(s string) []byte {
	b, _ := hex.DecodeString(s)
	return b
}
