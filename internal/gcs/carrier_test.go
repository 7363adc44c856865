package gcs

import (
	"context"
	"slices"
	"testing"

	"github.com/nats-io/nats.go"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

func TestNatsHeaderCarrierRoundTrip(t *testing.T) {
	sc := trace.NewSpanContext(trace.SpanContextConfig{
		TraceID:    trace.TraceID{1, 2, 3},
		SpanID:     trace.SpanID{4, 5, 6},
		TraceFlags: trace.FlagsSampled,
	})
	h := nats.Header{}
	p := propagation.TraceContext{}
	p.Inject(trace.ContextWithSpanContext(context.Background(), sc), natsHeaderCarrier(h))
	if h.Get("traceparent") == "" || !slices.Contains(natsHeaderCarrier(h).Keys(), "traceparent") {
		t.Fatalf("traceparent not injected: %v", h)
	}
	got := trace.SpanContextFromContext(p.Extract(context.Background(), natsHeaderCarrier(h)))
	if got.TraceID() != sc.TraceID() || got.SpanID() != sc.SpanID() || !got.IsRemote() {
		t.Fatalf("extracted %v, want %v", got, sc)
	}
	// A nil header (a message sent without headers) is a valid, empty carrier.
	var empty natsHeaderCarrier
	empty.Set("k", "v")
	if empty.Get("traceparent") != "" || len(empty.Keys()) != 0 {
		t.Fatal("nil carrier is not empty")
	}
}
