package node

import (
	"context"

	inode "github.com/atoll-runtime/atoll/internal/node"
	"github.com/atoll-runtime/atoll/internal/nodeconfig"
)

// Config is a node's settings. The zero Config is an embedded single
// node (what atoll.Init runs); Head starts a new cluster and Address
// joins one. Each field's doc gives its default and why, and what it
// means on which kind of node; Start applies the defaults and refuses
// invalid or conflicting settings with atoll.ErrInvalidArgument.
//
// Config is defined in an internal package, where the node's assembly,
// `atoll start`'s flags and atoll.Init's options all write the same
// fields: `go doc github.com/atoll-runtime/atoll/internal/nodeconfig.Config`
// lists them.
type Config = nodeconfig.Config

// Credentials prove a node to its cluster and key its channels: the
// cluster secret (or a file holding it) and TLS files. Empty fields are
// read from ATOLL_SECRET, ATOLL_SECRET_FILE, ATOLL_NATS_CREDS and
// ATOLL_TLS_CERT, _KEY and _CA; a head that finds no secret generates
// one (Node.Secret).
type Credentials = nodeconfig.Credentials

// Well-known ports, and the values of Config fields that mean "none"
// or "any".
const (
	// DefaultPort is the head's NATS client port: the cluster's address.
	DefaultPort = nodeconfig.DefaultPort
	// DefaultGossipPort is every node's memberlist port (UDP and TCP).
	DefaultGossipPort = nodeconfig.DefaultGossipPort
	// DefaultTransferPort is the port a node serves its objects on.
	DefaultTransferPort = nodeconfig.DefaultTransferPort
	// DefaultDashboardPort is the head's dashboard port (Ray's).
	DefaultDashboardPort = nodeconfig.DefaultDashboardPort
	// DefaultMetricsPort is the Prometheus port `atoll start` serves on.
	DefaultMetricsPort = nodeconfig.DefaultMetricsPort
	// MetricsAnyPort as Config.MetricsPort serves metrics on a free port
	// (Node.MetricsAddress says which).
	MetricsAnyPort = nodeconfig.MetricsAnyPort
	// NoCPUs as Config.NumCPUs gives a node no CPU slots: it runs no
	// tasks that need a CPU (a head serving only the control plane).
	NoCPUs = nodeconfig.NoCPUs
)

// Node is a running node. Its methods are safe for concurrent use.
type Node struct {
	n *inode.Node
}

// Start starts a node as cfg describes and returns once it serves: the
// control plane answers, the node has joined the gossip and registered
// with the cluster. On error everything started so far is stopped again.
func Start(ctx context.Context, cfg Config) (*Node, error) {
	n, err := inode.Start(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return &Node{n: n}, nil
}

// ID is the node's id (32 hex digits, as `atoll status` shows it).
func (n *Node) ID() string { return n.n.ID().String() }

// Address is the cluster address other nodes and drivers join
// (Config.Address, atoll.WithAddress): on a head its NATS host:port, on
// a joining node the address it joined; "" on an embedded node.
func (n *Node) Address() string { return n.n.Address() }

// Secret is the cluster secret the node holds (64 hex digits; "" on an
// embedded node): what other nodes and drivers need to join
// (Credentials.Secret, atoll.WithSecret). A head given none generated it.
func (n *Node) Secret() string { return n.n.Secret() }

// DashboardURL is the dashboard's address (http://host:port) on a head
// that serves it (Config.Dashboard), else "".
func (n *Node) DashboardURL() string { return n.n.DashboardURL() }

// MetricsAddress is where the node serves Prometheus metrics (host:port,
// GET /metrics; Config.MetricsPort), or "" if it serves none.
func (n *Node) MetricsAddress() string { return n.n.MetricsAddress() }

// DeclaredDead is closed when the cluster declared this node dead (it
// missed the failure timeout: paused, partitioned or overloaded; its
// work went elsewhere and the cluster will not use it again) or a part
// of it failed for good. The program should then Stop it; `atoll start`
// exits with an error.
func (n *Node) DeclaredDead() <-chan struct{} { return n.n.DeclaredDead() }

// Drained is closed when the node, drained (`atoll drain`,
// atoll.DrainNode), was told by the head to leave the cluster: the
// program should then Stop it. It never closes on an embedded node.
func (n *Node) Drained() <-chan struct{} { return n.n.Drained() }

// Stop stops the node: a cluster node leaves the cluster gracefully,
// running tasks are cancelled and worker processes stopped, the
// embedded NATS server (a head's) shut down and the session directory
// removed. A head keeps its GCS directory (Config.GCSDir), so a head
// started again on it remembers the cluster. Later calls return the
// first call's result.
func (n *Node) Stop(ctx context.Context) error { return n.n.Stop(ctx) }
