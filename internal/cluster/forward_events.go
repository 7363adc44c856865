package cluster

import (
	"log/slog"

	"github.com/asynkron/protoactor-go/actor"
	"google.golang.org/protobuf/proto"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/ids"
)

// The Forwarder's inputs (Event) and outputs (Effect). Both are plain
// values: a shell (the gateway actor) or a test harness holding several
// nodes' Forwarders turns the world into events and carries out the
// effects; an effect that leaves the node (Publish) names its destination
// node, its kind and its protobuf message, so a harness can deliver,
// drop, delay or duplicate it itself. Messages given to the Forwarder and
// messages in its effects are never modified by it afterwards.

// Event is one thing that happened to the node's forwarding. The
// concrete types are below.
type Event interface{ event() }

// SendTask: the raylet placed a task attempt on another node (a
// spillback included); its result goes to Owner, or, with Relay, back on
// the link the attempt arrived here on (the raylet spilled back work
// another node forwarded). Hops names the new link (1 from the owner's
// node).
type SendTask struct {
	Node  ids.NodeID
	Spec  *atollpb.TaskSpec
	Owner *actor.PID
	Relay bool
	Hops  int32
}

// SendCall: an actor call to a host on another node (Address is the
// host's local address there); its result goes to Caller.
type SendCall struct {
	Node    ids.NodeID
	Address string
	Spec    *atollpb.TaskSpec
	Caller  *actor.PID
}

// CancelSent: cancel every attempt of Task this node forwarded (the
// raylet does not hold it).
type CancelSent struct {
	Task         ids.TaskID
	NonRecursive bool
}

// LocalResult: work another node forwarded here ended (from the raylet or
// an actor host), or, with a GeneratorItem, yielded an item.
type LocalResult struct{ Result *atollpb.TaskResult }

// NoHost: a call forwarded here found no actor at Address (a protoactor
// dead letter).
type NoHost struct{ Address string }

// PassAck: the raylet has a generator ack for an attempt it does not
// run; it came on link Hops (0 from an owner of this node) and goes on
// the next.
type PassAck struct {
	Ack  *atollpb.GeneratorAck
	Hops int32
}

// Received: a message from another node, decoded and validated
// (validate): ForwardTask, ForwardActorCall, ForwardedResult, HeldWork,
// ForwardCancel, ForwardGeneratorAck, NodeLoad, OwnersExited,
// ObjectCopies or FreeObjects. Others are ignored.
type Received struct{ Msg proto.Message }

// LeaseTick: every ConfirmInterval, confirm the work held for other nodes,
// expire the work other nodes stopped confirming and log the refusals
// since the last tick.
type LeaseTick struct{}

// PeerJoined: membership (gossip, authenticated by the cluster key) has
// Node as a live member. Only members' forwarded work is kept.
type PeerJoined struct{ Node ids.NodeID }

// PeerGone: membership declared Node dead (Died) or saw it leave.
type PeerGone struct {
	Node ids.NodeID
	Died bool
}

// OwnerExited: an owner process (a worker or actor process) of this node
// exited.
type OwnerExited struct{ Worker ids.WorkerID }

// PublishFailed: the shell could not send Publish (the control plane is
// down, say); the Forwarder does what Publish.Unsent says.
type PublishFailed struct {
	Publish Publish
	Err     error
}

// ReportAnswered: the GCS answered a ReportDead of Node, with Err (nil:
// accepted; UNAVAILABLE: it is sent again later, forward_report.go).
type ReportAnswered struct {
	Node ids.NodeID
	Err  error
}

func (SendTask) event()       {}
func (SendCall) event()       {}
func (CancelSent) event()     {}
func (LocalResult) event()    {}
func (NoHost) event()         {}
func (PassAck) event()        {}
func (Received) event()       {}
func (LeaseTick) event()      {}
func (ReportAnswered) event() {}
func (PeerJoined) event()     {}
func (PeerGone) event()       {}
func (OwnerExited) event()    {}
func (PublishFailed) event()  {}

// Effect is one thing the shell must do. The concrete types are below.
type Effect interface{ effect() }

// The kinds of Publish: the last part of the subject, as in
// <prefix>.node.<node>.<kind>; KindOwnersExited is a broadcast.
const (
	KindTask         = "task"   // atollpb.ForwardTask
	KindCall         = "call"   // atollpb.ForwardActorCall
	KindResult       = "result" // atollpb.ForwardedResult: results, refusals, generator items
	KindHeld         = "held"   // atollpb.HeldWork
	KindCancel       = "cancel" // atollpb.ForwardCancel
	KindGenAck       = "genack" // atollpb.ForwardGeneratorAck
	KindOwnersExited = "owners" // atollpb.OwnersExited, to every node (this one too)
)

// Publish sends Msg to node To's gateway on its subject Kind, or, when To
// is zero, to every node (KindOwnersExited). At most once, like NATS: a
// harness may drop it.
type Publish struct {
	To   ids.NodeID
	Kind string
	Msg  proto.Message
	// Unsent says what to do if it cannot be sent (PublishFailed).
	Unsent Unsent
}

// Subject is where p goes under prefix.
func (p Publish) Subject(prefix string) string {
	if p.To.IsZero() && p.Kind == KindOwnersExited {
		return ownersExitedSubject(prefix)
	}
	if p.To.IsZero() && p.Kind == KindFree {
		return freeSubject(prefix)
	}
	return nodeSubject(prefix, p.To, p.Kind)
}

// Unsent is what the Forwarder does with a Publish the shell could not
// send.
type Unsent uint8

const (
	// UnsentIgnored: nothing; it is lost like any message in transit.
	UnsentIgnored Unsent = iota
	// UnsentFailsForward: a forwarded task or call: its owner fails now.
	UnsentFailsForward
	// UnsentSendsFailure: a result going back: its origin is sent the
	// attempt's failure instead.
	UnsentSendsFailure
	// UnsentFailsItem: a generator item: the attempt is cancelled and
	// ends with the error.
	UnsentFailsItem
	// UnsentForgetsOwner: an owner's exit: this node forgets it at least.
	UnsentForgetsOwner
)

// Deliver hands the result (or generator item) of work this node
// forwarded to its local owner (an owner actor, a worker's proxy).
type Deliver struct {
	To     *actor.PID
	Result *atollpb.TaskResult
}

// Submit gives the raylet a task another node forwarded here
// (atollpb.SubmitTask, forwarded, with the gateway as the sender: the
// result comes back as a LocalResult).
type Submit struct {
	Spec *atollpb.TaskSpec
	Hops int32
}

// PushCall gives the actor host at the local Address a call another node
// forwarded here (atollpb.PushTask, with the gateway as the sender).
type PushCall struct {
	Address string
	Spec    *atollpb.TaskSpec
}

// ToRaylet sends Msg to the raylet: *raylet.PeerView (the view of the
// live peers it places with), *raylet.NodeGone, *atollpb.CancelTask,
// *atollpb.ForwardGeneratorAck.
type ToRaylet struct{ Msg any }

// ToStore sends Msg to the object store: *atollpb.ClientDisconnected (an
// owner whose objects here nobody will release).
type ToStore struct{ Msg proto.Message }

// PeerHeard: the first load report of Node, served at TransferAddress:
// pull from it, and count it heard (Gateway.WaitPeers).
type PeerHeard struct {
	Node            ids.NodeID
	TransferAddress string
}

// PeerLost: Node died or left: pull nothing from it.
type PeerLost struct{ Node ids.NodeID }

// PeerForgotten: Node, dead, is no longer remembered (past MaxDeadNodes):
// it leaves the set of nodes heard from.
type PeerForgotten struct{ Node ids.NodeID }

// ReportDead tells the GCS that Node died, or left (Left), and why (the
// head's Forwarder only: a node cut off from the others would declare
// them all dead). A node that leaves marks itself first, with its own
// reason; this mark then changes nothing. The shell answers it with
// ReportAnswered; one the GCS could not apply in full is sent again
// (forward_report.go).
type ReportDead struct {
	Node   ids.NodeID
	Left   bool
	Reason string
}

// Log is a line for the node's log.
type Log struct {
	Level slog.Level
	Msg   string
	Args  []any
}

func (Publish) effect()       {}
func (Deliver) effect()       {}
func (Submit) effect()        {}
func (PushCall) effect()      {}
func (ToRaylet) effect()      {}
func (ToStore) effect()       {}
func (PeerHeard) effect()     {}
func (PeerLost) effect()      {}
func (PeerForgotten) effect() {}
func (ReportDead) effect()    {}
func (Log) effect()           {}
