package sim

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"io"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/embedded"
	"go.opentelemetry.io/otel/trace/noop"
)

// The OpenTelemetry spans of a simulated run: the runtimes trace as they
// do in a real process (submit, execute, fetch_args, store_outputs,
// ...), with trace and span ids counted from the run's start and
// timestamps of the simulated clock, so a replay's spans are the same
// spans. They are written as JSON lines, one span each, when the run is
// given a writer (Config.Spans); otherwise nothing is recorded.

type tracer struct {
	w   *World
	tp  *sdktrace.TracerProvider
	out io.Writer
	seq uint64
}

func newTracer(w *World, out io.Writer) *tracer {
	t := &tracer{w: w, out: out}
	if out != nil {
		t.tp = sdktrace.NewTracerProvider(sdktrace.WithIDGenerator(t), sdktrace.WithSpanProcessor(sdktrace.NewSimpleSpanProcessor(t)),
			sdktrace.WithSampler(sdktrace.AlwaysSample()))
	}
	return t
}

// provider is the tracer provider of process p.
func (t *tracer) provider(p *proc) trace.TracerProvider {
	if t.tp == nil {
		return noop.NewTracerProvider()
	}
	return simProvider{tp: t.tp, now: func() time.Time { return p.node.now() }, proc: p.name}
}

// NewIDs implements sdktrace.IDGenerator: counted ids.
func (t *tracer) NewIDs(context.Context) (trace.TraceID, trace.SpanID) {
	var tid trace.TraceID
	t.seq++
	binary.BigEndian.PutUint64(tid[8:], t.seq)
	return tid, t.NewSpanID(context.Background(), tid)
}

// NewSpanID implements sdktrace.IDGenerator.
func (t *tracer) NewSpanID(context.Context, trace.TraceID) trace.SpanID {
	var sid trace.SpanID
	t.seq++
	binary.BigEndian.PutUint64(sid[:], t.seq)
	return sid
}

// jsonSpan is one span as written.
type jsonSpan struct {
	Name     string            `json:"name"`
	Trace    string            `json:"trace_id"`
	Span     string            `json:"span_id"`
	Parent   string            `json:"parent_id,omitempty"`
	Start    float64           `json:"start_s"`
	End      float64           `json:"end_s"`
	Status   string            `json:"status,omitempty"`
	Attrs    map[string]string `json:"attributes,omitempty"`
	Events   []string          `json:"events,omitempty"`
	Resource string            `json:"process,omitempty"`
}

// ExportSpans implements sdktrace.SpanExporter.
func (t *tracer) ExportSpans(_ context.Context, spans []sdktrace.ReadOnlySpan) error {
	enc := json.NewEncoder(t.out)
	for _, s := range spans {
		js := jsonSpan{Name: s.Name(), Trace: s.SpanContext().TraceID().String(), Span: s.SpanContext().SpanID().String(),
			Start: since(s.StartTime()).Seconds(), End: since(s.EndTime()).Seconds(), Attrs: map[string]string{}}
		if p := s.Parent(); p.IsValid() {
			js.Parent = p.SpanID().String()
		}
		if s.Status().Code.String() != "Unset" {
			js.Status = s.Status().Code.String() + " " + s.Status().Description
		}
		for _, a := range s.Attributes() {
			js.Attrs[string(a.Key)] = a.Value.String()
		}
		for _, e := range s.Events() {
			js.Events = append(js.Events, e.Name)
		}
		if err := enc.Encode(js); err != nil {
			return err
		}
	}
	return nil
}

// Shutdown implements sdktrace.SpanExporter.
func (t *tracer) Shutdown(context.Context) error { return nil }

// simProvider stamps the spans of a process with its node's clock.
type simProvider struct {
	embedded.TracerProvider
	tp   *sdktrace.TracerProvider
	now  func() time.Time
	proc string
}

func (p simProvider) Tracer(name string, opts ...trace.TracerOption) trace.Tracer {
	return simTracer{tr: p.tp.Tracer(name, opts...), now: p.now, proc: p.proc}
}

type simTracer struct {
	embedded.Tracer
	tr   trace.Tracer
	now  func() time.Time
	proc string
}

func (t simTracer) Start(ctx context.Context, name string, opts ...trace.SpanStartOption) (context.Context, trace.Span) {
	opts = append(opts, trace.WithTimestamp(t.now()), trace.WithAttributes(attribute.String("atoll.sim.process", t.proc)))
	ctx, sp := t.tr.Start(ctx, name, opts...)
	s := simSpan{Span: sp, now: t.now}
	return trace.ContextWithSpan(ctx, s), s
}

type simSpan struct {
	trace.Span
	now func() time.Time
}

func (s simSpan) End(opts ...trace.SpanEndOption) {
	s.Span.End(append(opts, trace.WithTimestamp(s.now()))...)
}

func (s simSpan) AddEvent(name string, opts ...trace.EventOption) {
	s.Span.AddEvent(name, append(opts, trace.WithTimestamp(s.now()))...)
}
