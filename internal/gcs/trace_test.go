package gcs

import (
	"errors"
	"testing"

	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/ids"
)

func TestServerSpanIsChildOfCallerSpan(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	defer func() { _ = tp.Shutdown(ctxT(t)) }()

	e := newEnv(t)
	e.stopGCS()
	e.startGCS(Config{TracerProvider: tp})

	ctx, caller := tp.Tracer("test").Start(ctxT(t), "caller", trace.WithSpanKind(trace.SpanKindClient))
	if _, err := e.client.ListNodes(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := e.client.GetActor(ctx, ids.NewActorID().Bytes()); !errors.Is(err, errs.ErrNotFound) {
		t.Fatalf("GetActor: %v", err)
	}
	caller.End()

	want := caller.SpanContext()
	spans := map[string]sdktrace.ReadOnlySpan{}
	for _, s := range rec.Ended() {
		spans[s.Name()] = s
	}
	for _, name := range []string{"gcs list_nodes", "gcs get_actor"} {
		s, ok := spans[name]
		if !ok {
			t.Fatalf("no span %q among %v", name, spans)
		}
		if s.SpanKind() != trace.SpanKindServer {
			t.Errorf("%s: kind %v, want server", name, s.SpanKind())
		}
		if s.Parent().TraceID() != want.TraceID() || s.Parent().SpanID() != want.SpanID() || !s.Parent().IsRemote() {
			t.Errorf("%s: parent %v, want the caller's span %v (remote)", name, s.Parent(), want)
		}
	}
	if got := spans["gcs get_actor"].Status().Code; got != codes.Error {
		t.Errorf("NOT_FOUND reply: span status %v, want error", got)
	}
	if got := spans["gcs list_nodes"].Status().Code; got == codes.Error {
		t.Errorf("successful reply: span status %v", got)
	}
}
