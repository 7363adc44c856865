package raylet

import (
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/ids"
)

// Effect is one thing the Core asks its shell to do. The concrete types
// are below; the shell applies them in the order the Core produced them.
type Effect interface{ effect() }

// Worker pool.
type (
	// StartWorker starts pool worker Worker running Binary ("" for a
	// worker in this process). Pushes to it may follow at once: its slot holds
	// them until the process registers.
	StartWorker struct {
		Worker ids.WorkerID
		Binary string
	}
	// StopWorker stops a worker the core forgot (reaped, evicted for a
	// worker of another binary, or dead): its slot is cleared (a result
	// still on its way is not delivered; the core reported the attempts),
	// its actor stopped, and the store told it is gone (its pins and
	// unsealed objects are reclaimed).
	StopWorker struct{ Worker ids.WorkerID }
	// KillWorker kills a worker (fault injection, a user's kill): the
	// shell steps WorkerExited for it at once, saying whether its process
	// had registered.
	KillWorker struct {
		Worker ids.WorkerID
		Reason string
	}
	// ArmTimer asks for TimerFired(Timer) After from now.
	ArmTimer struct {
		Timer Timer
		After time.Duration
	}
)

// Task attempts. An Assignment is created by the core; the shell gives it
// its context when it applies the Push that carries it.
type (
	// Push hands Attempts to Worker in one write, in order: the first
	// runs at once if the worker is idle, the others when those before
	// them end (pipelining). Before is how many attempts the worker held
	// already. Attempts is reused (see Core.Effects).
	Push struct {
		Worker   ids.WorkerID
		Attempts []*Assignment
		Before   int
	}
	// Recall asks the worker holding Attempt to give it back unstarted;
	// the answer comes back as Recalled.
	Recall struct{ Attempt *Assignment }
	// Cancel cancels Attempt's context (its task was cancelled); the
	// executor then reports it cancelled. NonRecursive: the tasks it
	// submitted go on.
	Cancel struct {
		Attempt      *Assignment
		NonRecursive bool
	}
	// Done says Attempt ended on its worker (finished, or crashed with
	// it): its context is released and it goes to the timeline (its
	// Start, End and Failed).
	Done struct{ Attempt *Assignment }
	// Returned says Attempt was given back unstarted (recalled): its
	// context is released.
	Returned struct{ Attempt *Assignment }
	// Reply sends Result to Owner's mailbox (nil Owner: nobody).
	Reply struct {
		Owner  *actor.PID
		Result *atollpb.TaskResult
	}
)

// Leases to submitters (core_lease.go). Holder is the submitter, opaque
// to the Core (the shell's *Submitter).
type (
	// Grant leases Worker to Holder for the class of its request
	// Request, as lease Lease: Holder writes the class's tasks to the
	// worker until it returns it.
	Grant struct {
		Holder  any
		Request uint64
		Worker  ids.WorkerID
		Lease   uint64
	}
	// RecallLease asks Holder to return Lease: to push no more tasks to
	// its worker, take back those not started, and return it once the
	// others finished.
	RecallLease struct {
		Holder any
		Worker ids.WorkerID
		Lease  uint64
	}
	// LeaseBlocked tells Holder that the task running under Lease
	// blocked in Get (Blocked), so the tasks it pushed behind it should
	// be taken back, or resumed.
	LeaseBlocked struct {
		Holder  any
		Worker  ids.WorkerID
		Lease   uint64
		Blocked bool
	}
	// LeaseLost tells Holder that Lease's worker is gone (Reason): the
	// tasks it pushed there and that did not finish are crashed.
	LeaseLost struct {
		Holder any
		Worker ids.WorkerID
		Lease  uint64
		Reason string
	}
	// LeaseRefused tells Holder its request Request can never be granted
	// (Err: the class's binary is refused, its demand is more than the
	// node has): its tasks of that class fail with Err.
	LeaseRefused struct {
		Holder  any
		Request uint64
		Err     *atollpb.ErrorInfo
	}
)

// Cluster.
type (
	// Forward hands Spec to Node's raylet (ClusterConfig.Forward); Hops
	// counts the raylets it will have gone through. SpilledBack: it had
	// queued here (its queue span says so); otherwise it was placed on
	// arrival (a forward span).
	Forward struct {
		Node        ids.NodeID
		Spec        *atollpb.TaskSpec
		Owner       *actor.PID
		Hops        int32
		SpilledBack bool
	}
	// CancelForwarded cancels a task this node does not hold: it may have
	// been forwarded (ClusterConfig.Cancel).
	CancelForwarded struct {
		Task         ids.TaskID
		NonRecursive bool
	}
	// AckGenerator passes a generator's ack to the worker running the
	// attempt.
	AckGenerator struct {
		Worker ids.WorkerID
		Ack    *atollpb.GeneratorAck
	}
	// ForwardGeneratorAck passes on an ack for an attempt not running
	// here (ClusterConfig.GeneratorAck); Hops is the link it came on.
	ForwardGeneratorAck struct {
		Ack  *atollpb.GeneratorAck
		Hops int32
	}
	// KillRemoteActor kills an actor this node does not host
	// (ClusterConfig.KillActor).
	KillRemoteActor struct{ Msg *atollpb.KillActor }
)

// Hosted actors.
type (
	// SpawnHost starts the host of Actor (its creation task Spec) in a
	// worker of its own, Worker, running Binary, supervised within its
	// max_restarts. The shell tells the core the host's address with
	// HostSpawned right away.
	SpawnHost struct {
		Actor  ids.ActorID
		Worker ids.WorkerID
		Spec   *atollpb.TaskSpec
		Binary string
	}
	// StopHost stops Actor's host for good (its death follows as
	// ActorTerminated).
	StopHost struct{ Actor ids.ActorID }
	// CrashHost makes Actor's host crash (it restarts within its budget).
	CrashHost struct {
		Actor  ids.ActorID
		Reason string
	}
	// HostGone: Actor's host is gone for good; its restart budget and
	// its worker (the store's pins, unsealed objects) are released.
	HostGone struct {
		Actor  ids.ActorID
		Worker ids.WorkerID
	}
	// ReportActor publishes an actor's new state (Config.ReportActor).
	ReportActor struct{ Info *atollpb.ActorInfo }
)

func (ReleaseBinary) effect()       {}
func (Grant) effect()               {}
func (RecallLease) effect()         {}
func (LeaseBlocked) effect()        {}
func (LeaseLost) effect()           {}
func (LeaseRefused) effect()        {}
func (StartWorker) effect()         {}
func (StopWorker) effect()          {}
func (KillWorker) effect()          {}
func (ArmTimer) effect()            {}
func (Push) effect()                {}
func (Recall) effect()              {}
func (Cancel) effect()              {}
func (Done) effect()                {}
func (Returned) effect()            {}
func (Reply) effect()               {}
func (Forward) effect()             {}
func (CancelForwarded) effect()     {}
func (AckGenerator) effect()        {}
func (ForwardGeneratorAck) effect() {}
func (KillRemoteActor) effect()     {}
func (SpawnHost) effect()           {}
func (StopHost) effect()            {}
func (CrashHost) effect()           {}
func (HostGone) effect()            {}
func (ReportActor) effect()         {}

// ReleaseBinary: no job uses the job binary Binary (a copy made by
// CoreConfig.CheckBinary) any more and its workers are stopping: the copy
// is removed (running processes keep their image).
type ReleaseBinary struct{ Binary string }

// Timer names a timer of the core (ArmTimer, TimerFired).
type Timer struct {
	Kind TimerKind
	// Binary is the program of the worker to start (TimerRespawn).
	Binary string
}

// TimerKind is what a timer is for.
type TimerKind uint8

const (
	// TimerReap: stop the surplus workers idle past IdleTimeout.
	TimerReap TimerKind = iota + 1
	// TimerRespawn: top the pool up with a worker of Binary after the
	// backoff of a binary whose processes exit before they register.
	TimerRespawn
)
