package gcs

import (
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"time"

	"github.com/nats-io/nats.go"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
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

func checkPrefix(p string) (string, error) {
	if p == "" {
		return DefaultPrefix, nil
	}
	if !validPrefix.MatchString(p) {
		return p, fmt.Errorf("gcs: prefix %q: use letters, digits, '_' and '-' only", p)
	}
	return p, nil
}

// RequestSubject is the subject GCS requests (GcsRequest protos) are sent to.
func RequestSubject(prefix string) string { return prefix + ".gcs.v1" }

// NodeEventsSubject carries a NodeInfo after every change of a node.
func NodeEventsSubject(prefix string) string { return prefix + ".events.node" }

// ActorEventsSubject carries an ActorInfo after every change of an actor.
func ActorEventsSubject(prefix string) string { return prefix + ".events.actor" }

// Bucket names of the three tables.
func nodesBucket(prefix string) string  { return prefix + "_nodes" }
func actorsBucket(prefix string) string { return prefix + "_actors" }
func jobsBucket(prefix string) string   { return prefix + "_jobs" }
