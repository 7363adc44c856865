package owner

import (
	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/ids"
	"github.com/atoll-runtime/atoll/internal/specpack"
	"time"
)

// Effect is one thing the shell must do. The concrete types are below.
type Effect interface{ effect() }

// SendTask submits a task attempt to the node's scheduler. The Table does
// not touch Spec after emitting it (a retry sends a clone).
type SendTask struct{ Spec *atollpb.TaskSpec }

// SendPacked is SendTask for a spec the Table packed (Config.Pack): a
// leasable task's (specpack.Leasable). A type of its own, one pointer
// wide, so that boxing it as an Effect allocates nothing.
type SendPacked struct{ Spec *specpack.Spec }

// CallActor sends an actor call attempt to the actor at Address. The
// Table emits it by pointer, from runs of them (package slab): made for
// every call, a value would be an allocation when boxed as an Effect.
type CallActor struct {
	Address string
	Spec    *atollpb.TaskSpec
}

// CancelTask asks the node to stop a dispatched task (it then reports a
// CANCELLED result). NonRecursive: the tasks it submitted go on.
type CancelTask struct {
	Task         ids.TaskID
	NonRecursive bool
}

// Free deletes objects this process owned from the object store (and, in
// a cluster, their copies on other nodes).
type Free struct{ Objects []ids.ObjectID }

// FreeStrays deletes copies of objects this process owns from the store
// of one node only: copies a late attempt stored there after its owner
// had moved on (its record places the objects elsewhere, or freed them).
// Unlike Free it frees no object: the copies the record knows of stay.
type FreeStrays struct {
	Node    ids.NodeID
	Objects []ids.ObjectID
}

// Revive tells the stores that objects this process freed are being
// rebuilt (lineage reconstruction of a released argument): their ids are
// live again, and reading them is no read after free.
type Revive struct{ Objects []ids.ObjectID }

// Notify wakes a waiter registered with Watch: one of the objects it
// watches has a value now. Send without blocking.
type Notify struct{ C chan<- struct{} }

// Dispatched says a task's arguments resolved and it left the owner (the
// shell marks its submit span). Only tasks submitted with an Attach get
// it.
type Dispatched struct{ Attach any }

// Retried says a task is being retried after a failed attempt.
type Retried struct {
	Attach  any
	Attempt int32
	Cause   *atollpb.ErrorInfo
}

// Finished says a task ended, with Err nil on success. Its returns are
// resolved already. Only tasks submitted with an Attach get it.
type Finished struct {
	Attach any
	Err    *atollpb.ErrorInfo
}

// ActorRestartFailed says the creation sent again to restart an actor
// whose node died failed: the actor is dead, and no host will report it,
// so the shell does (to the GCS).
type ActorRestartFailed struct {
	Actor ids.ActorID
	Name  string
	Err   *atollpb.ErrorInfo
}

// LocateActor asks the GCS for an actor's current state: a call to it
// failed naming its node (FORWARD_LOST, NODE_DIED) and the Table forgot
// the address, which no event may replace if the actor did not move or
// if this process missed the event. The answer comes back through
// ActorLocated; a lookup that gives up, through LocateFailed. After, when
// set, is how long the shell waits before asking: the GCS's last answer
// was older than what this process saw (RelocateAfter).
type LocateActor struct {
	Actor ids.ActorID
	After time.Duration
}

// AskActor asks for AskDue after After: calls wait for an actor's
// address, which only an event would bring, and the event may be missed
// (Table.askAgain).
type AskActor struct {
	Actor ids.ActorID
	After time.Duration
}

func (AskActor) effect()           {}
func (ActorRestartFailed) effect() {}
func (LocateActor) effect()        {}
func (SendTask) effect()           {}
func (SendPacked) effect()         {}
func (*CallActor) effect()         {}
func (CancelTask) effect()         {}
func (Free) effect()               {}
func (FreeStrays) effect()         {}
func (Revive) effect()             {}
func (Notify) effect()             {}
func (Dispatched) effect()         {}
func (Retried) effect()            {}
func (Finished) effect()           {}
