package gcs

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"regexp"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/ids"
)

// Defaults applied to zero fields of Config and ClientOptions.
const (
	// DefaultPrefix is the first token of every subject and bucket name.
	DefaultPrefix = "atoll"
	// DefaultRequestTimeout bounds one JetStream operation of the server
	// and one request of a client: long enough for a KV write on a busy
	// disk, short enough that a caller notices a dead GCS quickly.
	DefaultRequestTimeout = 5 * time.Second
	// DefaultReplicas keeps one copy of each bucket, right for the embedded
	// single-server default; use 3 on a NATS cluster.
	DefaultReplicas = 1

	// DefaultMaxDeadNodes is how many dead nodes the GCS remembers, as
	// Ray's maximum_gcs_dead_node_cached_count (1000). Every driver that
	// joins a cluster adds a node that dies when it exits, so a long-lived
	// cluster needs the cap; 1000 entries of ~200 B keep `atoll list
	// nodes` (one NATS message, 1 MiB by default) at ~200 KB.
	DefaultMaxDeadNodes = 1000
	// DefaultMaxDeadActors is how many dead actors the GCS remembers. Ray
	// keeps 100000 (RAY_maximum_gcs_destroyed_actor_cached_count), but a
	// list reply here is one NATS message (1 MiB by default) and a dead
	// actor's entry, with its death cause, is ~250 B: 2000 take ~0.5 MiB
	// and leave room for the live actors.
	DefaultMaxDeadActors = 2000
	// DefaultMaxFinishedJobs is how many finished jobs the GCS remembers:
	// every driver run is a job, so a long-lived cluster accumulates them;
	// 1000 entries of ~150 B keep `atoll list jobs` at ~150 KB, enough
	// history to look back over a day of hourly jobs many times over.
	DefaultMaxFinishedJobs = 1000

	// DefaultMaxNodes, DefaultMaxActors and DefaultMaxJobs bound the live
	// nodes, live actors (pending, alive or restarting) and running jobs:
	// anything on the cluster's NATS can register them, and every entry
	// lives in the head's memory and KV until it dies (or finishes). A
	// registration past a cap fails with RESOURCE_EXHAUSTED. The caps are
	// far above what a cluster holds (Ray's largest tested clusters are a
	// few thousand nodes); they are there to stop a runaway or hostile
	// client, not to size a cluster.
	DefaultMaxNodes  = 10000
	DefaultMaxActors = 100000
	DefaultMaxJobs   = 10000

	// DefaultNodesBucketBytes, DefaultActorsBucketBytes and
	// DefaultJobsBucketBytes are the MaxBytes of the tables' KV buckets
	// (the bucket's stream; JetStream refuses a new key past it, while
	// updates of existing keys still go through). An entry takes about
	// 200-400 bytes with the stream's own overhead, so the defaults hold
	// some 80,000 nodes or jobs and 300,000 actors, several times the
	// caps above with the dead entries kept; together they bound what
	// the GCS can hold in memory. JetStream reserves them on the NATS
	// server's disk (an embedded server offers 75% of its free disk), so
	// a head on a very small disk may need them lowered.
	DefaultNodesBucketBytes  = 32 << 20
	DefaultActorsBucketBytes = 128 << 20
	DefaultJobsBucketBytes   = 32 << 20
	// DefaultMaxEntryBytes is the largest entry (encoded) a bucket takes
	// (MaxValueSize): a node, actor or job is a few hundred bytes; a long
	// job entrypoint fits many times over, and an actor's death cause that
	// does not (a task error may carry a 64 KiB stack) is shortened to fit
	// (fitCause).
	DefaultMaxEntryBytes = 64 << 10
)

// Environment variables that set the caps when the Config leaves them 0
// (as Ray reads RAY_maximum_gcs_* from the environment), so a node
// started by `atoll start` or a test cluster can be tuned without code.
const (
	EnvMaxDeadNodes    = "ATOLL_GCS_MAX_DEAD_NODES"
	EnvMaxDeadActors   = "ATOLL_GCS_MAX_DEAD_ACTORS"
	EnvMaxFinishedJobs = "ATOLL_GCS_MAX_FINISHED_JOBS"
	EnvMaxNodes        = "ATOLL_GCS_MAX_NODES"
	EnvMaxActors       = "ATOLL_GCS_MAX_ACTORS"
	EnvMaxJobs         = "ATOLL_GCS_MAX_JOBS"
	// The buckets' sizes and the largest entry, in bytes.
	EnvNodesBucketBytes  = "ATOLL_GCS_NODES_BUCKET_BYTES"
	EnvActorsBucketBytes = "ATOLL_GCS_ACTORS_BUCKET_BYTES"
	EnvJobsBucketBytes   = "ATOLL_GCS_JOBS_BUCKET_BYTES"
	EnvMaxEntryBytes     = "ATOLL_GCS_MAX_ENTRY_BYTES"
)

// QueueGroup is the NATS queue group of GCS subscriptions: at most one
// instance answers each request, and a new instance can take over when the
// old one stops.
const QueueGroup = "gcs"

// validPrefix keeps prefixes usable both as a subject token and inside a
// JetStream bucket name.
var validPrefix = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// Config configures the GCS actor.
type Config struct {
	// Conn is the NATS connection the GCS serves on and stores through
	// (JetStream must be enabled on its account). Required. The GCS does
	// not close it.
	Conn *nats.Conn
	// Prefix starts every subject (<prefix>.gcs.v1, <prefix>.events.*) and
	// bucket (<prefix>_nodes, ...). Letters, digits, '_' and '-' only.
	// Default DefaultPrefix.
	Prefix string
	// RequestTimeout bounds each JetStream operation (bucket creation, the
	// initial load, every write-through). Default DefaultRequestTimeout.
	RequestTimeout time.Duration
	// Replicas is the replica count of the KV buckets. Default
	// DefaultReplicas.
	Replicas int
	// Logger receives the GCS's logs. Default: discard.
	Logger *slog.Logger
	// TracerProvider creates the server spans. Default: the global
	// otel.GetTracerProvider() at start.
	TracerProvider trace.TracerProvider
	// Propagator extracts the caller's trace context from request headers.
	// Default: otel.GetTextMapPropagator(), or W3C TraceContext when no
	// global propagator is set.
	Propagator propagation.TextMapPropagator
	// MaxDeadNodes, MaxDeadActors and MaxFinishedJobs bound the dead
	// nodes, dead actors and finished jobs the GCS remembers; live nodes,
	// live actors and running jobs are always kept. Past a cap the entries
	// that died (or finished) first are forgotten, in memory and in KV,
	// so a restarted GCS does not reload them; a forgotten entry is
	// NOT_FOUND. 0 takes the environment variable (EnvMaxDeadNodes, ...)
	// if set, else the default (DefaultMaxDeadNodes, ...).
	MaxDeadNodes    int
	MaxDeadActors   int
	MaxFinishedJobs int
	// MaxNodes, MaxActors and MaxJobs bound the live nodes, live actors
	// and running jobs: registering one more fails with RESOURCE_EXHAUSTED
	// (errs.ResourceExhaustedError) until some die or finish. 0 takes
	// EnvMaxNodes, ... if set, else DefaultMaxNodes, ...
	MaxNodes  int
	MaxActors int
	MaxJobs   int
	// NodesBucketBytes, ActorsBucketBytes and JobsBucketBytes are the
	// MaxBytes of the KV buckets, MaxEntryBytes their MaxValueSize. A new
	// entry that does not fit is refused with RESOURCE_EXHAUSTED, one
	// larger than MaxEntryBytes with INVALID_ARGUMENT (an actor's entry
	// only if it is even with its death cause shortened). 0 takes the
	// environment (EnvNodesBucketBytes, ...), else the defaults.
	NodesBucketBytes  int
	ActorsBucketBytes int
	JobsBucketBytes   int
	MaxEntryBytes     int

	// pageBytes is the most bytes of entries a list reply holds (0: NATS's
	// largest message less replyHeadroom); tests make it small.
	pageBytes int
	// now is the clock for start and end times; tests may replace it.
	now func() time.Time
	// maxRetryBackoff caps the wait between start attempts.
	maxRetryBackoff time.Duration
}

// withDefaults validates c and fills its zero fields.
func (c Config) withDefaults() (Config, error) {
	if c.Conn == nil {
		return c, errors.New("gcs: Config.Conn is required")
	}
	var err error
	if c.Prefix, err = checkPrefix(c.Prefix); err != nil {
		return c, err
	}
	if c.RequestTimeout < 0 {
		return c, fmt.Errorf("gcs: Config.RequestTimeout %v is negative", c.RequestTimeout)
	}
	if c.RequestTimeout == 0 {
		c.RequestTimeout = DefaultRequestTimeout
	}
	if c.Replicas < 0 {
		return c, fmt.Errorf("gcs: Config.Replicas %d is negative", c.Replicas)
	}
	if c.Replicas == 0 {
		c.Replicas = DefaultReplicas
	}
	for _, lim := range []struct {
		field *int
		name  string
		env   string
		def   int
	}{
		{&c.MaxDeadNodes, "MaxDeadNodes", EnvMaxDeadNodes, DefaultMaxDeadNodes},
		{&c.MaxDeadActors, "MaxDeadActors", EnvMaxDeadActors, DefaultMaxDeadActors},
		{&c.MaxFinishedJobs, "MaxFinishedJobs", EnvMaxFinishedJobs, DefaultMaxFinishedJobs},
		{&c.MaxNodes, "MaxNodes", EnvMaxNodes, DefaultMaxNodes},
		{&c.MaxActors, "MaxActors", EnvMaxActors, DefaultMaxActors},
		{&c.MaxJobs, "MaxJobs", EnvMaxJobs, DefaultMaxJobs},
		{&c.NodesBucketBytes, "NodesBucketBytes", EnvNodesBucketBytes, DefaultNodesBucketBytes},
		{&c.ActorsBucketBytes, "ActorsBucketBytes", EnvActorsBucketBytes, DefaultActorsBucketBytes},
		{&c.JobsBucketBytes, "JobsBucketBytes", EnvJobsBucketBytes, DefaultJobsBucketBytes},
		{&c.MaxEntryBytes, "MaxEntryBytes", EnvMaxEntryBytes, DefaultMaxEntryBytes},
	} {
		if *lim.field, err = limit(*lim.field, lim.name, lim.env, lim.def); err != nil {
			return c, err
		}
	}
	if c.MaxEntryBytes > math.MaxInt32 {
		return c, fmt.Errorf("gcs: the largest entry, %d bytes, must fit in 32 bits", c.MaxEntryBytes)
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.now == nil {
		c.now = time.Now
	}
	if c.maxRetryBackoff == 0 {
		c.maxRetryBackoff = 5 * time.Second
	}
	return c, nil
}

// limit resolves one cap: v if set, else the environment variable env if
// set, else def. Caps are positive.
func limit(v int, name, env string, def int) (int, error) {
	if v < 0 {
		return v, fmt.Errorf("gcs: Config.%s %d is negative", name, v)
	}
	if v > 0 {
		return v, nil
	}
	s := os.Getenv(env)
	if s == "" {
		return def, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("gcs: %s=%q: want a positive integer", env, s)
	}
	return n, nil
}

func checkPrefix(p string) (string, error) {
	if p == "" {
		return DefaultPrefix, nil
	}
	if !validPrefix.MatchString(p) {
		return p, fmt.Errorf("gcs: prefix %q: use letters, digits, '_' and '-' only", p)
	}
	return p, nil
}

// RequestSubject is the subject GCS requests (GcsRequest protos) that
// change the tables are sent to.
func RequestSubject(prefix string) string { return prefix + ".gcs.v1" }

// ReadSubject is the subject of the requests that only read (ListNodes,
// GetActor, GetNamedActor, ListActors, ListJobs): a head's NATS lets a
// read-only user publish here and not on RequestSubject, and the GCS
// refuses a change sent here with PERMISSION_DENIED.
func ReadSubject(prefix string) string { return prefix + ".gcs.v1.read" }

// NodeRequestSubject is the subject of node node's registrations
// (RegisterNode, ReregisterNode) and of its own MarkNodeDead: a head's
// NATS lets only that node's user (and the head) publish here, and the GCS
// serves a registration only here and only for the node the subject
// names, so a node cannot register another, nor a client any.
func NodeRequestSubject(prefix string, node ids.NodeID) string {
	return nodeRequestPrefix(prefix) + node.String()
}

// nodeRequestPrefix starts every NodeRequestSubject.
func nodeRequestPrefix(prefix string) string { return prefix + ".gcs.v1.node." }

// nodeOnly tells whether req may only come on its node's
// NodeRequestSubject.
func nodeOnly(req *atollpb.GcsRequest) bool {
	switch req.Op.(type) {
	case *atollpb.GcsRequest_RegisterNode, *atollpb.GcsRequest_ReregisterNode:
		return true
	}
	return false
}

// requestNode is the node a request is about when it comes on a
// NodeRequestSubject (nil for other ops).
func requestNode(req *atollpb.GcsRequest) []byte {
	switch op := req.Op.(type) {
	case *atollpb.GcsRequest_RegisterNode:
		return op.RegisterNode.GetNodeId()
	case *atollpb.GcsRequest_ReregisterNode:
		return op.ReregisterNode.GetNodeId()
	case *atollpb.GcsRequest_MarkNodeDead:
		return op.MarkNodeDead.GetNodeId()
	}
	return nil
}

// readOnly tells whether req only reads the tables.
func readOnly(req *atollpb.GcsRequest) bool {
	switch req.Op.(type) {
	case *atollpb.GcsRequest_ListNodes, *atollpb.GcsRequest_GetActor, *atollpb.GcsRequest_GetNamedActor,
		*atollpb.GcsRequest_ListActors, *atollpb.GcsRequest_ListJobs:
		return true
	}
	return false
}

// NodeEventsSubject carries a NodeInfo after every change of a node.
func NodeEventsSubject(prefix string) string { return prefix + ".events.node" }

// ActorEventsSubject carries an ActorInfo after every change of an actor.
func ActorEventsSubject(prefix string) string { return prefix + ".events.actor" }

// Bucket names of the three tables.
func nodesBucket(prefix string) string  { return prefix + "_nodes" }
func actorsBucket(prefix string) string { return prefix + "_actors" }
func jobsBucket(prefix string) string   { return prefix + "_jobs" }
