package raylet

import (
	"encoding/hex"
	"strings"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/ids"
)

// ClusterConfig makes a raylet one node of a cluster: it places each task
// submitted to it on a node (itself or a peer) and forwards what it does
// not run. The callbacks run on the raylet's goroutine and must not block
// (they send to the node's gateway actor).
type ClusterConfig struct {
	// Forward hands spec to node's raylet; results go to owner. hops is
	// the number of raylets the task will have gone through.
	Forward func(node ids.NodeID, spec *atollpb.TaskSpec, owner *actor.PID, hops int32)
	// CallActor sends an actor call to a host on another node (address is
	// the host's local address there); the result goes to caller.
	CallActor func(node ids.NodeID, address string, spec *atollpb.TaskSpec, caller *actor.PID)
	// Cancel cancels a task this raylet does not know (it may have been
	// forwarded); nonRecursive as CancelTask.non_recursive.
	Cancel func(id ids.TaskID, nonRecursive bool)
	// KillActor kills an actor this raylet does not host (every node
	// hears it; the host answers with KillHostedActor).
	KillActor func(m *atollpb.KillActor)
	// Borrows sends a borrower's standalone report to the owner's node
	// (it must not block). Optional: without it such reports are dropped.
	Borrows func(node ids.NodeID, m *atollpb.BorrowReport)
	// GeneratorAck, if set, passes on a generator task's ack for an
	// attempt this raylet does not run, which it may have forwarded: hops
	// is the link the ack came on (0 from an owner of this node, else the
	// ForwardGeneratorAck's), and it goes on the next one. Nil: dropped.
	GeneratorAck func(ack *atollpb.GeneratorAck, hops int32)
	// SpreadThreshold is the utilisation past which hybrid placement
	// leaves the local node; default DefaultSpreadThreshold.
	SpreadThreshold float64
}

// PeerView is the gateway's latest view of the other live nodes; it
// replaces the raylet's previous one.
type PeerView struct {
	Nodes []NodeView
}

// ForwardCall asks the raylet to send an actor call to a host on another
// node (from a worker process's proxy); the sender receives the result.
type ForwardCall struct {
	Node    ids.NodeID
	Address string
	Spec    *atollpb.TaskSpec
}

// KillHostedActor kills an actor if this raylet hosts it, and never asks
// the other nodes.
type KillHostedActor struct{ Msg *atollpb.KillActor }

// Drain makes the raylet place every task submitted or forwarded to it
// from now on on another node (when one can run it; a hard node affinity
// to this node still runs here), while the tasks it queued or runs
// already finish here. It is how a node being drained stops taking work;
// there is no way back (the node leaves the cluster when drained).
//
// IfIdle drains only an idle node (the autoscaler's drain of a node it
// saw idle, which may have taken work since): Reply, if set, gets what
// keeps the node busy ("" once it drains).
type Drain struct {
	IfIdle bool
	Reply  func(busy string)
}

// NodeGone tells the raylet a node left the cluster: the actors it hosts
// for owners on that node die with them (their handles are gone), except
// detached ones, which outlive their owner.
type NodeGone struct{ Node ids.NodeID }

// SplitActorAddress splits a cluster actor address "<node hex>/<local>"
// into the node and the host's local address; a plain local address
// yields a zero node.
func SplitActorAddress(address string) (ids.NodeID, string) {
	if i := strings.IndexByte(address, '/'); i > 0 && i == 2*ids.Len16 {
		var node ids.NodeID // decoded in place: every actor call splits its address
		if _, err := hex.Decode(node[:], []byte(address[:i])); err == nil {
			return node, address[i+1:]
		}
	}
	return ids.NodeID{}, address
}
