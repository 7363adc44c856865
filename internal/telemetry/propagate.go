package telemetry

import (
	"context"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/atoll-runtime/atoll/atollpb"
)

// TracerName is the instrumentation scope of every atoll span.
const TracerName = "github.com/atoll-runtime/atoll"

// w3c is the wire format of trace context in atoll messages, whatever
// global propagator the user configured.
var w3c = propagation.TraceContext{}

type protoCarrier struct{ tc *atollpb.TraceContext }

func (c protoCarrier) Get(key string) string {
	switch key {
	case "traceparent":
		return c.tc.GetTraceparent()
	case "tracestate":
		return c.tc.GetTracestate()
	}
	return ""
}

func (c protoCarrier) Set(key, value string) {
	switch key {
	case "traceparent":
		c.tc.Traceparent = value
	case "tracestate":
		c.tc.Tracestate = value
	}
}

func (c protoCarrier) Keys() []string { return []string{"traceparent", "tracestate"} }

// Inject returns the trace context of ctx's span, or nil when ctx carries
// no valid span. It carries the trace's OTLP destination: ctx's (see
// Extract), else this process's own (SetLocalExport), if any.
func Inject(ctx context.Context) *atollpb.TraceContext {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return nil
	}
	tc := &atollpb.TraceContext{Export: ExportFrom(ctx)}
	if tc.Export == nil {
		tc.Export = local.Load()
	}
	w3c.Inject(ctx, protoCarrier{tc})
	return tc
}

// Extract returns ctx with the remote span of tc as its parent and tc's
// OTLP destination as its trace's (atoll's Tracer starts the spans of
// ctx there).
func Extract(ctx context.Context, tc *atollpb.TraceContext) context.Context {
	if tc == nil || tc.Traceparent == "" {
		return ctx
	}
	if tc.Export != nil {
		ctx = withExport(ctx, tc.Export)
	}
	return w3c.Extract(ctx, protoCarrier{tc})
}

// SpanContext decodes tc into a span context (invalid when tc is empty).
func SpanContext(tc *atollpb.TraceContext) trace.SpanContext {
	return trace.SpanContextFromContext(Extract(context.Background(), tc))
}

// Links returns span links to the producers in tcs, skipping empty ones.
func Links(tcs []*atollpb.TraceContext) []trace.Link {
	var links []trace.Link
	for _, tc := range tcs {
		if sc := SpanContext(tc); sc.IsValid() {
			links = append(links, trace.Link{SpanContext: sc})
		}
	}
	return links
}
