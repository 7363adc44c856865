package atoll

import (
	"context"
	"log/slog"
	"time"
)

// NodeConfig configures a cluster node started with StartNode (what
// `atoll start` runs). Zero fields take the documented defaults.
type NodeConfig struct {
	// Head starts the cluster's control plane on this node: the embedded
	// nats-server with JetStream (unless NATSURL is set) and the GCS.
	Head bool
	// Address is the head's address (host:port or nats:// URL) a non-head
	// node joins. Required unless Head.
	Address string
	// NATSURL, on the head, uses an existing NATS server or cluster (with
	// JetStream) instead of the embedded one.
	NATSURL string
	// NodeIP is the address other nodes reach this node at; default
	// 127.0.0.1.
	NodeIP string
	// Port is the head's NATS client port; default DefaultPort, 0 picks
	// a free port. Ignored when NATSURL is set or on non-head nodes.
	Port int
	// GossipPort is the memberlist port; default DefaultGossipPort, 0
	// picks a free port. UsePortDefaults leaves zero ports as 0.
	GossipPort int
	// TransferPort is the object-transfer port; default
	// DefaultTransferPort, 0 picks a free port.
	TransferPort int
	// RandomPorts makes zero ports mean "pick a free port" instead of
	// the defaults (tests).
	RandomPorts bool
	// NumCPUs is the node's CPU slots; default (0) the machine's CPU
	// count; NoCPUs for a node that runs no tasks.
	NumCPUs float64
	// Resources are custom resources, e.g. {"GPU": 1}.
	Resources map[string]float64
	// ObjectStoreMemory is the arena size in bytes; default 30% of RAM.
	ObjectStoreMemory uint64
	// WorkerBinary runs this node's worker processes for every job;
	// default each job's driver binary.
	WorkerBinary string
	// FailureTimeout bounds the time to declare a failed node dead;
	// default 5 s.
	FailureTimeout time.Duration
	// SessionDir holds the node's spill files and NATS data; default a
	// fresh temporary directory removed on Stop.
	SessionDir string
	// Logger; default slog.Default().
	Logger *slog.Logger
}

// NoCPUs as NodeConfig.NumCPUs gives a node no CPU slots: it runs no
// tasks that need a CPU (a head serving only the control plane, say).
const NoCPUs = -1

// Node is a running cluster node.
type Node struct {
	rt *core
}

// ID is the node's id (hex).
func (n *Node) ID() string { return n.rt.nodeID.String() }

// Address is the cluster address to give other nodes and drivers.
func (n *Node) Address() string { return n.rt.clusterAddress }

// StartNode starts a cluster node in this process: with cfg.Head the
// control plane (NATS, GCS) too. Worker processes run each job's driver
// binary unless cfg.WorkerBinary is set. Stop it with Node.Stop.
func StartNode(ctx context.Context, cfg NodeConfig) (*Node, error) {
	return startNode(ctx, cfg)
}

// Stop leaves the cluster gracefully and stops the node.
func (n *Node) Stop(ctx context.Context) error { return n.rt.stop(ctx) }

// ClusterAddress is the address of the cluster this driver is connected
// to, or "" when it runs the embedded single-node cluster.
func ClusterAddress() string {
	rt := current()
	if rt == nil || rt.cfg.address == "" {
		return ""
	}
	return rt.clusterAddress
}
