package node

import (
	"context"
	"os"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/faultplan"
	"github.com/atoll-runtime/atoll/internal/ids"
	"github.com/atoll-runtime/atoll/internal/telemetry"
	"github.com/atoll-runtime/atoll/objectstore"
	"github.com/atoll-runtime/atoll/raylet"
)

// loadFaultPlan gives a node without a fault injector the rules for its
// role of the plan faultplan.EnvPlan names, if set (node processes of a
// chaos run; the driver's node gets them from atoll.WithFaultPlan
// instead): message rules in its injector, rules at points in
// Config.FaultPoints.
func (n *Node) loadFaultPlan() error {
	path := os.Getenv(faultplan.EnvPlan)
	if path == "" || n.cfg.Faults != nil {
		return nil
	}
	p, err := faultplan.Load(path)
	if err != nil {
		return err
	}
	role := faultplan.Workers
	switch {
	case n.cfg.Driver || n.cfg.embedded():
		role = faultplan.Driver
	case n.cfg.Head:
		role = faultplan.Head
	}
	n.cfg.Faults = p.Injector(role)
	n.cfg.FaultPoints = p.Points(role, n.cfg.Faults)
	n.log.Warn("fault plan loaded", "file", path, "seed", p.Seed, "rules", len(p.Rules), "role", role)
	return nil
}

// spillFaults returns the node's spill-full and spill-slow rules for its
// store, or nil.
func (n *Node) spillFaults() objectstore.SpillFaults {
	if n.cfg.FaultPoints == nil {
		return nil // not a typed nil in the interface
	}
	return n.cfg.FaultPoints
}

// withKillPoints gives pc the node's kill-worker rules (nil pc: goroutine
// workers, which have no process to kill). A kill is logged and, when the
// task carries a trace context, recorded as an "atoll.fault" event on a
// "fault <task>" span, a child of the task's submit span.
func (n *Node) withKillPoints(pc *raylet.ProcessConfig, tp trace.TracerProvider) *raylet.ProcessConfig {
	points := n.cfg.FaultPoints
	if pc == nil || points == nil {
		return pc
	}
	tracer := telemetry.Tracer(tp)
	pc.KillAt = func(point raylet.KillPoint, spec *atollpb.TaskSpec) bool {
		hit, ok := points.KillWorker(faultplan.Point(point), spec.GetFunction(), spec.GetName())
		if !ok {
			return false
		}
		task := ""
		if id, err := ids.FromBytes(spec.GetTaskId()); err == nil {
			task = id.String()
		}
		n.log.Warn("fault plan: killing a worker", "rule", hit.Rule, "point", point, "task", spec.GetName(), "task_id", task, "attempt", spec.GetAttempt())
		if spec.GetTrace() != nil {
			recordFault(telemetry.Extract(context.Background(), spec.GetTrace()), tracer, "fault "+spec.GetName(), hit,
				attribute.String("atoll.task_id", task), attribute.Int("atoll.attempt", int(spec.GetAttempt())))
		}
		return true
	}
	return pc
}

// recordFault records hit as a faultplan.SpanEvent event, with attributes
// atoll.fault.rule, atoll.fault.action and atoll.fault.point, on a span
// named name started (and ended) under ctx's span.
func recordFault(ctx context.Context, tracer trace.Tracer, name string, hit faultplan.Hit, attrs ...attribute.KeyValue) {
	_, span := tracer.Start(ctx, name, trace.WithAttributes(attrs...))
	span.AddEvent(faultplan.SpanEvent, trace.WithAttributes(
		attribute.String("atoll.fault.rule", hit.Rule),
		attribute.String("atoll.fault.action", string(hit.Action)),
		attribute.String("atoll.fault.point", string(hit.Point))))
	span.End()
}
