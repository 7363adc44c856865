package raylet

import (
	"github.com/asynkron/protoactor-go/actor"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/ids"
)

// Workers makes the actors that run a node's workers (package
// workerproto implements it: the node's end of the worker protocol). A
// worker is a process or, with ProcessConfig.InProcess, a worker runtime
// on goroutines of this process; the raylet cannot tell them apart. A
// task worker takes its attempts from a Slot and reports them through it
// (Assignment.Report); an actor host reports ActorStarted, takes calls as
// atollpb.PushTask messages from their callers and answers them through
// the deliver function; a worker that is gone reports WorkerExited; a
// host panics to be restarted by the raylet's supervisor strategy.
type Workers interface {
	// TaskWorker returns the actor that runs pool worker w.
	TaskWorker(w WorkerSpec) actor.Producer
	// ActorHost returns the actor that hosts one actor in a worker of its
	// own.
	ActorHost(h HostSpec) actor.Producer
	// TakeEvents returns the timeline's events of the actor calls the
	// hosts answered and have not sent the raylet yet (AddTimelineEvents),
	// and forgets them: the raylet takes them before it tells its
	// timeline. It is called on the raylet's goroutine.
	TakeEvents() []TaskEvent
}

// WorkerSpec describes a pool worker to start.
type WorkerSpec struct {
	Worker Worker
	Config *ProcessConfig
	// Raylet receives WorkerExited and the task workers' TaskFinished.
	Raylet *actor.PID
	// Slot hands the worker its task attempts.
	Slot *Slot
}

// HostSpec describes an actor host to start.
type HostSpec struct {
	Actor  ids.ActorID
	Spec   *atollpb.TaskSpec // the actor's creation task
	Worker Worker
	Config *ProcessConfig
	// Raylet receives ActorStarted.
	Raylet *actor.PID
	// Deliver gives a call's result to its caller.
	Deliver func(caller *actor.PID, res *atollpb.TaskResult)
	// PipelineDepth is how many calls the host may have sent to the
	// actor's process beyond those it runs at once
	// (ActorPipelineDepth(Config.PipelineDepth)).
	PipelineDepth int
}

// WorkerExited tells the raylet a worker is gone (its process died or
// never started, or its in-process connection ended).
type WorkerExited struct {
	ID     ids.WorkerID
	Reason string
}

// ActorStarted reports that an actor's constructor ran (after creation or
// a restart), with its error if it failed.
type ActorStarted struct {
	ID  ids.ActorID
	Err error
}

// CrashActor makes an actor host panic, as if its worker crashed (fault
// injection; the actor restarts within its budget).
type CrashActor struct{ Reason string }
