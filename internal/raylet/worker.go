package raylet

import (
	"context"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/ids"
	"github.com/atoll-runtime/atoll/internal/specpack"
)

// Assignment is a task attempt assigned to a worker (see Slot). The Core
// creates it and owns its first fields; the shell gives it its context
// and delivery when it applies the Push that carries it, and the Slot
// owns unwatch.
type Assignment struct {
	// spec is the attempt's task; packed instead for a submitter's
	// packed one (nil spec).
	spec      *atollpb.TaskSpec
	packed    *specpack.Spec
	task      ids.TaskID
	attemptID uint64 // unique on the node
	worker    ids.WorkerID
	// owner gets the result, through deliver.
	owner *actor.PID
	// started is when the attempt started on its worker (its push, or
	// the end of the one before it), ended when it ended, failed whether
	// it failed (the Core's clock; for the timeline).
	started, ended time.Time
	failed         bool
	// err is why a failed attempt failed.
	err *atollpb.ErrorInfo

	// The shell's: the attempt's context, cancelled to stop it (with a
	// cause: cancelled; nil: it ended), and the delivery of its result.
	ctx     context.Context
	cancel  context.CancelCauseFunc
	deliver func(owner *actor.PID, res *atollpb.TaskResult)
	// unwatch stops forwarding the attempt's cancellation (Slot.mu).
	unwatch func() bool

	// direct is the submitter that pushed the attempt under its lease
	// (nil: the Core's), task its task there.
	direct *Submitter
	lease  uint64
	dtask  *DirectTask
}

// Spec is the attempt's task (unpacked, if it was packed).
func (a *Assignment) Spec() *atollpb.TaskSpec { return a.held().Spec() }

func (a *Assignment) held() specpack.Held { return specpack.Held{Whole: a.spec, Packed: a.packed} }

// common is the attempt's task, or, packed, its shape (specpack.Held.Common).
func (a *Assignment) common() *atollpb.TaskSpec { return a.held().Common() }

// attempt is the attempt's number.
func (a *Assignment) attempt() int32 { return a.held().Attempt() }

// trace is the attempt's trace context, nil if untraced.
func (a *Assignment) trace() *atollpb.TraceContext { return a.held().Trace() }

// Is reports whether a is attempt of the task taskID names.
func (a *Assignment) Is(taskID []byte, attempt int32) bool { return a.is(taskID, attempt) }

// is reports whether a is attempt of the task taskID names.
func (a *Assignment) is(taskID []byte, attempt int32) bool {
	if a.packed != nil {
		return a.packed.Attempt() == attempt && string(a.task[:]) == string(taskID)
	}
	return a.spec.Attempt == attempt && string(a.spec.TaskId) == string(taskID)
}

// Worker is the worker the attempt was pushed to.
func (a *Assignment) Worker() ids.WorkerID { return a.worker }

// Owner is the actor the attempt's result (and a generator's items) go
// to: its caller's owner, or the node's gateway for a forwarded attempt.
func (a *Assignment) Owner() *actor.PID { return a.owner }

// ID numbers the attempt on its node (Core.Finished, Core.Recalled).
func (a *Assignment) ID() uint64 { return a.attemptID }

// taskFinished reports an attempt's result back to the raylet. delivered:
// the worker gave the result to its owner already.
type taskFinished struct {
	worker    ids.WorkerID
	attemptID uint64
	result    *atollpb.TaskResult
	delivered bool
}
