package node

import (
	"io"
	"log/slog"
	"math"
	"net"
	goruntime "runtime"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/atoll-runtime/atoll/amm"
	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/faultplan"
	"github.com/atoll-runtime/atoll/internal/actors"
	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/raylet"
)

// Config configures a node. Zero fields take the documented defaults;
// Start applies them and rejects invalid or conflicting settings with
// ErrInvalidArgument. Fields that cannot travel as JSON (EnvNode) are
// tagged json:"-".
//
// What kind of node it is follows from Head, Address and Driver:
//
//   - neither Head nor Address (the zero Config): an embedded single node,
//     what atoll.Init builds with no address. Its nats-server runs in
//     process with no TCP listener; it runs the GCS, the store and the
//     raylet; it has no gateway and opens no port.
//   - Head: a cluster's head (`atoll start --head`): the control plane (an
//     embedded nats-server listening on NodeIP:Port, or the one at
//     NATSURL, and the GCS), its store and raylet, and a gateway to the
//     other nodes.
//   - Address: a node joining the cluster whose head is at Address
//     (`atoll start --address`): store, raylet and gateway.
//   - Address and Driver: the node a driver runs for itself when it joins
//     a cluster (atoll.Init with WithAddress): it holds the objects the
//     driver puts; with no CPUs by default it advertises nothing, so
//     placement sends its work to the other nodes; Start returns once it
//     heard from every node the GCS lists alive (3 s at most).
type Config struct {
	// Head starts the cluster's control plane on this node: the embedded
	// nats-server with JetStream (unless NATSURL is set) and the GCS.
	Head bool
	// Address is the head's address (host:port, nats:// URL, or "auto"
	// for AddressFile) a node joins. Exclusive with Head.
	Address string
	// Driver marks a driver's own node (see above); needs Address.
	Driver bool
	// NATSURL, on the head, uses an existing NATS server or cluster (with
	// JetStream) instead of the embedded one.
	NATSURL string
	// FaultInjection, on a head with the embedded NATS server, lets the
	// cluster's nodes and clients inject faults into other nodes
	// (atoll.KillNode, atoll.PartitionNode, a fault plan's kill-node and
	// partition actions); without it they fail with ErrPermissionDenied
	// and the server refuses the subjects to everyone but the head. On an
	// existing NATS server (NATSURL) its own permissions decide.
	FaultInjection bool `json:",omitempty"`
	// NodeIP is the address other nodes reach this node at (gossip,
	// object transfer, the head's NATS listener); default 127.0.0.1.
	NodeIP string
	// Port is the head's NATS client port; default DefaultPort, 0 picks
	// a free port with RandomPorts. Used only by a head without NATSURL.
	Port int
	// GossipPort is the memberlist port; default DefaultGossipPort.
	GossipPort int
	// TransferPort is the object-transfer port; default
	// DefaultTransferPort.
	TransferPort int
	// RandomPorts makes zero ports mean "pick a free port" instead of
	// the defaults (tests, and several nodes on one machine). A driver's
	// node always picks free ports for zero ones.
	RandomPorts bool
	// NumCPUs is the node's CPU slots (fractions allowed); default (0) the
	// machine's CPU count, or none on a driver's node; NoCPUs for a node
	// that runs no tasks needing a CPU.
	NumCPUs float64
	// Resources are custom resources, e.g. {"GPU": 1}. A node with CPUs
	// also advertises its physical memory as "memory" unless given here.
	Resources map[string]float64
	// ObjectStoreMemory is the arena size in bytes; default 30% of RAM.
	ObjectStoreMemory uint64
	// StoreFullTimeout is how long a creation waits for space before it
	// fails with ObjectStoreFull; default 10 s.
	StoreFullTimeout time.Duration
	// PrefaultStore touches every page of the arena at start.
	PrefaultStore bool
	// SpillDirs are where objects spill (round-robin); default a "spill"
	// directory in the session directory. NoSpill turns spilling off.
	SpillDirs []string
	NoSpill   bool
	// Saturation bounds root tasks to Saturation × CPU slots; default 1.0,
	// +Inf disables it (raylet.Config.Saturation).
	Saturation float64
	// PipelineDepth is how many tasks a worker process may hold at once
	// (raylet.Config.PipelineDepth); default raylet.DefaultPipelineDepth,
	// 1 turns pipelining off.
	PipelineDepth int
	// IdleWorkerTimeout is how long a surplus idle worker lives; default
	// 10 s.
	IdleWorkerTimeout time.Duration
	// TimelineCap is how many finished task attempts the raylet keeps for
	// `atoll timeline`; default raylet.TimelineCap (4,096).
	TimelineCap int
	// WorkerBinary is the program worker processes run. On a head or a
	// joining node it runs every job's workers; default each job's own
	// driver binary (TaskSpec.worker_binary). On an embedded or a
	// driver's node, default this program (os.Executable()) with its
	// arguments.
	WorkerBinary string
	// WorkerOutput receives worker processes' stdout and stderr; default
	// os.Stderr.
	WorkerOutput io.Writer `json:"-"`
	// Executor, when set, runs tasks and actors on goroutines of this
	// process (goroutine workers; the root package's executor); nil runs
	// them in worker processes. Embedded nodes only.
	Executor raylet.Executor `json:"-"`
	// Deliver, if set, hands a task's or call's result straight to its
	// owner when that owner lives in this process (the driver's owner
	// table), skipping the owner's mailbox (raylet.Config.Deliver).
	Deliver func(owner *actor.PID, res *atollpb.TaskResult) bool `json:"-"`
	// DeliverBorrows, if set, hands a borrower's standalone report to
	// the owner in this process (raylet.Config.DeliverBorrows).
	DeliverBorrows func(*atollpb.BorrowReport) bool `json:"-"`
	// FailureTimeout bounds the time to declare a failed node dead;
	// default 5 s (at least 1.2 s).
	FailureTimeout time.Duration
	// SessionDir holds the node's spill files (and an embedded single
	// node's NATS data); default a fresh temporary directory, removed on
	// Stop.
	SessionDir string
	// GCSDir, on a head running the embedded NATS server, holds that
	// server's JetStream store: the GCS's tables. It is kept when the head
	// stops, so a head started again on it remembers the cluster's nodes,
	// actors and jobs; default DefaultGCSDir() (StateDir()/gcs). Made
	// 0700; one head at a time (see gcsdir.go). Not for other nodes, nor
	// with NATSURL (the GCS's state is on that server).
	GCSDir string
	// Faults, when set, is installed on the node's actors (GCS, store,
	// raylet and what the raylet spawns, actors spawned with SpawnNamed).
	Faults *actors.FaultInjector `json:"-"`
	// FaultPoints, when set, are a fault plan's rules at points for this
	// node (faultplan.Plan.Points): kill-worker rules go to the raylet's
	// worker processes, spill-full and spill-slow to the store's spiller.
	// Their faults go to Faults' log.
	FaultPoints *faultplan.Points `json:"-"`
	// TracerProvider receives the GCS's and raylet's spans; default an
	// OTLP exporter when OTEL_EXPORTER_OTLP_* is set (shut down on Stop),
	// else the global provider.
	TracerProvider trace.TracerProvider `json:"-"`
	// MeterProvider receives the node's metrics (store bytes, spilling,
	// queued and running tasks, workers); default the global provider.
	MeterProvider metric.MeterProvider `json:"-"`
	// MetricsPort makes the node serve its metrics to Prometheus (GET
	// /metrics on NodeIP:MetricsPort, through OpenTelemetry's Prometheus
	// exporter); 0 serves none, MetricsAnyPort picks a free port
	// (Node.MetricsAddress says which). `atoll start` defaults to
	// DefaultMetricsPort.
	MetricsPort int
	// MetricsBestEffort makes a metrics port that cannot be bound a
	// warning instead of a failed Start (`atoll start`'s default port).
	MetricsBestEffort bool
	// AMM runs the Active Memory Manager on the head (package amm): every
	// AMMInterval it drops the copies of objects no longer needed and
	// creates those a tracked replica count asks for (atoll.SetReplicas). Off by
	// default; cluster.EnvAMM ("1"/"0") overrides it, and
	// cluster.EnvAMMInterval the interval. Ignored on other nodes.
	AMM bool
	// AMMInterval is the AMM's interval; default 2 s.
	AMMInterval time.Duration
	// AMMPolicies are the AMM's policies, in order; default
	// amm.Replicate, then amm.ReduceReplicas. cluster.EnvAMMPolicies
	// (e.g. "Replicate,Rebalance:0.05") overrides them.
	AMMPolicies []amm.Policy `json:"-"`
	// Dashboard, on a head, serves the web dashboard (package dashboard)
	// on NodeIP:DashboardPort. Off unless set; `atoll start --head` sets
	// it (--include-dashboard).
	Dashboard bool `json:",omitempty"`
	// DashboardPort is the dashboard's HTTP port; default
	// DefaultDashboardPort (8265, Ray's), 0 with RandomPorts picks a free
	// port.
	DashboardPort int `json:",omitempty"`
	// DashboardTraceURL, if set, links every task the dashboard lists to
	// its trace: "{trace_id}" in it is replaced by the task's trace id,
	// e.g. http://localhost:16686/trace/{trace_id} for Jaeger.
	DashboardTraceURL string `json:",omitempty"`
	// LogFile is the file this node's output goes to (`atoll start` sets
	// it for the nodes it runs in the background): the node serves its
	// end to the dashboard (atoll.node.<id>.logs). Empty: it has none.
	LogFile string `json:",omitempty"`
	// Credentials prove the node to the cluster and key its channels
	// (see Credentials; empty fields come from the environment).
	Credentials
	// Logger; default slog.Default().
	Logger *slog.Logger `json:"-"`
}

// NoCPUs as Config.NumCPUs gives a node no CPU slots: it runs no tasks
// that need a CPU (a head serving only the control plane, say).
const NoCPUs = -1

// embedded reports whether the config describes an embedded single node.
func (c *Config) embedded() bool { return !c.Head && c.Address == "" }

// clustered reports whether the node is part of a multi-node cluster.
func (c *Config) clustered() bool { return !c.embedded() }

// runsGCS reports whether the node hosts the control plane.
func (c *Config) runsGCS() bool { return c.Head || c.embedded() }

// withDefaults validates c and fills in its defaults.
func (c Config) withDefaults() (Config, error) {
	switch {
	case c.Head && c.Address != "":
		return c, errs.Invalidf("node.Config: Head and Address are exclusive (the head is the address others join)")
	case c.Driver && c.Address == "":
		return c, errs.Invalidf("node.Config: a driver's node joins a cluster (Address)")
	case c.NATSURL != "" && !c.Head:
		return c, errs.Invalidf("node.Config: NATSURL is the head's (other nodes join Address)")
	case c.GCSDir != "" && !c.Head:
		return c, errs.Invalidf("node.Config: GCSDir is the head's (where its embedded NATS keeps the GCS's tables)")
	case c.GCSDir != "" && c.NATSURL != "":
		return c, errs.Invalidf("node.Config: GCSDir and NATSURL conflict: with NATSURL the GCS's tables live on that NATS server")
	case c.Executor != nil && c.clustered():
		return c, errs.Invalidf("node.Config: goroutine workers (Executor) are for an embedded node; cluster nodes run worker processes")
	}
	switch cpus := c.NumCPUs; {
	case math.IsNaN(cpus) || math.IsInf(cpus, 0):
		return c, errs.Invalidf("node.Config.NumCPUs %g: want a number", cpus)
	case cpus == NoCPUs:
		c.NumCPUs = 0
	case cpus < 0:
		return c, errs.Invalidf("node.Config.NumCPUs %g: must not be negative (NoCPUs for none)", cpus)
	case cpus == 0 && !c.Driver:
		c.NumCPUs = float64(goruntime.NumCPU())
	}
	if c.clustered() {
		// An embedded node opens no port and gossips with no one: it
		// ignores these settings.
		for _, p := range []struct {
			name string
			v    int
		}{{"Port", c.Port}, {"GossipPort", c.GossipPort}, {"TransferPort", c.TransferPort}} {
			if p.v < 0 || p.v > math.MaxUint16 {
				return c, errs.Invalidf("node.Config.%s %d: want 0 to 65535", p.name, p.v)
			}
		}
		if c.FailureTimeout < 0 {
			return c, errs.Invalidf("node.Config.FailureTimeout %v: must not be negative", c.FailureTimeout)
		}
		if c.NodeIP == "" {
			c.NodeIP = "127.0.0.1"
		}
		if net.ParseIP(c.NodeIP) == nil {
			return c, errs.Invalidf("node.Config.NodeIP %q: want an IP address", c.NodeIP)
		}
		if !c.RandomPorts && !c.Driver {
			c.Port = orDefault(c.Port, DefaultPort)
			c.GossipPort = orDefault(c.GossipPort, DefaultGossipPort)
			c.TransferPort = orDefault(c.TransferPort, DefaultTransferPort)
		}
	}
	if err := c.dashboardDefaults(); err != nil {
		return c, err
	}
	if c.AMMInterval < 0 {
		return c, errs.Invalidf("node.Config.AMMInterval %v: must not be negative", c.AMMInterval)
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c, nil
}

func orDefault(v, def int) int {
	if v == 0 {
		return def
	}
	return v
}
