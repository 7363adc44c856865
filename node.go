package atoll

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/atoll-runtime/atoll/internal/errs"
)

// Well-known ports of a cluster node. Each accepts 0 (pick a free port),
// which tests use.
const (
	// DefaultPort is the head's NATS client port: the address other
	// nodes and drivers join (`atoll start --address HOST:6380`).
	DefaultPort = 6380
	// DefaultGossipPort is the memberlist port (UDP and TCP) of every node.
	DefaultGossipPort = 7946
	// DefaultTransferPort is the port a node serves its objects on to
	// other nodes (Ray's object manager port).
	DefaultTransferPort = 8076
)

// EnvAddress is the environment variable a driver reads, when Init is
// given no WithAddress, to connect to a running cluster ("auto" reads the
// address file `atoll start --head` wrote).
const EnvAddress = "ATOLL_ADDRESS"

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

// EnvNode, set to a JSON-encoded NodeConfig, makes a program's atoll.Init
// run a cluster node instead (internal/testcluster starts test binaries
// this way, so their nodes run the test's functions): the node prints
// NodeReadyPrefix and a JSON NodeReady line on stdout once it serves, and
// exits when it receives SIGTERM or SIGINT.
const EnvNode = "ATOLL_NODE"

// NodeReadyPrefix starts the line a node started through EnvNode prints
// once it is ready.
const NodeReadyPrefix = "ATOLL_NODE_READY "

// NodeReady describes a started node.
type NodeReady struct {
	NodeID string `json:"node_id"`
	// Address is the cluster address (the head's NATS host:port) to give
	// other nodes and drivers.
	Address string `json:"address"`
	PID     int    `json:"pid"`
}

// Node is a running cluster node.
type Node struct {
	rt *core
}

// ID is the node's id (hex).
func (n *Node) ID() string { return n.rt.nodeID.String() }

// Address is the cluster address to give other nodes and drivers.
func (n *Node) Address() string { return n.rt.clusterAddress }

// ClusterStatus is what `atoll status` shows.
type ClusterStatus struct {
	Address string        `json:"address"`
	Nodes   []ClusterNode `json:"nodes"`
}

// ClusterNode is one node as the GCS and its latest load report know it.
type ClusterNode struct {
	NodeID   string `json:"node_id"`
	Hostname string `json:"hostname"`
	IsHead   bool   `json:"is_head"`
	Driver   bool   `json:"driver"` // a driver's node (holds its objects, runs no tasks by default)
	Alive    bool   `json:"alive"`
	// Reporting: the node's load report arrived (an alive node that does
	// not report may have died unobserved).
	Reporting bool               `json:"reporting"`
	Total     map[string]float64 `json:"total"`
	Available map[string]float64 `json:"available"`
	Queued    int                `json:"queued"`
	Running   int                `json:"running"`
	StoreUsed uint64             `json:"store_used"`
	StoreCap  uint64             `json:"store_capacity"`
	// Pulls counts the objects this node fetched from other nodes, and
	// PulledBytes their bytes.
	Pulls       uint64 `json:"pulls"`
	PulledBytes uint64 `json:"pulled_bytes"`
	// The store's contents and spilling (from the node's last report).
	Objects       uint64 `json:"objects"`
	PinnedBytes   uint64 `json:"pinned_bytes"`
	SpilledBytes  uint64 `json:"spilled_bytes"`       // on disk now
	SpillFiles    uint64 `json:"spill_files"`         // on disk now
	SpilledTotal  uint64 `json:"spilled_bytes_total"` // ever
	RestoredTotal uint64 `json:"restored_bytes_total"`
}

// StartNode starts a cluster node in this process: with cfg.Head the
// control plane (NATS, GCS) too. Worker processes run each job's driver
// binary unless cfg.WorkerBinary is set. Stop it with Node.Stop.
func StartNode(ctx context.Context, cfg NodeConfig) (*Node, error) {
	return startNode(ctx, cfg)
}

// Stop leaves the cluster gracefully and stops the node.
func (n *Node) Stop(ctx context.Context) error { return n.rt.stop(ctx) }

// GetClusterStatus connects to the cluster at address and reports its
// nodes ("" or "auto": the address file of the local head).
func GetClusterStatus(ctx context.Context, address string) (*ClusterStatus, error) {
	return clusterStatus(ctx, address)
}

// AddressFile is where `atoll start --head` records the cluster address,
// for `atoll start`, `atoll status` and drivers given "auto".
func AddressFile() string { return filepath.Join(os.TempDir(), "atoll", "current_cluster") }

// ResolveAddress turns a user-given cluster address into a NATS URL: ""
// and "auto" read AddressFile; "host:port" gets the nats:// scheme.
func ResolveAddress(address string) (string, error) {
	if address == "" || address == "auto" {
		b, err := os.ReadFile(AddressFile())
		if err != nil {
			return "", errs.NotFoundf("no cluster address given and none recorded in %s (is a head running? `atoll start --head`): %v", AddressFile(), err)
		}
		address = strings.TrimSpace(string(b))
	}
	if !strings.Contains(address, "://") {
		address = "nats://" + address
	}
	return address, nil
}

// ClusterAddress is the address of the cluster this driver is connected
// to, or "" when it runs the embedded single-node cluster.
func ClusterAddress() string {
	rt := current()
	if rt == nil || rt.cfg.address == "" {
		return ""
	}
	return rt.clusterAddress
}
