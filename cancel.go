package atoll

import (
	"context"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/errs"
)

// CancelOption configures Cancel.
type CancelOption func(*cancelConfig)

type cancelConfig struct{ force, nonRecursive bool }

// ForceCancel makes Cancel kill the worker process running the task
// (Ray's force=True) instead of cancelling its context: for a task that
// does not watch its context. The task is not retried; Get on its results
// fails with a CancelledError. Actor calls cannot be force-cancelled (it
// would kill the actor): Cancel refuses with ErrInvalidArgument.
func ForceCancel() CancelOption { return func(c *cancelConfig) { c.force = true } }

// NonRecursive makes Cancel cancel the task alone (Ray's
// recursive=False): the tasks it submitted go on running and their refs
// stay valid. The task's context is cancelled with the cause
// ErrCancelNonRecursive (context.Cause tells it from a plain cancel);
// the SDK cancels a child task when its submitting context is cancelled
// with any other cause. It cannot be combined with ForceCancel: killing
// the worker process ends the tasks it owns with it.
func NonRecursive() CancelOption { return func(c *cancelConfig) { c.nonRecursive = true } }

// Cancel cancels the task that produces ref, as Ray's cancel does: a task
// not yet running never runs; a running one sees its context cancelled
// (or, with ForceCancel, its worker process killed). Get on its results
// then fails with a CancelledError (errors.Is(err, ErrCancelled)).
//
// Cancelling is recursive, as Ray's default: the tasks a cancelled task
// submitted with its context (or one derived from it) are cancelled too,
// and theirs in turn; NonRecursive cancels the task alone. A call already sent to an actor runs to completion
// (actor calls not yet sent are cancelled). Cancelling a finished task or
// a Put object does nothing. ctx bounds nothing today (cancelling does
// not wait); it is there for the calls that will.
func Cancel(ctx context.Context, ref Ref, opts ...CancelOption) error {
	rt, err := running()
	if err != nil {
		return err
	}
	h, err := handleOf(rt, ref, "Cancel", -1)
	if err != nil {
		return err
	}
	var cfg cancelConfig
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.force && cfg.nonRecursive {
		return errs.Invalidf("Cancel: ForceCancel kills the worker process, and with it every task it submitted, so it cannot be NonRecursive; drop one of the two options")
	}
	if h.id.IsPut() {
		return nil
	}
	task := h.id.TaskID()
	if cfg.force {
		state, ok := rt.owner.taskState(task)
		if ok && state.ActorCall {
			return errs.Invalidf("Cancel: ForceCancel of actor call %s (%s) would kill the actor; cancel it without ForceCancel, or Kill the actor", state.Name, task.Short())
		}
		rt.cancelTask(task, false)
		if ok && state.Dispatched {
			rt.link.killWorker(&atollpb.KillWorker{TaskId: task.Bytes(), Reason: "the task was force-cancelled (atoll.Cancel with ForceCancel)"})
		}
		return nil
	}
	rt.cancelTask(task, cfg.nonRecursive)
	return nil
}
