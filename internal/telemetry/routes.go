package telemetry

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/embedded"
	"google.golang.org/protobuf/proto"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/ids"
)

// A job's spans go to the collector of the driver that submitted it,
// wherever they are made: the driver puts its OTLP destination
// (ExportFromEnv, SetLocalExport) into every trace context it injects,
// Extract puts it into the context of whatever continues the trace (a
// raylet's queue span, a worker's execute span, a nested submission,
// which injects it again), and atoll's tracer (Tracer) starts each span
// on a tracer provider exporting there: this process's own provider when
// the destination is its own (the driver), else one of routes, a small
// table of providers, one per job and destination, made on first use.

// maxRoutes bounds the providers of routes; the least recently used goes
// (flushed in the background) when a new one needs the place.
const maxRoutes = 32

type exportKey struct{}

// withExport records the destination of ctx's trace.
func withExport(ctx context.Context, ex *atollpb.TraceExport) context.Context {
	return context.WithValue(ctx, exportKey{}, ex)
}

// ExportFrom returns the OTLP destination of ctx's trace, or nil.
func ExportFrom(ctx context.Context) *atollpb.TraceExport {
	ex, _ := ctx.Value(exportKey{}).(*atollpb.TraceExport)
	return ex
}

// local is this process's own destination (a driver's, from its
// environment): injected into trace contexts that carry none.
var local atomic.Pointer[atollpb.TraceExport]

// SetLocalExport sets this process's own OTLP destination (nil: none).
// A driver sets it at Init when it exports over OTLP, so the spans its
// jobs' tasks make on other nodes reach the same collector.
func SetLocalExport(ex *atollpb.TraceExport) { local.Store(ex) }

func isLocal(ex *atollpb.TraceExport) bool {
	l := local.Load()
	return l != nil && (l == ex || proto.Equal(l, ex))
}

// routingTracer starts spans on the provider of their trace's
// destination; def is this process's own.
type routingTracer struct {
	embedded.Tracer
	def trace.Tracer
}

func (t routingTracer) Start(ctx context.Context, name string, opts ...trace.SpanStartOption) (context.Context, trace.Span) {
	if ex := ExportFrom(ctx); ex != nil && !isLocal(ex) {
		if tr := routes.tracer(ex); tr != nil {
			return tr.Start(ctx, name, opts...)
		}
	}
	return t.def.Start(ctx, name, opts...)
}

type route struct {
	tp     *sdktrace.TracerProvider // nil: the destination is invalid; spans stay local
	tracer trace.Tracer
	used   uint64
}

type routeTable struct {
	mu    sync.Mutex
	clock uint64
	byKey map[string]*route
}

var routes = &routeTable{byKey: map[string]*route{}}

func (rt *routeTable) tracer(ex *atollpb.TraceExport) trace.Tracer {
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(ex)
	if err != nil {
		return nil
	}
	key := string(b)
	rt.mu.Lock()
	defer rt.mu.Unlock()
	rt.clock++
	if r := rt.byKey[key]; r != nil {
		r.used = rt.clock
		return r.tracer
	}
	if len(rt.byKey) >= maxRoutes {
		rt.evictLocked()
	}
	r := &route{used: rt.clock}
	if err := ValidateExport(ex); err != nil {
		slog.Warn("atoll: a trace's OTLP destination is invalid; its spans stay with this process's exporter", "err", err)
	} else if exp, err := exporterFor(context.Background(), ex); err != nil {
		slog.Warn("atoll: cannot export to a job's OTLP destination; its spans stay with this process's exporter", "endpoint", ex.Endpoint, "err", err)
	} else {
		job := ""
		if id, err := ids.FromBytes(ex.JobId); err == nil {
			job = id.String()
		}
		r.tp = sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(jobResource(context.Background(), job, ex.ServiceName)))
		r.tracer = r.tp.Tracer(TracerName)
	}
	rt.byKey[key] = r
	return r.tracer
}

// evictLocked drops the least recently used route, flushing its provider
// in the background.
func (rt *routeTable) evictLocked() {
	var oldKey string
	var old *route
	for k, r := range rt.byKey {
		if old == nil || r.used < old.used {
			oldKey, old = k, r
		}
	}
	delete(rt.byKey, oldKey)
	if old != nil && old.tp != nil {
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_ = old.tp.Shutdown(ctx)
		}()
	}
}

// FlushRoutes exports every span the job providers hold (a node's Stop).
func FlushRoutes(ctx context.Context) error {
	var errList []error
	for _, tp := range routes.providers(false) {
		errList = append(errList, tp.ForceFlush(ctx))
	}
	return errors.Join(errList...)
}

// ShutdownRoutes exports every span the job providers hold and drops
// them (a process about to exit).
func ShutdownRoutes(ctx context.Context) error {
	var errList []error
	for _, tp := range routes.providers(true) {
		errList = append(errList, tp.Shutdown(ctx))
	}
	return errors.Join(errList...)
}

func (rt *routeTable) providers(drop bool) []*sdktrace.TracerProvider {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	var out []*sdktrace.TracerProvider
	for _, r := range rt.byKey {
		if r.tp != nil {
			out = append(out, r.tp)
		}
	}
	if drop {
		rt.byKey = map[string]*route{}
	}
	return out
}
