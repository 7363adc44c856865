package telemetry

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

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

// taskName is a task id as a Stringer.
type taskName string

func (n taskName) String() string { return string(n) }

func TestLogHandlerStampsIDs(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(NewLogHandler(slog.NewTextHandler(&buf, nil)))
	tp := sdktrace.NewTracerProvider()
	ctx, span := Tracer(tp).Start(context.Background(), "s")
	defer span.End()
	ctx = WithTaskID(ctx, taskName("t123"))
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

func TestExportFromEnv(t *testing.T) {
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "")
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318/")
	t.Setenv("OTEL_EXPORTER_OTLP_HEADERS", "api-key=a%20b,x=y")
	t.Setenv("OTEL_EXPORTER_OTLP_TIMEOUT", "1500")
	t.Setenv("OTEL_SERVICE_NAME", "quickstart")
	ex := ExportFromEnv([]byte{1, 2})
	if ex == nil || ex.Endpoint != "http://collector:4318/v1/traces" || ex.Protocol != "http/protobuf" ||
		ex.Headers["api-key"] != "a b" || ex.Headers["x"] != "y" || ex.TimeoutMs != 1500 || ex.ServiceName != "quickstart" {
		t.Fatalf("export %v", ex)
	}
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "collector:4317")
	t.Setenv("OTEL_EXPORTER_OTLP_INSECURE", "true")
	if ex := ExportFromEnv(nil); ex == nil || ex.Endpoint != "http://collector:4317" || ex.Protocol != "grpc" {
		t.Fatalf("grpc export %v", ex)
	}
	t.Setenv("OTEL_TRACES_EXPORTER", "none")
	if ex := ExportFromEnv(nil); ex != nil {
		t.Fatalf("OTEL_TRACES_EXPORTER=none: export %v", ex)
	}
}

func TestValidateExportRejectsBadInput(t *testing.T) {
	good := &atollpb.TraceExport{Endpoint: "http://c:4318/v1/traces", Protocol: "http/protobuf"}
	if err := ValidateExport(good); err != nil {
		t.Fatal(err)
	}
	many := map[string]string{}
	for i := range maxExportHeaders + 1 {
		many[strings.Repeat("k", i+1)] = "v"
	}
	for _, bad := range []*atollpb.TraceExport{
		{Endpoint: "file:///etc/passwd", Protocol: "http/protobuf"},
		{Endpoint: "http://", Protocol: "http/protobuf"},
		{Endpoint: "http://c:4318", Protocol: "thrift"},
		{Endpoint: "http://c:4318", Protocol: "grpc", Compression: "zstd"},
		{Endpoint: "http://c:4318", Protocol: "grpc", Headers: many},
		{Endpoint: "http://c:4318", Protocol: "grpc", Headers: map[string]string{"k": strings.Repeat("v", maxExportFieldSize)}},
		{Endpoint: "http://c:4318", Protocol: "grpc", JobId: make([]byte, 65)},
	} {
		if ValidateExport(bad) == nil {
			t.Errorf("accepted %v", bad)
		}
	}
	// An invalid destination from the wire leaves spans with the local
	// provider.
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	ctx, parent := tp.Tracer("t").Start(context.Background(), "p")
	tc := Inject(ctx)
	tc.Export = &atollpb.TraceExport{Endpoint: "ftp://x", Protocol: "grpc"}
	_, s := Tracer(tp).Start(Extract(context.Background(), tc), "child")
	s.End()
	parent.End()
	if len(rec.Ended()) != 2 {
		t.Fatalf("%d spans recorded locally, want 2", len(rec.Ended()))
	}
	_ = ShutdownRoutes(context.Background())
}

func TestExportTravelsWithTheTraceContext(t *testing.T) {
	ex := &atollpb.TraceExport{Endpoint: "http://127.0.0.1:1/v1/traces", Protocol: "http/protobuf", JobId: []byte{7}}
	SetLocalExport(ex)
	defer SetLocalExport(nil)
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	ctx, root := Tracer(tp).Start(context.Background(), "root")
	tc := Inject(ctx)
	if tc.Export != ex {
		t.Fatalf("the driver's destination is not injected: %v", tc.Export)
	}
	// Another process continues the trace: its context carries the
	// destination, a nested submission injects it again, and a span
	// there is not this process's (it goes to the job's provider).
	SetLocalExport(nil)
	remote := Extract(context.Background(), tc)
	if got := Inject(trace.ContextWithSpanContext(remote, trace.SpanContextFromContext(remote))); got == nil || got.Export != ex {
		t.Fatalf("nested inject lost the destination: %v", got)
	}
	_, s := Tracer(tp).Start(remote, "elsewhere")
	s.End()
	root.End()
	if n := len(rec.Ended()); n != 1 {
		t.Fatalf("%d spans with the local provider, want 1 (the job's went to its own)", n)
	}
	if !s.SpanContext().IsValid() || s.SpanContext().TraceID() != root.SpanContext().TraceID() {
		t.Fatalf("the routed span left the trace")
	}
	ctx2, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_ = ShutdownRoutes(ctx2) // its collector does not exist: the export fails
}

// Records tells providers that record spans from those that cannot.
func TestRecords(t *testing.T) {
	if Records(noop.NewTracerProvider()) || Records(nil) {
		t.Fatal("a no-op provider records")
	}
	if Records(otel.GetTracerProvider()) {
		t.Fatal("the global provider records before a program set one")
	}
	if !Records(sdktrace.NewTracerProvider()) {
		t.Fatal("an SDK provider does not record")
	}
}
