package telemetry

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/atoll-runtime/atoll/atollpb"
)

func TestInjectExtractRoundTrip(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	ctx, parent := Tracer(tp).Start(context.Background(), "parent")
	tc := Inject(ctx)
	if tc == nil || tc.Traceparent == "" {
		t.Fatal("no traceparent injected")
	}
	_, child := Tracer(tp).Start(Extract(context.Background(), tc), "child")
	child.End()
	parent.End()
	spans := rec.Ended()
	if spans[0].Parent().SpanID() != parent.SpanContext().SpanID() {
		t.Fatalf("child's parent %v, want %v", spans[0].Parent().SpanID(), parent.SpanContext().SpanID())
	}
	links := Links([]*atollpb.TraceContext{tc, nil})
	if len(links) != 1 || links[0].SpanContext.SpanID() != parent.SpanContext().SpanID() {
		t.Fatalf("links %v", links)
	}
	if Inject(context.Background()) != nil {
		t.Fatal("inject without a span should give nil")
	}
}

func TestLogHandlerStampsIDs(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(NewLogHandler(slog.NewTextHandler(&buf, nil)))
	tp := sdktrace.NewTracerProvider()
	ctx, span := Tracer(tp).Start(context.Background(), "s")
	defer span.End()
	ctx = WithTaskID(ctx, "t123")
	log.InfoContext(ctx, "hello")
	out := buf.String()
	for _, want := range []string{"trace_id=" + span.SpanContext().TraceID().String(), "span_id=", "task_id=t123"} {
		if !strings.Contains(out, want) {
			t.Errorf("log line %q lacks %q", out, want)
		}
	}
	_ = trace.SpanFromContext(ctx)
}

func TestProviderFromEnvOffByDefault(t *testing.T) {
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "")
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "")
	tp, err := ProviderFromEnv(context.Background())
	if err != nil || tp != nil {
		t.Fatalf("want no provider, got %v %v", tp, err)
	}
}
