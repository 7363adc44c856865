package node

import (
	"context"
	"fmt"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/atoll-runtime/atoll/internal/cluster"
	"github.com/atoll-runtime/atoll/internal/objectstore"
	"github.com/atoll-runtime/atoll/internal/raylet"
)

// activity turns the node's own work outside tasks — objects pulled from
// other nodes, spill writes and restores — into timeline events (kept by
// the raylet, read by `atoll timeline`) and spans (the node's tracer
// provider; root spans, as they serve no one task).
type activity struct {
	system *actor.ActorSystem
	raylet *actor.PID // by name: events before the raylet runs are dropped
	tracer trace.Tracer
	node   attribute.KeyValue
}

func (n *Node) newActivity(tp trace.TracerProvider) *activity {
	return &activity{system: n.system, raylet: n.system.NewLocalPID("raylet"), tracer: tp.Tracer(tracerScope),
		node: attribute.String("atoll.node_id", n.id.String())}
}

// tracerScope names the node's own spans' instrumentation scope.
const tracerScope = "github.com/atoll-runtime/atoll"

// storeIO records a spill write or a restore read (objectstore.Config.OnIO;
// on the store actor's goroutine).
func (a *activity) storeIO(e objectstore.IOEvent) {
	kind, detail := raylet.EventSpill, fmt.Sprintf("%d objects", e.Objects)
	if e.Kind == objectstore.IORestore {
		kind, detail = raylet.EventRestore, "object "+e.Object.Short()
	}
	a.record(raylet.TaskEvent{Name: e.Kind.String(), Kind: kind, Bytes: e.Bytes, Detail: detail, Start: e.Start, End: e.End, Failed: e.Err != nil},
		e.Err, attribute.Int("atoll.objects", e.Objects), attribute.Int64("atoll.size_bytes", int64(e.Bytes)))
}

// transferred records a pull from another node (cluster.Config.OnTransfer).
func (a *activity) transferred(e cluster.TransferEvent) {
	a.record(raylet.TaskEvent{Name: "pull", Kind: raylet.EventTransfer, Bytes: e.Bytes, Detail: "object " + e.Object.Short() + " from node " + e.From.Short(),
		Start: e.Start, End: e.End, Failed: e.Err != nil},
		e.Err, attribute.String("atoll.object_id", e.Object.String()), attribute.String("atoll.peer_node_id", e.From.String()),
		attribute.Int64("atoll.size_bytes", int64(e.Bytes)))
}

func (a *activity) record(e raylet.TaskEvent, err error, attrs ...attribute.KeyValue) {
	a.system.Root.Send(a.raylet, &raylet.AddTimelineEvent{Event: e})
	_, span := a.tracer.Start(context.Background(), e.Name, trace.WithTimestamp(e.Start), trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithAttributes(append(attrs, a.node)...))
	if err != nil {
		span.SetStatus(codes.Error, err.Error())
	}
	span.End(trace.WithTimestamp(maxTime(e.End, e.Start)))
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
