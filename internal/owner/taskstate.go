package owner

import (
	"fmt"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/ids"
)

// TaskState is what the owner knows of a pending task, for error
// messages (a Get that timed out names the task it waited for) and for
// Cancel.
type TaskState struct {
	Name      string
	Attempt   int32
	ActorCall bool // an actor method call (or an actor's creation)
	// Dispatched: its arguments resolved and it went to a node (or, for a
	// call, it is ready to go to its actor).
	Dispatched bool
	Cancelled  bool
	// Unresolved counts its arguments that have no value yet.
	Unresolved int
}

// Describe says where the task is, in words.
func (s TaskState) Describe() string {
	switch {
	case s.Cancelled:
		return "cancelled, waiting for its node to confirm"
	case !s.Dispatched:
		return fmt.Sprintf("waiting for %d of its arguments", s.Unresolved)
	case s.ActorCall:
		return fmt.Sprintf("sent to its actor (attempt %d): queued behind earlier calls or running", s.Attempt)
	default:
		return fmt.Sprintf("submitted to a node (attempt %d): queued for a worker or running", s.Attempt)
	}
}

// TaskState reports the state of a task this process owns and has not
// seen finish (false: unknown or finished).
func (t *Table) TaskState(id ids.TaskID) (TaskState, bool) {
	tk := t.tasks[id]
	if tk == nil {
		return TaskState{}, false
	}
	return TaskState{Name: tk.common().Name, Attempt: tk.attempt(), ActorCall: tk.actor != nil || tk.common().Type == atollpb.TaskType_ACTOR_CREATION_TASK, Dispatched: tk.dispatched,
		Cancelled: tk.cancelled, Unresolved: tk.unresolved()}, true
}
