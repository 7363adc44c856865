package nodeconfig

import (
	"io"
	"log/slog"
	"time"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/atoll-runtime/atoll/amm"
	"github.com/atoll-runtime/atoll/internal/objectstore"
)

// Config is a node's settings: the one struct every way of starting a
// node fills (atoll.Init's options, `atoll start`'s flags, a program
// embedding a node, the test clusters). Zero fields take the documented
// defaults; WithDefaults applies them and rejects invalid or conflicting
// settings with ErrInvalidArgument. Fields that cannot travel as JSON
// (EnvNode) are tagged json:"-".
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
//     placement sends its work to the other nodes; it starts once it
//     heard from every node the GCS lists alive (3 s at most).
//
// The first sentence of each field's doc is its `atoll start` flag's
// usage (zz_generated_fielddocs.go; flags.go binds the flags).
type Config struct {
	// Head starts a new cluster: this node runs the control plane (a NATS
	// server with JetStream, and the GCS). The NATS server is embedded
	// unless NATSURL names one.
	Head bool
	// Address is the HOST:PORT (or nats:// URL) of the head to join, or
	// "auto" for the address the local head recorded. "auto" reads
	// AddressFile. Exclusive with Head.
	Address string
	// Driver marks the node a driver runs for itself when it joins a
	// cluster (see above; atoll.Init sets it with WithAddress). It needs
	// Address. A program running a node of its own leaves it false.
	Driver bool
	// NATSURL is an existing NATS server or cluster (with JetStream) the
	// head uses instead of starting its own; head only.
	NATSURL string
	// FaultInjection lets the cluster's nodes and drivers kill other
	// nodes and cut them off; head only. That is atoll.KillNode,
	// atoll.PartitionNode, and a fault plan's kill-node and partition.
	// Off by default, since a
	// production cluster should not let one job kill another's nodes:
	// the head's embedded NATS server then refuses those subjects to
	// everyone but the head, and the calls fail with ErrPermissionDenied.
	// On an existing NATS server (NATSURL) its own permissions decide.
	FaultInjection bool `json:",omitempty"`
	// NodeIP is the IP address other nodes reach this node at (gossip,
	// object transfer, the head's NATS listener). Default 127.0.0.1: a
	// node listens on no outside interface unless told to, and a cluster
	// on one machine needs no more.
	NodeIP string
	// Port is the head's NATS client port: the address other nodes and
	// drivers join. Default DefaultPort (6380), a fixed port so that the
	// address is known before the head starts; 0 with RandomPorts picks a
	// free one. Used only by a head without NATSURL.
	Port int
	// GossipPort is the memberlist port (UDP and TCP) failure detection
	// runs on. Default DefaultGossipPort (7946, memberlist's own).
	GossipPort int
	// TransferPort is the port the node serves its objects to other
	// nodes on. Default DefaultTransferPort (8076, Ray's object manager
	// port, so firewalls written for Ray fit).
	TransferPort int
	// RandomPorts makes zero ports mean "pick a free port" instead of
	// the defaults (tests, and several nodes on one machine). A driver's
	// node always picks free ports for zero ones: it must not take the
	// well-known ports of a node on its machine.
	RandomPorts bool
	// NumCPUs is the node's CPU slots (fractions allowed). Default (0)
	// the machine's CPU count, since a node runs one task per CPU at full
	// speed; none on a driver's node, whose work belongs on the cluster.
	// NoCPUs for a node that runs no tasks needing a CPU.
	NumCPUs float64
	// Resources are the node's custom resources, an amount by name:
	// {"GPU": 1} gives it a GPU. A node with CPUs also advertises its
	// physical memory as "memory" unless given here.
	Resources map[string]float64
	// ObjectStoreMemory is the object store's size in bytes (a hard
	// limit). Default 30% of physical memory, as Ray: room for objects
	// while tasks keep the rest.
	ObjectStoreMemory uint64
	// StoreFullTimeout is how long an object's creation waits for space
	// before it fails with ObjectStoreFull. Default 10 s: long enough for
	// spilling and frees to make room, short enough to report a store
	// that stays full.
	StoreFullTimeout time.Duration
	// PrefaultStore touches every page of the object store at start, so
	// that writes never page-fault. Off by default: it holds the store's
	// whole memory from the start.
	PrefaultStore bool
	// StoreHugePages says whether the object store's shared memory is
	// backed by 2 MiB pages, which make scans of large objects faster.
	// Default auto: where the system allows them for shared memory
	// (shmem_enabled set to advise or always); on fails the node's start
	// where it does not; off keeps 4 KiB pages.
	StoreHugePages objectstore.HugePages
	// SpillDirs are the directories objects spill to (round-robin).
	// Default a "spill" directory in the session directory, removed with
	// it.
	SpillDirs []string
	// NoSpill turns spilling off: a full store makes creations wait, then
	// fail with ObjectStoreFull.
	NoSpill bool
	// Saturation bounds the root tasks (tasks with no object arguments)
	// running at once, as a multiple of the CPU slots. Default 1.0:
	// running tasks that consume data first keeps a pipeline from
	// flooding memory (Dask's worker-saturation); +Inf disables it.
	Saturation float64
	// PipelineDepth is how many tasks a worker process may hold at once.
	// Default raylet.DefaultPipelineDepth (16), enough to hide the round
	// trip to the raylet between short tasks; 1 turns pipelining off. An
	// actor's process holds twice this many calls beyond those it runs.
	PipelineDepth int
	// WorkerHeapFloor is the garbage a worker process may build up before
	// its collector runs, at least, however little it holds (a ballast in
	// its heap, and GOGC 50). Default 8 MiB: a task that computes over
	// tens of MiB of fresh buffers then costs about one collection instead
	// of several.
	// Setting GOGC or GOMEMLIMIT in the environment turns it off.
	WorkerHeapFloor uint64
	// IdleWorkerTimeout is how long a surplus idle worker process lives.
	// Default 10 s: it outlives a pause between a program's phases, then
	// gives its memory back.
	IdleWorkerTimeout time.Duration
	// TimelineCap is how many finished task attempts the raylet keeps for
	// `atoll timeline` and the dashboard. Default raylet.TimelineCap
	// (4,096), a few seconds of a busy node in a few MiB.
	TimelineCap int
	// WorkerBinary is the program the node's worker processes run. On a
	// head or a joining node it runs every job's workers; default each
	// job's own driver binary (TaskSpec.worker_binary), so that one node
	// serves programs it was not started with. On an embedded or a
	// driver's node, default this program (os.Executable()) with its
	// arguments.
	WorkerBinary string
	// JobBinariesMaxBytes bounds the bytes of submitted jobs' binaries
	// the machine keeps once their jobs end (content-addressed, so that
	// the same build submitted again uploads nothing): installing one
	// removes the least recently used others past it. Default 8 GiB.
	JobBinariesMaxBytes uint64
	// WorkerOutput receives worker processes' stdout and stderr; default
	// os.Stderr, where a program's own output goes.
	WorkerOutput io.Writer `json:"-"`
	// FailureTimeout is the time the cluster takes to declare a failed
	// node dead. Default 5 s (at least 1.2 s): a paused or partitioned
	// node gets a few seconds before its work goes elsewhere.
	FailureTimeout time.Duration
	// RejoinGrace is how long a head, once started, waits before it marks
	// dead the nodes its GCS lists alive but has not heard from, and how
	// often it checks again for registrations never followed by a load
	// report; head only. Default three failure timeouts, at least 10 s:
	// live nodes reconnect within a quarter second of the head's NATS
	// server listening, then report every 100 ms.
	RejoinGrace time.Duration
	// SessionDir is the directory of the node's spill files (and an
	// embedded single node's NATS data). Default a fresh temporary
	// directory, removed on Stop (and by the next node on the machine if
	// the process died).
	SessionDir string
	// GCSDir is the directory of the GCS's state (the embedded NATS
	// server's JetStream store), kept across restarts; head only. A head
	// started again on it remembers the cluster's nodes, actors and jobs.
	// Default DefaultGCSDir() (StateDir()/gcs). Made 0700; one head at a
	// time. Not with NATSURL (the GCS's state is on that server).
	GCSDir string
	// TracerProvider receives the GCS's and raylet's spans; default an
	// OTLP exporter when OTEL_EXPORTER_OTLP_* is set (shut down on Stop),
	// else the global provider.
	TracerProvider trace.TracerProvider `json:"-"`
	// MeterProvider receives the node's metrics (store bytes, spilling,
	// queued and running tasks, workers); default the global provider.
	MeterProvider metric.MeterProvider `json:"-"`
	// MetricsPort is the port the node serves Prometheus metrics on (GET
	// /metrics on its IP address, through OpenTelemetry's Prometheus
	// exporter).
	// Default 0, none: a program embedding a node chooses; `atoll start`
	// defaults to DefaultMetricsPort. MetricsAnyPort picks a free port
	// (Node.MetricsAddress says which).
	MetricsPort int
	// MetricsBestEffort makes a metrics port that cannot be bound a
	// warning instead of a failed start (`atoll start`'s default port).
	MetricsBestEffort bool
	// AMM runs the Active Memory Manager's policies (package amm); head
	// only. Every AMMInterval it drops the copies of objects no longer
	// needed and creates those a tracked replica count asks for
	// (atoll.SetReplicas). Off by default: it moves data on its own, so
	// a cluster opts in. EnvAMM overrides it.
	AMM bool
	// AMMInterval is the Active Memory Manager's interval. Default 2 s
	// (Dask's): often enough to follow a computation, rare enough to cost
	// nothing. EnvAMMInterval overrides it.
	AMMInterval time.Duration
	// AMMPolicies are the Active Memory Manager's policies, in order.
	// Default amm.Replicate, then amm.ReduceReplicas. EnvAMMPolicies
	// (e.g. "Replicate,Rebalance:0.05") overrides them.
	AMMPolicies []amm.Policy `json:"-"`
	// Dashboard serves the web dashboard; head only. It listens on
	// DashboardHost:DashboardPort (package dashboard). Off unless set (a
	// program embedding a node chooses); `atoll start --head` sets it.
	Dashboard bool `json:",omitempty"`
	// DashboardHost is the address the dashboard listens on. Default
	// 127.0.0.1: this machine only (open it elsewhere through an SSH
	// tunnel, or listen on 0.0.0.0, where its API needs the reader token).
	DashboardHost string `json:",omitempty"`
	// DashboardNames are host names (comma-separated) the dashboard
	// answers to besides IP addresses, localhost and this machine's name:
	// the names users reach it by (a request naming another host is
	// refused, against DNS rebinding).
	DashboardNames string `json:",omitempty"`
	// DashboardPort is the dashboard's HTTP port. Default
	// DefaultDashboardPort (8265, Ray's, so that users find it); 0 with
	// RandomPorts picks a free port.
	DashboardPort int `json:",omitempty"`
	// DashboardTraceURL links the dashboard's tasks to their traces:
	// "{trace_id}" in it is replaced by a task's trace id, e.g.
	// http://localhost:16686/trace/{trace_id} for Jaeger.
	DashboardTraceURL string `json:",omitempty"`
	// Autoscaler is a cluster file (YAML: node types with their min and
	// max, the provider that launches them); head only. The head runs the
	// autoscaler with it, which adds nodes while work waits and removes
	// idle ones (`atoll up` sets it). Default none: the cluster is the
	// nodes started by hand.
	Autoscaler string `json:",omitempty"`
	// NodeType is the node type of the autoscaler's cluster file the node
	// runs as, reported to the GCS and in its load reports. The
	// autoscaler's providers set it (EnvNodeType); empty for a node
	// started by hand.
	NodeType string `json:",omitempty"`
	// InstanceID is the id the autoscaler's provider gave the instance the
	// node runs on (a process, a pod), reported to the GCS: how the
	// autoscaler knows its node. Providers set it (EnvInstanceID).
	InstanceID string `json:",omitempty"`
	// LogFile is the file the node's output goes to, served to the
	// dashboard and `atoll logs` (`atoll start` sets it for the nodes it
	// runs in the background). Empty: the node has none.
	LogFile string `json:",omitempty"`
	// Credentials prove the node to the cluster and key its channels
	// (empty fields come from the environment: see Credentials).
	Credentials
	// Logger receives the node's logs; default slog.Default().
	Logger *slog.Logger `json:"-"`
}

// NoCPUs as Config.NumCPUs gives a node no CPU slots: it runs no tasks
// that need a CPU (a head serving only the control plane, say).
const NoCPUs = -1

// Well-known ports of a cluster node.
const (
	// DefaultPort is the head's NATS client port: the address other
	// nodes and drivers join (`atoll start --address HOST:6380`).
	DefaultPort = 6380
	// DefaultGossipPort is the memberlist port (UDP and TCP) of every node.
	DefaultGossipPort = 7946
	// DefaultTransferPort is the port a node serves its objects on to
	// other nodes (Ray's object manager port).
	DefaultTransferPort = 8076
	// DefaultDashboardPort is the dashboard's default port (Ray's).
	DefaultDashboardPort = 8265
	// DefaultMetricsPort is the Prometheus port `atoll start` serves on by
	// default (9464, the OpenTelemetry Prometheus exporter's usual port).
	DefaultMetricsPort = 9464
)

// MetricsAnyPort as Config.MetricsPort serves metrics on a free port.
const MetricsAnyPort = -1

// Embedded reports whether c describes an embedded single node (neither
// Head nor Address).
func (c *Config) Embedded() bool { return !c.Head && c.Address == "" }

// RunsGCS reports whether the node hosts the control plane (a head or
// an embedded node).
func (c *Config) RunsGCS() bool { return c.Head || c.Embedded() }
