package node

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/atoll-runtime/atoll/internal/telemetry"
	"github.com/atoll-runtime/atoll/raylet"
)

// registerMetrics publishes the node's gauges through mp: object store
// bytes (used, capacity, pinned, spilled now), spill traffic, and the
// raylet's queue, running tasks and workers. They are read when the
// meter's reader collects, from the store and raylet actors.
func (n *Node) registerMetrics(mp metric.MeterProvider) (metric.Registration, error) {
	m := mp.Meter(telemetry.TracerName)
	gauge := func(name, unit, desc string) metric.Int64ObservableGauge {
		g, _ := m.Int64ObservableGauge(name, metric.WithUnit(unit), metric.WithDescription(desc))
		return g
	}
	counter := func(name, unit, desc string) metric.Int64ObservableCounter {
		c, _ := m.Int64ObservableCounter(name, metric.WithUnit(unit), metric.WithDescription(desc))
		return c
	}
	var (
		used     = gauge("atoll.object_store.used", "By", "Bytes of objects in the object store's memory")
		capacity = gauge("atoll.object_store.capacity", "By", "The object store's hard limit")
		pinned   = gauge("atoll.object_store.pinned", "By", "Bytes of objects pinned by readers")
		objects  = gauge("atoll.object_store.objects", "{object}", "Objects in the store, in memory or spilled")
		onDisk   = gauge("atoll.object_store.spilled", "By", "Bytes of live objects spilled to disk now")
		spilled  = counter("atoll.object_store.spilled_total", "By", "Bytes written to spill files")
		restored = counter("atoll.object_store.restored_total", "By", "Bytes restored from spill files")
		queued   = gauge("atoll.raylet.queued_tasks", "{task}", "Tasks waiting for resources, a worker, memory or a root slot")
		running  = gauge("atoll.raylet.running_tasks", "{task}", "Tasks running on workers")
		workers  = gauge("atoll.raylet.workers", "{worker}", "Workers in the pool")
	)
	node := metric.WithAttributes(attribute.String("atoll.node_id", n.id.String()))
	return m.RegisterCallback(func(ctx context.Context, o metric.Observer) error {
		ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		if s, err := n.store.Stats(ctx); err == nil {
			o.ObserveInt64(used, int64(s.UsedBytes), node)
			o.ObserveInt64(capacity, int64(s.CapacityBytes), node)
			o.ObserveInt64(pinned, int64(s.PinnedBytes), node)
			o.ObserveInt64(objects, int64(s.NumObjects), node)
			o.ObserveInt64(onDisk, int64(s.SpilledBytesCurrent), node)
			o.ObserveInt64(spilled, int64(s.SpilledBytesTotal), node)
			o.ObserveInt64(restored, int64(s.RestoredBytesTotal), node)
		}
		res, err := n.system.Root.RequestFuture(n.rayletPID, &raylet.GetState{}, 5*time.Second).Result()
		if st, ok := res.(*raylet.State); ok && err == nil {
			o.ObserveInt64(queued, int64(st.Queued), node)
			o.ObserveInt64(running, int64(st.Running), node)
			o.ObserveInt64(workers, int64(st.Workers), node)
		}
		return nil
	}, used, capacity, pinned, objects, onDisk, spilled, restored, queued, running, workers)
}
