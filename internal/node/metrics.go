package node

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/raylet"
	"github.com/atoll-runtime/atoll/internal/telemetry"
)

// nodeMetrics is what the node publishes: observable instruments read
// from its actors when a reader collects, and the task counters and
// latency histograms the raylet's finished attempts feed (taskFinished).
// Every instrument exists on the configured meter provider (Config.
// MeterProvider, else OTel's global one) and, when the node serves
// Prometheus or exports OTLP metrics, on the node's own provider (own).
type nodeMetrics struct {
	regs  []metric.Registration
	tasks []taskInstruments
	names taskNames
	node  attribute.KeyValue // atoll.node_id

	own    *sdkmetric.MeterProvider // nil: no Prometheus port and no OTLP metrics
	server *metricsServer           // nil: no Prometheus port
}

// taskInstruments are one provider's task metrics.
type taskInstruments struct {
	finished metric.Int64Counter
	duration metric.Float64Histogram
}

// maxTaskNames bounds the task names the task metrics label; later names
// share the label otherTaskName, so a program naming every call apart
// cannot grow a scrape without bound.
const (
	maxTaskNames  = 500
	otherTaskName = "other"
)

// taskNames is the set of task names labelled so far.
type taskNames struct {
	mu  sync.Mutex
	set map[string]struct{}
}

func (s *taskNames) label(name string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.set[name]; ok {
		return name
	}
	if len(s.set) >= maxTaskNames {
		return otherTaskName
	}
	if s.set == nil {
		s.set = map[string]struct{}{}
	}
	s.set[name] = struct{}{}
	return name
}

// taskDurationBuckets are the task latency histogram's bounds, in
// seconds (1 ms to 5 min).
var taskDurationBuckets = []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300}

// startMetrics registers the node's metrics and starts what serves them:
// the Prometheus endpoint (Config.MetricsPort) and the OTLP metrics
// exporter (OTEL_EXPORTER_OTLP_* set).
func (n *Node) startMetrics(ctx context.Context) error {
	m := &nodeMetrics{node: attribute.String("atoll.node_id", n.id.String())}
	mp := n.cfg.MeterProvider
	if mp == nil {
		mp = otel.GetMeterProvider()
	}
	providers := []metric.MeterProvider{mp}
	own, server, err := n.ownMeterProvider(ctx)
	if err != nil {
		return err
	}
	m.own, m.server = own, server
	if own != nil {
		providers = append(providers, own)
	}
	for _, p := range providers {
		reg, err := n.registerMetrics(p)
		if err != nil {
			m.stop(ctx)
			return err
		}
		m.regs = append(m.regs, reg)
		ti, err := newTaskInstruments(p)
		if err != nil {
			m.stop(ctx)
			return err
		}
		m.tasks = append(m.tasks, ti)
	}
	if server != nil {
		server.serve(n.log)
		n.log.Info("serving Prometheus metrics", "address", "http://"+server.addr+"/metrics")
	}
	n.metrics.Store(m)
	return nil
}

// stopMetrics unregisters the node's metrics and stops serving them; the
// OTLP exporter sends its last figures.
func (n *Node) stopMetrics(ctx context.Context) {
	if m := n.metrics.Swap(nil); m != nil {
		m.stop(ctx)
	}
}

func (m *nodeMetrics) stop(ctx context.Context) {
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

// MetricsAddress is where the node serves Prometheus metrics (host:port),
// or "" if it serves none.
func (n *Node) MetricsAddress() string {
	if m := n.metrics.Load(); m != nil && m.server != nil {
		return m.server.addr
	}
	return ""
}

// taskFinished feeds the task metrics with one finished task attempt,
// actor call or actor creation (the raylet's OnTaskEvent: on its
// goroutine, so it only records).
func (n *Node) taskFinished(e raylet.TaskEvent) {
	m := n.metrics.Load()
	if m == nil {
		return
	}
	switch e.Kind {
	case raylet.EventTransfer, raylet.EventSpill, raylet.EventRestore:
		return // not a task: the store's and transfer figures count them
	}
	outcome := "ok"
	if e.Failed {
		outcome = "failed"
	}
	name := attribute.String("atoll.task_name", m.names.label(e.Name))
	counted := metric.WithAttributes(m.node, name, attribute.String("atoll.outcome", outcome))
	timed := metric.WithAttributes(m.node, name)
	secs := e.End.Sub(e.Start).Seconds()
	ctx := context.Background()
	for _, ti := range m.tasks {
		ti.finished.Add(ctx, 1, counted)
		ti.duration.Record(ctx, secs, timed)
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

// registerMetrics publishes the node's observable figures through mp:
// object store bytes (used, capacity, pinned, spilled now), spill
// traffic, the raylet's queue, running tasks and workers, object
// transfers from other nodes, the NATS connection's traffic and, on the
// head, the GCS's tables. They are read when the meter's reader collects,
// from the store and raylet actors, the gateway, the connection and the
// GCS.
func (n *Node) registerMetrics(mp metric.MeterProvider) (metric.Registration, error) {
	m := mp.Meter(telemetry.TracerName)
	var errList []error
	gauge := func(name, unit, desc string) metric.Int64ObservableGauge {
		g, err := m.Int64ObservableGauge(name, metric.WithUnit(unit), metric.WithDescription(desc))
		errList = append(errList, err)
		return g
	}
	counter := func(name, unit, desc string) metric.Int64ObservableCounter {
		c, err := m.Int64ObservableCounter(name, metric.WithUnit(unit), metric.WithDescription(desc))
		errList = append(errList, err)
		return c
	}
	var (
		used        = gauge("atoll.object_store.used", "By", "Bytes of objects in the object store's memory")
		capacity    = gauge("atoll.object_store.capacity", "By", "The object store's hard limit")
		pinned      = gauge("atoll.object_store.pinned", "By", "Bytes of objects pinned by readers")
		objects     = gauge("atoll.object_store.objects", "{object}", "Objects in the store, in memory or spilled")
		onDisk      = gauge("atoll.object_store.spilled", "By", "Bytes of live objects spilled to disk now")
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
		gcsNodes    = gauge("atoll.gcs.nodes", "{node}", "Nodes in the GCS's table, by state (head only)")
		gcsActors   = gauge("atoll.gcs.actors", "{actor}", "Actors in the GCS's table, by state (head only)")
		gcsJobs     = gauge("atoll.gcs.jobs", "{job}", "Jobs in the GCS's table, by state (running, finished; head only)")
	)
	if err := errors.Join(errList...); err != nil {
		return nil, err
	}
	node := attribute.String("atoll.node_id", n.id.String())
	at := metric.WithAttributes(node)
	head := n.cfg.RunsGCS() && n.gcsClient != nil
	return m.RegisterCallback(func(ctx context.Context, o metric.Observer) error {
		ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		if s, err := n.store.Stats(ctx); err == nil {
			o.ObserveInt64(used, int64(s.UsedBytes), at)
			o.ObserveInt64(capacity, int64(s.CapacityBytes), at)
			o.ObserveInt64(pinned, int64(s.PinnedBytes), at)
			o.ObserveInt64(objects, int64(s.NumObjects), at)
			o.ObserveInt64(onDisk, int64(s.SpilledBytesCurrent), at)
			o.ObserveInt64(spilled, int64(s.SpilledBytesTotal), at)
			o.ObserveInt64(restored, int64(s.RestoredBytesTotal), at)
		}
		res, err := n.system.Root.RequestFuture(n.rayletPID, &raylet.GetState{}, 5*time.Second).Result()
		if st, ok := res.(*raylet.State); ok && err == nil {
			o.ObserveInt64(queued, int64(st.Queued), at)
			o.ObserveInt64(running, int64(st.Running), at)
			o.ObserveInt64(workers, int64(st.Workers), at)
		}
		if g := n.gateway; g != nil {
			objs, bytes := g.Pulls()
			o.ObserveInt64(pulledObjs, int64(objs), at)
			o.ObserveInt64(pulledBytes, int64(bytes), at)
		}
		if n.nc != nil {
			s := n.nc.Stats()
			in, out := metric.WithAttributes(node, attribute.String("direction", "in")), metric.WithAttributes(node, attribute.String("direction", "out"))
			o.ObserveInt64(natsMsgs, int64(s.InMsgs), in)
			o.ObserveInt64(natsMsgs, int64(s.OutMsgs), out)
			o.ObserveInt64(natsBytes, int64(s.InBytes), in)
			o.ObserveInt64(natsBytes, int64(s.OutBytes), out)
			o.ObserveInt64(natsRecon, int64(s.Reconnects), at)
		}
		if head {
			n.observeGCS(ctx, o, node, gcsNodes, gcsActors, gcsJobs)
		}
		return nil
	}, used, capacity, pinned, objects, onDisk, spilled, restored, queued, running, workers,
		pulledObjs, pulledBytes, natsMsgs, natsBytes, natsRecon, gcsNodes, gcsActors, gcsJobs)
}

// observeGCS counts the GCS's tables by state (the head's figures).
func (n *Node) observeGCS(ctx context.Context, o metric.Observer, node attribute.KeyValue, nodes, actors, jobs metric.Int64ObservableGauge) {
	byState := func(g metric.Int64ObservableGauge, counts map[string]int64) {
		for state, c := range counts {
			o.ObserveInt64(g, c, metric.WithAttributes(node, attribute.String("state", state)))
		}
	}
	if list, err := n.gcsClient.ListNodes(ctx); err == nil {
		counts := map[string]int64{}
		for _, s := range atollpb.NodeState_name {
			counts[s] = 0
		}
		for _, x := range list {
			counts[x.State.String()]++
		}
		byState(nodes, counts)
	} else {
		slog.Debug("atoll metrics: list nodes", "err", err)
	}
	if list, err := n.gcsClient.ListActors(ctx); err == nil {
		counts := map[string]int64{}
		for _, x := range list {
			counts[x.State.String()]++
		}
		byState(actors, counts)
	}
	if list, err := n.gcsClient.ListJobs(ctx); err == nil {
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
