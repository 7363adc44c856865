package node

import (
	"context"
	"time"

	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/nodemetrics"
	"github.com/atoll-runtime/atoll/internal/raylet"
)

// rayletStateTimeout bounds a metrics collection's question to the
// raylet.
const rayletStateTimeout = 5 * time.Second

// startMetrics starts the node's metrics (package nodemetrics), reading
// its store, raylet, gateway, connection and, where it runs one, GCS.
func (n *Node) startMetrics(ctx context.Context) error {
	src := nodemetrics.Source{StoreStats: n.store.Stats, RayletState: n.rayletState, Conn: n.nc}
	if g := n.gateway; g != nil {
		src.Pulls = g.Pulls
	}
	if n.cfg.RunsGCS() {
		src.GCS = n.gcsClient
	}
	m, err := nodemetrics.Start(ctx, nodemetrics.Config{NodeID: n.id, MeterProvider: n.cfg.MeterProvider,
		Host: n.cfg.NodeIP, Port: n.cfg.MetricsPort, BestEffort: n.cfg.MetricsBestEffort, Source: src, Logger: n.log})
	if err != nil {
		return err
	}
	n.metrics.Store(m)
	return nil
}

// stopMetrics stops the node's metrics; the OTLP exporter sends its last
// figures.
func (n *Node) stopMetrics(ctx context.Context) {
	if m := n.metrics.Swap(nil); m != nil {
		m.Stop(ctx)
	}
}

// MetricsAddress is where the node serves Prometheus metrics (host:port),
// or "" if it serves none.
func (n *Node) MetricsAddress() string {
	if m := n.metrics.Load(); m != nil {
		return m.Address()
	}
	return ""
}

// taskFinished is the raylet's OnTaskEvent: it feeds the task metrics
// once they run.
func (n *Node) taskFinished(e raylet.TaskEvent) {
	if m := n.metrics.Load(); m != nil {
		m.TaskFinished(e)
	}
}

// rayletState asks the raylet for its queue, running tasks and workers.
func (n *Node) rayletState(ctx context.Context) (*raylet.State, error) {
	timeout := rayletStateTimeout
	if d, ok := ctx.Deadline(); ok {
		timeout = min(timeout, time.Until(d))
	}
	if timeout <= 0 {
		return nil, context.DeadlineExceeded
	}
	res, err := n.system.Root.RequestFuture(n.rayletPID, &raylet.GetState{}, timeout).Result()
	if err != nil {
		return nil, err
	}
	st, ok := res.(*raylet.State)
	if !ok {
		return nil, errs.Unavailablef("the raylet answered %T", res)
	}
	return st, nil
}
