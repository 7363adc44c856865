package actors

import (
	"context"
	"sync"
	"testing"

	"github.com/asynkron/protoactor-go/actor"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// traced starts a "receive" span under the trace context of each message's
// headers and answers with that span's context.
type traced struct {
	tracer trace.Tracer
}

func (a *traced) Receive(c actor.Context) {
	if _, ok := c.Message().(ping); !ok {
		return
	}
	ctx := ExtractTrace(context.Background(), c.MessageHeader())
	_, span := a.tracer.Start(ctx, "receive")
	span.End() // before answering, so the sender finds it recorded
	c.Respond(span.SpanContext())
}

func newRecordingTracer(t *testing.T) (trace.Tracer, *tracetest.SpanRecorder) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	return tp.Tracer("actors-test"), rec
}

func TestTracePropagatesThroughRequestFuture(t *testing.T) {
	system := newTestSystem(t)
	tracer, rec := newRecordingTracer(t)
	pid := system.Root.Spawn(actor.PropsFromProducer(func() actor.Actor { return &traced{tracer: tracer} }))

	ctx, send := tracer.Start(context.Background(), "send")
	got := result(t, RequestFuture(ctx, system.Root, pid, ping{}, waitTimeout)).(trace.SpanContext)
	send.End()

	if got.TraceID() != send.SpanContext().TraceID() {
		t.Fatalf("receiver trace %v, sender trace %v", got.TraceID(), send.SpanContext().TraceID())
	}
	var receive sdktrace.ReadOnlySpan
	for _, s := range rec.Ended() {
		if s.Name() == "receive" {
			receive = s
		}
	}
	if receive == nil {
		t.Fatal("no receive span recorded")
	}
	if receive.Parent().SpanID() != send.SpanContext().SpanID() || !receive.Parent().IsRemote() {
		t.Fatalf("receive parent %v (remote %v), want remote parent %v",
			receive.Parent().SpanID(), receive.Parent().IsRemote(), send.SpanContext().SpanID())
	}
}

func TestRequestFutureConcurrentTraces(t *testing.T) {
	system := newTestSystem(t)
	tracer, _ := newRecordingTracer(t)
	pid := system.Root.Spawn(actor.PropsFromProducer(func() actor.Actor { return &traced{tracer: tracer} }))

	const senders = 32
	var wg sync.WaitGroup
	errs := make(chan string, senders)
	for range senders {
		wg.Go(func() {
			ctx, span := tracer.Start(context.Background(), "send")
			defer span.End()
			v, err := RequestFuture(ctx, system.Root, pid, ping{}, waitTimeout).Result()
			if err != nil {
				errs <- err.Error()
				return
			}
			if v.(trace.SpanContext).TraceID() != span.SpanContext().TraceID() {
				errs <- "reply carries another sender's trace"
			}
		})
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

func TestRequestFutureWithoutSpan(t *testing.T) {
	system := newTestSystem(t)
	tracer, _ := newRecordingTracer(t)
	pid := system.Root.Spawn(actor.PropsFromProducer(func() actor.Actor { return &traced{tracer: tracer} }))
	if h := InjectTrace(context.Background()); h != nil {
		t.Fatalf("headers without a span: %v", h)
	}
	got := result(t, RequestFuture(context.Background(), system.Root, pid, ping{}, waitTimeout)).(trace.SpanContext)
	if !got.IsValid() {
		t.Fatal("receiver span invalid")
	}
}

func TestInjectExtractRoundTrip(t *testing.T) {
	tracer, _ := newRecordingTracer(t)
	ctx, span := tracer.Start(context.Background(), "x")
	defer span.End()
	h := InjectTrace(ctx)
	if h["traceparent"] == "" {
		t.Fatalf("no traceparent in %v", h)
	}
	env := &actor.MessageEnvelope{Header: h}
	sc := trace.SpanContextFromContext(ExtractTrace(context.Background(), env.Header))
	if !sc.Equal(span.SpanContext().WithRemote(true)) {
		t.Fatalf("extracted %v, want %v", sc, span.SpanContext())
	}
	if got := ExtractTrace(context.Background(), nil); trace.SpanContextFromContext(got).IsValid() {
		t.Fatal("nil header produced a span context")
	}
}
