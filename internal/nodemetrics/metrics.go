package nodemetrics

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/gcs"
	"github.com/atoll-runtime/atoll/internal/ids"
	"github.com/atoll-runtime/atoll/internal/raylet"
	"github.com/atoll-runtime/atoll/internal/telemetry"
)

// Config is what a node's metrics read and where they go.
type Config struct {
	// NodeID labels every figure (node_id).
	NodeID ids.NodeID
	// MeterProvider receives the figures (nodeconfig.Config.MeterProvider);
	// default OpenTelemetry's global provider.
	MeterProvider metric.MeterProvider
	// Host and Port are where the node serves Prometheus (GET /metrics):
	// nodeconfig.Config.NodeIP and MetricsPort, validated there (0: none,
	// nodeconfig.MetricsAnyPort: a free port). BestEffort makes a port
	// that cannot be bound a warning instead of an error.
	Host       string
	Port       int
	BestEffort bool
	// Source is what the observable figures read.
	Source Source
	Logger *slog.Logger
}

// Source is what the node's observable figures read when a reader
// collects: its actors (through these calls, bounded by the collection's
// context), its gateway, its connection and, on the head, the GCS.
type Source struct {
	// StoreStats reads the object store's figures.
	StoreStats func(ctx context.Context) (*atollpb.StoreStats, error)
	// RayletState reads the raylet's queue, running tasks and workers.
	RayletState func(ctx context.Context) (*raylet.State, error)
	// Pulls counts the objects (and their bytes) the node pulled from
	// other nodes; nil on a node outside a cluster.
	Pulls func() (objects, bytes uint64)
	// Conn is the node's NATS connection (its traffic); nil: none.
	Conn *nats.Conn
	// GCS, on a node that runs it, counts the GCS's tables by state; nil
	// elsewhere.
	GCS *gcs.Client
}

// Metrics is what the node publishes: observable instruments read from
// Source when a reader collects, and the task counters and latency
// histograms the raylet's finished attempts feed (TaskFinished). Every
// instrument exists on the configured meter provider (Config.
// MeterProvider, else OTel's global one) and, when the node serves
// Prometheus or exports OTLP metrics, on the node's own provider (own).
// Its methods are safe for concurrent use.
type Metrics struct {
	cfg   Config
	regs  []metric.Registration
	tasks []taskInstruments
	names taskNames
	node  attribute.KeyValue // node_id

	own    *sdkmetric.MeterProvider // nil: no Prometheus port and no OTLP metrics
	server *metricsServer           // nil: no Prometheus port
}

// taskInstruments are one provider's task metrics.
type taskInstruments struct {
	finished metric.Int64Counter
	duration metric.Float64Histogram
}

// The labels of the node's figures, in Prometheus' style: snake_case,
// without the metric names' atoll_ prefix.
const (
	attrNodeID    = attribute.Key("node_id")
	attrTaskName  = attribute.Key("task_name")
	attrOutcome   = attribute.Key("outcome")
	attrDirection = attribute.Key("direction")
	attrState     = attribute.Key("state")
)

// maxTaskNames bounds the task names the task metrics label; later names
// share the label otherTaskName, so a program naming every call apart
// cannot grow a scrape without bound.
const (
	maxTaskNames  = 500
	otherTaskName = "other"
)

// taskNames is the set of task names labelled so far, each with its
// measurement options made once (an attribute set per task would cost
// more than the measurement).
type taskNames struct {
	mu    sync.Mutex
	set   map[string]*nameOptions
	other *nameOptions
}

// nameOptions are one task name's measurement options: its counter's, by
// outcome, and its duration's, each as the slice Add and Record take (made
// once: passing one option would make a slice per task).
type nameOptions struct {
	ok, failed []metric.AddOption
	timed      []metric.RecordOption
}

func newNameOptions(node attribute.KeyValue, label string) *nameOptions {
	name := attrTaskName.String(label)
	return &nameOptions{
		ok:     []metric.AddOption{metric.WithAttributeSet(attribute.NewSet(node, name, attrOutcome.String("ok")))},
		failed: []metric.AddOption{metric.WithAttributeSet(attribute.NewSet(node, name, attrOutcome.String("failed")))},
		timed:  []metric.RecordOption{metric.WithAttributeSet(attribute.NewSet(node, name))},
	}
}

// options returns the options of name's label.
func (s *taskNames) options(node attribute.KeyValue, name string) *nameOptions {
	s.mu.Lock()
	defer s.mu.Unlock()
	if o, ok := s.set[name]; ok {
		return o
	}
	if len(s.set) >= maxTaskNames {
		if s.other == nil {
			s.other = newNameOptions(node, otherTaskName)
		}
		return s.other
	}
	if s.set == nil {
		s.set = map[string]*nameOptions{}
	}
	o := newNameOptions(node, name)
	s.set[name] = o
	return o
}

// taskDurationBuckets are the task latency histogram's bounds, in
// seconds (1 ms to 5 min).
var taskDurationBuckets = []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300}

// Start registers the node's metrics and starts what serves them: the
// Prometheus endpoint (Config.Port) and the OTLP metrics exporter
// (OTEL_EXPORTER_OTLP_* set).
func Start(ctx context.Context, cfg Config) (*Metrics, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	m := &Metrics{cfg: cfg, node: attrNodeID.String(cfg.NodeID.String())}
	mp := cfg.MeterProvider
	if mp == nil {
		mp = otel.GetMeterProvider()
	}
	providers := []metric.MeterProvider{mp}
	own, server, err := ownMeterProvider(ctx, cfg)
	if err != nil {
		return nil, err
	}
	m.own, m.server = own, server
	if own != nil {
		providers = append(providers, own)
	}
	for _, p := range providers {
		reg, err := m.register(p)
		if err != nil {
			m.Stop(ctx)
			return nil, err
		}
		m.regs = append(m.regs, reg)
		ti, err := newTaskInstruments(p)
		if err != nil {
			m.Stop(ctx)
			return nil, err
		}
		m.tasks = append(m.tasks, ti)
	}
	if server != nil {
		server.serve(cfg.Logger)
		cfg.Logger.Info("serving Prometheus metrics", "address", "http://"+server.addr+"/metrics")
	}
	return m, nil
}

// Stop unregisters the node's metrics and stops serving them; the OTLP
// exporter sends its last figures.
func (m *Metrics) Stop(ctx context.Context) {
	for _, r := range m.regs {
		_ = r.Unregister()
	}
	if m.server != nil {
		m.server.close()
	}
	if m.own != nil {
		sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		_ = m.own.Shutdown(sctx)
		cancel()
	}
}

// Address is where the node serves Prometheus metrics (host:port), or
// "" if it serves none.
func (m *Metrics) Address() string {
	if m.server != nil {
		return m.server.addr
	}
	return ""
}

// TaskFinished feeds the task metrics with one finished task attempt,
// actor call or actor creation (the raylet's OnTaskEvent: on its
// goroutine, so it only records).
func (m *Metrics) TaskFinished(e raylet.TaskEvent) {
	switch e.Kind {
	case raylet.EventTransfer, raylet.EventSpill, raylet.EventRestore:
		return // not a task: the store's and transfer figures count them
	}
	o := m.names.options(m.node, e.Name)
	counted := o.ok
	if e.Failed {
		counted = o.failed
	}
	secs := e.End.Sub(e.Start).Seconds()
	ctx := context.Background()
	for _, ti := range m.tasks {
		ti.finished.Add(ctx, 1, counted...)
		ti.duration.Record(ctx, secs, o.timed...)
	}
}

func newTaskInstruments(mp metric.MeterProvider) (taskInstruments, error) {
	m := mp.Meter(telemetry.TracerName)
	finished, err1 := m.Int64Counter("atoll.tasks.finished", metric.WithUnit("{task}"),
		metric.WithDescription("Task attempts this node ran to the end, by task name and outcome (ok, failed)"))
	duration, err2 := m.Float64Histogram("atoll.task.duration", metric.WithUnit("s"),
		metric.WithDescription("How long task attempts ran on this node's workers, by task name"),
		metric.WithExplicitBucketBoundaries(taskDurationBuckets...))
	return taskInstruments{finished: finished, duration: duration}, errors.Join(err1, err2)
}

// register publishes the node's observable figures through mp:
// object store bytes (used, capacity, pinned, spilled now), spill
// traffic, the raylet's queue, running tasks and workers, object
// transfers from other nodes, the NATS connection's traffic and, on the
// head, the GCS's tables. They are read when the meter's reader collects,
// from the store and raylet actors, the gateway, the connection and the
// GCS (Source).
func (m *Metrics) register(mp metric.MeterProvider) (metric.Registration, error) {
	meter := mp.Meter(telemetry.TracerName)
	var errList []error
	gauge := func(name, unit, desc string) metric.Int64ObservableGauge {
		g, err := meter.Int64ObservableGauge(name, metric.WithUnit(unit), metric.WithDescription(desc))
		errList = append(errList, err)
		return g
	}
	counter := func(name, unit, desc string) metric.Int64ObservableCounter {
		c, err := meter.Int64ObservableCounter(name, metric.WithUnit(unit), metric.WithDescription(desc))
		errList = append(errList, err)
		return c
	}
	var (
		used        = gauge("atoll.object_store.used", "By", "Bytes of objects in the object store's memory")
		capacity    = gauge("atoll.object_store.capacity", "By", "The object store's hard limit")
		pinned      = gauge("atoll.object_store.pinned", "By", "Bytes of objects pinned by readers")
		objects     = gauge("atoll.object_store.objects", "{object}", "Objects in the store, in memory or spilled")
		onDisk      = gauge("atoll.object_store.disk_used", "By", "Bytes of live objects in spill files now")
		spilled     = counter("atoll.object_store.spilled_total", "By", "Bytes written to spill files")
		restored    = counter("atoll.object_store.restored_total", "By", "Bytes restored from spill files")
		queued      = gauge("atoll.raylet.queued_tasks", "{task}", "Tasks waiting for resources, a worker, memory or a root slot")
		running     = gauge("atoll.raylet.running_tasks", "{task}", "Tasks running on workers")
		workers     = gauge("atoll.raylet.workers", "{worker}", "Workers in the pool")
		pulledObjs  = counter("atoll.transfer.pulled_objects", "{object}", "Objects this node pulled from other nodes")
		pulledBytes = counter("atoll.transfer.pulled", "By", "Bytes this node pulled from other nodes")
		natsMsgs    = counter("atoll.nats.messages", "{message}", "Messages on the node's NATS connection, by direction (in, out)")
		natsBytes   = counter("atoll.nats.traffic", "By", "Bytes on the node's NATS connection, by direction (in, out)")
		natsRecon   = counter("atoll.nats.reconnects", "{reconnect}", "Reconnections of the node's NATS connection")
		gcsNodes    = gauge("atoll.gcs.nodes", "{node}", "Nodes in the GCS's table, by state (alive, dead; head only)")
		gcsActors   = gauge("atoll.gcs.actors", "{actor}", "Actors in the GCS's table, by state (pending_creation, alive, restarting, dead; head only)")
		gcsJobs     = gauge("atoll.gcs.jobs", "{job}", "Jobs in the GCS's table, by state (running, finished; head only)")
	)
	if err := errors.Join(errList...); err != nil {
		return nil, err
	}
	node := m.node
	at := metric.WithAttributes(node)
	src := m.cfg.Source
	return meter.RegisterCallback(func(ctx context.Context, o metric.Observer) error {
		ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		if s, err := src.StoreStats(ctx); err == nil {
			o.ObserveInt64(used, int64(s.UsedBytes), at)
			o.ObserveInt64(capacity, int64(s.CapacityBytes), at)
			o.ObserveInt64(pinned, int64(s.PinnedBytes), at)
			o.ObserveInt64(objects, int64(s.NumObjects), at)
			o.ObserveInt64(onDisk, int64(s.SpilledBytesCurrent), at)
			o.ObserveInt64(spilled, int64(s.SpilledBytesTotal), at)
			o.ObserveInt64(restored, int64(s.RestoredBytesTotal), at)
		}
		if st, err := src.RayletState(ctx); err == nil {
			o.ObserveInt64(queued, int64(st.Queued), at)
			o.ObserveInt64(running, int64(st.Running), at)
			o.ObserveInt64(workers, int64(st.Workers), at)
		}
		if src.Pulls != nil {
			objs, bytes := src.Pulls()
			o.ObserveInt64(pulledObjs, int64(objs), at)
			o.ObserveInt64(pulledBytes, int64(bytes), at)
		}
		if src.Conn != nil {
			s := src.Conn.Stats()
			in, out := metric.WithAttributes(node, attrDirection.String("in")), metric.WithAttributes(node, attrDirection.String("out"))
			o.ObserveInt64(natsMsgs, int64(s.InMsgs), in)
			o.ObserveInt64(natsMsgs, int64(s.OutMsgs), out)
			o.ObserveInt64(natsBytes, int64(s.InBytes), in)
			o.ObserveInt64(natsBytes, int64(s.OutBytes), out)
			o.ObserveInt64(natsRecon, int64(s.Reconnects), at)
		}
		if src.GCS != nil {
			observeGCS(ctx, src.GCS, o, node, gcsNodes, gcsActors, gcsJobs)
		}
		return nil
	}, used, capacity, pinned, objects, onDisk, spilled, restored, queued, running, workers,
		pulledObjs, pulledBytes, natsMsgs, natsBytes, natsRecon, gcsNodes, gcsActors, gcsJobs)
}

// observeGCS counts the GCS's tables by state (the head's figures).
// Every state has a series, zero when nothing is in it, so a state's
// series does not appear and vanish with its first and last member.
func observeGCS(ctx context.Context, g *gcs.Client, o metric.Observer, node attribute.KeyValue, nodes, actors, jobs metric.Int64ObservableGauge) {
	byState := func(g metric.Int64ObservableGauge, counts map[string]int64) {
		for state, c := range counts {
			o.ObserveInt64(g, c, metric.WithAttributes(node, attrState.String(state)))
		}
	}
	if list, err := g.ListNodes(ctx); err == nil {
		counts := zeroStates(atollpb.NodeState_name, "NODE_")
		for _, x := range list {
			counts[stateLabel(x.State.String(), "NODE_")]++
		}
		byState(nodes, counts)
	} else {
		slog.Debug("atoll metrics: list nodes", "err", err)
	}
	if list, err := g.ListActors(ctx); err == nil {
		counts := zeroStates(atollpb.ActorState_name, "ACTOR_")
		for _, x := range list {
			counts[stateLabel(x.State.String(), "ACTOR_")]++
		}
		byState(actors, counts)
	}
	if list, err := g.ListJobs(ctx); err == nil {
		counts := map[string]int64{"running": 0, "finished": 0}
		for _, x := range list {
			if x.Finished {
				counts["finished"]++
			} else {
				counts["running"]++
			}
		}
		byState(jobs, counts)
	}
}

// zeroStates is a count of 0 for each state of a protobuf enum (its
// _name map) but its zero value, which no entry has.
func zeroStates(names map[int32]string, prefix string) map[string]int64 {
	counts := make(map[string]int64, len(names))
	for v, s := range names {
		if v != 0 {
			counts[stateLabel(s, prefix)] = 0
		}
	}
	return counts
}

// stateLabel is a protobuf enum value's name as a label value: without
// the enum's prefix, in lowercase (NODE_ALIVE: alive, ACTOR_PENDING_CREATION:
// pending_creation).
func stateLabel(name, prefix string) string {
	return strings.ToLower(strings.TrimPrefix(name, prefix))
}
