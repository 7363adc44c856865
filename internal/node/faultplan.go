package node

import (
	"context"
	"os"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/faultplan"
	"github.com/atoll-runtime/atoll/internal/actors"
	"github.com/atoll-runtime/atoll/internal/ids"
	"github.com/atoll-runtime/atoll/internal/objectstore"
	"github.com/atoll-runtime/atoll/internal/raylet"
	"github.com/atoll-runtime/atoll/internal/telemetry"
)

// loadFaultPlan gives a node without a fault injector the rules for its
// role of the plan faultplan.EnvPlan names, if set (node processes of a
// chaos run; the driver's node gets them from atoll.WithFaultPlan
// instead): message rules in its injector, rules at points in
// Hooks.FaultPoints.
func (n *Node) loadFaultPlan() error {
	path := os.Getenv(faultplan.EnvPlan)
	if path == "" || n.hooks.Faults != nil {
		return nil
	}
	p, err := faultplan.Load(path)
	if err != nil {
		return err
	}
	role := faultplan.Workers
	switch {
	case n.cfg.Driver || n.cfg.Embedded():
		role = faultplan.Driver
	case n.cfg.Head:
		role = faultplan.Head
	}
	n.hooks.Faults = p.Injector(role)
	n.hooks.FaultPoints = p.Points(role, n.hooks.Faults)
	n.log.Warn("fault plan loaded", "file", path, "seed", p.Seed, "rules", len(p.Rules), "role", role)
	return nil
}

// spillFaults returns the node's spill-full and spill-slow rules for its
// store, or nil.
func (n *Node) spillFaults() objectstore.SpillFaults {
	if n.hooks.FaultPoints == nil {
		return nil // not a typed nil in the interface
	}
	return n.hooks.FaultPoints
}

// withKillPoints gives pc the node's kill-worker rules (a process is
// killed; an in-process worker has its connection closed). A kill is logged and, when the
// task carries a trace context, recorded as an "atoll.fault" event on a
// "fault <task>" span, a child of the task's submit span.
func (n *Node) withKillPoints(pc *raylet.ProcessConfig, tp trace.TracerProvider) *raylet.ProcessConfig {
	points := n.hooks.FaultPoints
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
		recordFault(tracer, spec, hit.Rule, string(hit.Action), string(hit.Point))
		return true
	}
	return pc
}

// traceMessageFaults records every message fault of the node's injector
// whose message carries a task (a submission, a forward, a push to a
// worker, a forwarded actor call) on that task's trace, as the kill
// points do: point "message <type>@<actor kind>".
func (n *Node) traceMessageFaults(tp trace.TracerProvider) {
	if n.hooks.Faults == nil {
		return
	}
	tracer := telemetry.Tracer(tp)
	n.hooks.Faults.OnFault(func(e actors.FaultEvent, msg any) {
		if spec := taskOf(msg); spec != nil {
			recordFault(tracer, spec, e.Rule, e.Kind.String(), "message "+e.Message+"@"+e.Actor)
		}
	})
}

// taskOf returns the task a message carries, or nil.
func taskOf(msg any) *atollpb.TaskSpec {
	switch m := msg.(type) {
	case *atollpb.SubmitTask:
		return m.Spec
	case *atollpb.ForwardTask:
		return m.Spec
	case *atollpb.PushTask:
		return m.Spec
	case *atollpb.ForwardActorCall:
		return m.Spec
	}
	return nil
}

// recordFault records a fault that hit spec's task as a
// faultplan.SpanEvent event, with attributes atoll.fault.rule,
// atoll.fault.action and atoll.fault.point, on a "fault <task>" span
// started (and ended) under the task's submit span; nothing if the task
// carries no trace context.
func recordFault(tracer trace.Tracer, spec *atollpb.TaskSpec, rule, action, point string) {
	if spec.GetTrace() == nil {
		return
	}
	task := ""
	if id, err := ids.FromBytes(spec.GetTaskId()); err == nil {
		task = id.String()
	}
	ctx := telemetry.Extract(context.Background(), spec.GetTrace())
	_, span := tracer.Start(ctx, "fault "+spec.GetName(), trace.WithAttributes(
		attribute.String("atoll.task_id", task), attribute.Int("atoll.attempt", int(spec.GetAttempt()))))
	span.AddEvent(faultplan.SpanEvent, trace.WithAttributes(
		attribute.String("atoll.fault.rule", rule),
		attribute.String("atoll.fault.action", action),
		attribute.String("atoll.fault.point", point)))
	span.End()
}
