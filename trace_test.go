package atoll_test

import (
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/atoll-runtime/atoll"
)

func spansNamed(spans []sdktrace.ReadOnlySpan, name string) []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, s := range spans {
		if s.Name() == name {
			out = append(out, s)
		}
	}
	return out
}

func TestTraceShape(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	ctx := start(t, atoll.WithTracerProvider(tp))
	ctx, root := tp.Tracer("test").Start(ctx, "test-root")
	a := double.Remote(ctx, atoll.Value(1))
	b := double.Remote(ctx, a)
	if v, err := atoll.Get(ctx, b); err != nil || v != 4 {
		t.Fatalf("%v %v", v, err)
	}
	root.End()

	spans := rec.Ended()
	byID := map[trace.SpanID]sdktrace.ReadOnlySpan{}
	for _, s := range spans {
		byID[s.SpanContext().SpanID()] = s
		if strings.ContainsAny(s.Name(), "0123456789abcdef") && strings.Count(s.Name(), "") > 40 {
			t.Errorf("span name %q looks high-cardinality", s.Name())
		}
	}
	submits := spansNamed(spans, "submit test.double")
	executes := spansNamed(spans, "execute test.double")
	queues := spansNamed(spans, "queue test.double")
	schedules := spansNamed(spans, "schedule test.double")
	if len(submits) != 2 || len(executes) != 2 || len(queues) != 2 || len(schedules) != 2 {
		t.Fatalf("span counts: submit %d execute %d queue %d schedule %d; all: %v", len(submits), len(executes), len(queues), len(schedules), names(spans))
	}
	for _, s := range submits {
		if s.Parent().SpanID() != root.SpanContext().SpanID() || s.SpanKind() != trace.SpanKindProducer {
			t.Errorf("submit span: parent %v kind %v, want the caller's span and producer", s.Parent().SpanID(), s.SpanKind())
		}
	}
	submitOf := map[string]trace.SpanID{}
	for _, s := range submits {
		submitOf[attr(s, "atoll.task_id")] = s.SpanContext().SpanID()
	}
	for _, group := range [][]sdktrace.ReadOnlySpan{executes, queues, schedules} {
		for _, s := range group {
			if want := submitOf[attr(s, "atoll.task_id")]; s.Parent().SpanID() != want {
				t.Errorf("%s: parent %v, want its submit span %v", s.Name(), s.Parent().SpanID(), want)
			}
		}
	}
	for _, s := range queues {
		if attr(s, "atoll.pending_reason") == "" {
			t.Errorf("queue span lacks atoll.pending_reason")
		}
	}
	// The second execution consumed a's result: it links to a's execute span.
	var consumer, producer sdktrace.ReadOnlySpan
	for _, s := range executes {
		if len(s.Links()) > 0 {
			consumer = s
		} else {
			producer = s
		}
		if s.SpanKind() != trace.SpanKindConsumer {
			t.Errorf("execute span kind %v, want consumer", s.SpanKind())
		}
	}
	if consumer == nil || producer == nil || consumer.Links()[0].SpanContext.SpanID() != producer.SpanContext().SpanID() {
		t.Fatalf("the consuming task does not link to its producer's execute span")
	}
	for _, s := range spansNamed(spans, "store_outputs test.double") {
		if p := byID[s.Parent().SpanID()]; p == nil || !strings.HasPrefix(p.Name(), "execute ") {
			t.Errorf("store_outputs is not under an execute span")
		}
	}
}

func TestNestedTaskSpansHangUnderTheirParentsExecution(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	ctx := start(t, atoll.WithTracerProvider(tp))
	if _, err := atoll.Get(ctx, nest.Remote(ctx, atoll.Value(2))); err != nil {
		t.Fatal(err)
	}
	spans := rec.Ended()
	byID := map[trace.SpanID]sdktrace.ReadOnlySpan{}
	for _, s := range spans {
		byID[s.SpanContext().SpanID()] = s
	}
	submits := spansNamed(spans, "submit test.nest")
	if len(submits) != 3 {
		t.Fatalf("%d submit spans, want 3: %v", len(submits), names(spans))
	}
	nested := 0
	traceID := submits[0].SpanContext().TraceID()
	for _, s := range submits {
		if s.SpanContext().TraceID() != traceID {
			t.Errorf("nested tasks left the trace")
		}
		if p := byID[s.Parent().SpanID()]; p != nil && p.Name() == "execute test.nest" {
			nested++
		}
	}
	if nested != 2 {
		t.Fatalf("%d nested submits under an execute span, want 2", nested)
	}
}

func attr(s sdktrace.ReadOnlySpan, key string) string {
	for _, kv := range s.Attributes() {
		if string(kv.Key) == key {
			return kv.Value.String()
		}
	}
	return ""
}

func names(spans []sdktrace.ReadOnlySpan) []string {
	var out []string
	for _, s := range spans {
		out = append(out, s.Name())
	}
	return out
}
