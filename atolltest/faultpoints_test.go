package atolltest_test

import (
	"context"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/atoll-runtime/atoll"
	"github.com/atoll-runtime/atoll/atolltest"
	"github.com/atoll-runtime/atoll/faultplan"
	"github.com/atoll-runtime/atoll/internal/actors"
)

// Tests of kill-worker rules: the raylet SIGKILLs the worker process of
// a task or an actor at a point, and the runtime retries or restarts.

var (
	fpAttempt = func(ctx context.Context, x int) (int, error) { return 100*atoll.CurrentAttempt(ctx) + x, nil }
	fpBefore  = atoll.NewFunc1("fp.kill.before", fpAttempt)
	fpAfter   = atoll.NewFunc1("fp.kill.after", fpAttempt)
	fpNever   = atoll.NewFunc1("fp.kill.never", fpAttempt)

	fpCounter = atoll.NewActorType1("fp.counter", func(_ context.Context, start int) (*counter, error) {
		return &counter{n: start}, nil
	})
	fpAdd = atoll.NewMethod1(fpCounter, "Add", func(c *counter, _ context.Context, d int) (int, error) {
		c.n += d
		return c.n, nil
	})
	fpPid = atoll.NewMethod0(fpCounter, "Pid", func(*counter, context.Context) (int, error) { return os.Getpid(), nil })
)

const killPlan = `
seed: 1
rules:
  - {name: kill-before, action: kill-worker, point: before-execute, task: fp.kill.before, count: 1}
  - {name: kill-after, action: kill-worker, point: after-execute, task: fp.kill.after, count: 2}
  - {name: kill-call, action: kill-worker, point: before-execute, task: fp.counter.Add, count: 1}
  - {name: kill-reply, action: kill-worker, point: after-execute, task: fp.counter.Add, count: 1}
`

// startTracedPlan runs atoll with worker processes under plan, its spans
// going to the exporter it returns.
func startTracedPlan(t *testing.T, plan string) (context.Context, *tracetest.InMemoryExporter) {
	t.Helper()
	p, err := faultplan.Parse([]byte(plan))
	if err != nil {
		t.Fatal(err)
	}
	spans := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	return startProcesses(t, atoll.WithFaultPlan(p), atoll.WithTracerProvider(tp)), spans
}

// faultEvents returns the atoll.fault span events spans holds, as "rule
// action@point", and the span each is on; each span must have a parent
// in its own trace (the task's submit span).
func faultEvents(t *testing.T, spans *tracetest.InMemoryExporter) ([]string, []tracetest.SpanStub) {
	t.Helper()
	var events []string
	var on []tracetest.SpanStub
	for _, s := range spans.GetSpans() {
		for _, e := range s.Events {
			if e.Name != faultplan.SpanEvent {
				continue
			}
			attrs := map[string]string{}
			for _, a := range e.Attributes {
				attrs[string(a.Key)] = a.Value.String()
			}
			if !s.Parent.IsValid() || s.Parent.TraceID() != s.SpanContext.TraceID() {
				t.Errorf("fault span %s has no parent in the task's trace", s.Name)
			}
			events = append(events, attrs["atoll.fault.rule"]+" "+attrs["atoll.fault.action"]+"@"+attrs["atoll.fault.point"])
			on = append(on, s)
		}
	}
	return events, on
}

func TestFaultPlanKillsWorkersAtPoints(t *testing.T) {
	ctx, spans := startTracedPlan(t, killPlan)

	// Killed before it ran: the retry (attempt 1) answers.
	if v, err := atoll.Get(ctx, fpBefore.Remote(ctx, atoll.Value(1), atoll.MaxRetries(1))); err != nil || v != 101 {
		t.Fatalf("task killed before execute: %v %v, want attempt 1's 101", v, err)
	}
	// Killed after it ran, twice: without retries enough the kill is a
	// worker crash, with them the third attempt answers.
	var crashed *atoll.WorkerCrashedError
	if _, err := atoll.Get(ctx, fpAfter.Remote(ctx, atoll.Value(2), atoll.MaxRetries(0))); !errors.As(err, &crashed) {
		t.Fatalf("task killed after execute without retries: %v, want WorkerCrashedError", err)
	}
	if v, err := atoll.Get(ctx, fpAfter.Remote(ctx, atoll.Value(2), atoll.MaxRetries(1))); err != nil || v != 102 {
		t.Fatalf("task killed after execute: %v %v, want attempt 1's 102", v, err)
	}
	if v, err := atoll.Get(ctx, fpNever.Remote(ctx, atoll.Value(3), atoll.MaxRetries(0))); err != nil || v != 3 {
		t.Fatalf("a task no rule names: %v %v", v, err)
	}

	// An actor's call killed before and after execute: the process dies
	// each time, the actor restarts (its constructor again) and the call
	// is retried.
	c, err := fpCounter.New(ctx, atoll.Value(10), atoll.MaxRestarts(2), atoll.MaxTaskRetries(2))
	if err != nil {
		t.Fatal(err)
	}
	pid, err := atoll.Get(ctx, fpPid.Remote(ctx, c))
	if err != nil {
		t.Fatal(err)
	}
	if v, err := atoll.Get(ctx, fpAdd.Remote(ctx, c, atoll.Value(5))); err != nil || v != 15 {
		t.Fatalf("actor call killed twice: %v %v, want 15 on a fresh instance", v, err)
	}
	if p2, err := atoll.Get(ctx, fpPid.Remote(ctx, c)); err != nil || p2 == pid {
		t.Fatalf("actor process %d after the kills, %d before: %v", p2, pid, err)
	}
	if v, err := atoll.Get(ctx, fpAdd.Remote(ctx, c, atoll.Value(1))); err != nil || v != 16 {
		t.Fatalf("next call: %v %v", v, err)
	}

	log, err := atolltest.GetFaultLog(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range log.Messages {
		if e.Kind != actors.FaultKillWorker {
			t.Fatalf("unexpected fault %v", e)
		}
		got = append(got, e.Rule+" "+e.Task+"@"+e.Point)
	}
	want := []string{"kill-before fp.kill.before@before-execute", "kill-after fp.kill.after@after-execute", "kill-after fp.kill.after@after-execute",
		"kill-call fp.counter.Add@before-execute", "kill-reply fp.counter.Add@after-execute"}
	if !slices.Equal(got, want) {
		t.Fatalf("fault log %q, want %q", got, want)
	}

	// Each kill is an atoll.fault event on a span of the task's trace.
	events, _ := faultEvents(t, spans)
	wantEvents := []string{"kill-before kill-worker@before-execute", "kill-after kill-worker@after-execute", "kill-after kill-worker@after-execute",
		"kill-call kill-worker@before-execute", "kill-reply kill-worker@after-execute"}
	if !slices.Equal(events, wantEvents) {
		t.Fatalf("span events %q, want %q", events, wantEvents)
	}
}

// TestMessageFaultsOnTheTrace: a message fault that hits a message
// carrying a task (here a delayed submission) is an atoll.fault event on
// a span of that task's trace, as worker kills are.
func TestMessageFaultsOnTheTrace(t *testing.T) {
	ctx, spans := startTracedPlan(t, `
seed: 1
rules:
  - {name: slow-submit, action: delay, message: SubmitTask, actor: raylet, delay: 1ms, count: 1}
`)
	if v, err := atoll.Get(ctx, fpNever.Remote(ctx, atoll.Value(4))); err != nil || v != 4 {
		t.Fatalf("a delayed submission: %v %v", v, err)
	}
	log, err := atolltest.GetFaultLog(ctx)
	if err != nil || len(log.Messages) != 1 {
		t.Fatalf("fault log %v, %v; want the one delay", log.Messages, err)
	}
	m := log.Messages[0]
	want := "slow-submit delay@message " + m.Message + "@" + m.Actor
	got, on := faultEvents(t, spans)
	if !slices.Equal(got, []string{want}) {
		t.Fatalf("span events %q, want [%q]", got, want)
	}
	if on[0].Name != "fault fp.kill.never" {
		t.Errorf("the fault is on span %q, want %q", on[0].Name, "fault fp.kill.never")
	}
	taskSpans := map[trace.TraceID]int{} // spans of the task other than the fault's
	for _, s := range spans.GetSpans() {
		if s.Name != "fault fp.kill.never" && strings.Contains(s.Name, "fp.kill.never") {
			taskSpans[s.SpanContext.TraceID()]++
		}
	}
	if faultTrace := on[0].SpanContext.TraceID(); taskSpans[faultTrace] == 0 {
		t.Errorf("the fault span is in trace %v, where the task has no span (%v)", faultTrace, taskSpans)
	}
}
