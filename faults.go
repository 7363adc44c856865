package atoll

import (
	"context"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/errs"
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
