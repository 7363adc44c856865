package atoll_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/atoll-runtime/atoll"
	"github.com/atoll-runtime/atoll/internal/nodeconfig"
	"github.com/atoll-runtime/atoll/internal/otlptest"
	"github.com/atoll-runtime/atoll/internal/testcluster"
)

// The program of the OTLP checks: a driver calls traced.outer, which
// calls traced.inner, which calls the named actor's Add.
type tracedArg struct {
	Actor string
	X     int
}

type tracedAcc struct{ n int }

var (
	tracedAccType = atoll.NewActorType("traced.acc", func(context.Context) (*tracedAcc, error) { return &tracedAcc{}, nil })
	tracedAdd     = atoll.NewMethod1(tracedAccType, "Add", func(a *tracedAcc, _ context.Context, x int) (int, error) {
		a.n += x
		return a.n, nil
	})
	tracedInner = atoll.NewFunc1("traced.inner", func(ctx context.Context, a tracedArg) (int, error) {
		h, err := atoll.GetActor[*tracedAcc](ctx, a.Actor)
		if err != nil {
			return 0, err
		}
		return atoll.Get(ctx, tracedAdd.Remote(ctx, h, atoll.Value(a.X)))
	})
	tracedOuter = atoll.NewFunc1("traced.outer", func(ctx context.Context, a tracedArg) (int, error) {
		a.X++
		return atoll.Get(ctx, tracedInner.Remote(ctx, atoll.Value(a)))
	})
	tracedFail = atoll.NewFunc1("traced.fail", func(ctx context.Context, a tracedArg) (int, error) {
		return 0, fmt.Errorf("traced.fail: as asked")
	})
)

// runTracedProgram runs the program and a failing task, then shuts atoll
// down; it returns the job id.
func runTracedProgram(t *testing.T, opts ...atoll.Option) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := atoll.Init(ctx, opts...); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = atoll.Shutdown(context.Background()) })
	job := jobID()
	if _, err := tracedAccType.New(ctx, atoll.ActorName("traced-"+job)); err != nil {
		t.Fatal(err)
	}
	if v, err := atoll.Get(ctx, tracedOuter.Remote(ctx, atoll.Value(tracedArg{Actor: "traced-" + job, X: 1}))); err != nil || v != 2 {
		t.Fatalf("traced.outer: %v %v", v, err)
	}
	if _, err := atoll.Get(ctx, tracedFail.Remote(ctx, atoll.Value(tracedArg{}), atoll.MaxRetries(0))); err == nil {
		t.Fatal("traced.fail did not fail")
	}
	if err := atoll.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	return job
}

// checkTracedSpans checks the program's trace among spans: every span of
// the three tasks (the actor call included), from the driver and the
// worker processes, in one trace, each under its parent; the failed
// task's submit and execute spans are ERROR. It returns "" if all is
// there, else what is missing.
func checkTracedSpans(spans []otlptest.Span, job string, nodeRole string) string {
	byName := map[string][]otlptest.Span{}
	byID := map[string]otlptest.Span{}
	for _, s := range spans {
		byName[s.Name] = append(byName[s.Name], s)
		byID[s.SpanID()] = s
	}
	one := func(name string) (otlptest.Span, error) {
		if n := len(byName[name]); n != 1 {
			return otlptest.Span{}, fmt.Errorf("%d spans %q, want 1", n, name)
		}
		return byName[name][0], nil
	}
	var missing []string
	want := func(child, parent string, role string) {
		c, err := one(child)
		if err != nil {
			missing = append(missing, err.Error())
			return
		}
		if c.Resource["atoll.job_id"] != job || c.Resource["atoll.role"] != role {
			missing = append(missing, fmt.Sprintf("%s: resource %v, want role %s, job %s", child, c.Resource, role, job))
		}
		if parent == "" {
			return
		}
		p, err := one(parent)
		if err != nil {
			missing = append(missing, err.Error())
			return
		}
		if c.ParentID() != p.SpanID() || c.TraceID() != p.TraceID() {
			missing = append(missing, fmt.Sprintf("%s: parent %s in trace %s, want %s (%s)", child, c.ParentID(), c.TraceID(), p.SpanID(), parent))
		}
	}
	want("submit traced.outer", "", "driver")
	for _, hop := range []struct{ name, caller string }{
		{"traced.outer", ""}, {"traced.inner", "execute traced.outer"}, {"traced.acc.Add", "execute traced.inner"},
	} {
		if hop.caller != "" {
			want("submit "+hop.name, hop.caller, "worker")
		}
		if hop.name != "traced.acc.Add" { // an actor call goes straight to its actor
			want("queue "+hop.name, "submit "+hop.name, nodeRole)
		}
		want("execute "+hop.name, "submit "+hop.name, "worker")
		want("store_outputs "+hop.name, "execute "+hop.name, "worker")
	}
	for _, name := range []string{"submit traced.fail", "execute traced.fail"} {
		if s, err := one(name); err != nil {
			missing = append(missing, err.Error())
		} else if s.Status.GetCode().String() != "STATUS_CODE_ERROR" {
			missing = append(missing, fmt.Sprintf("%s: status %v, want ERROR", name, s.Status.GetCode()))
		}
	}
	if s, err := one("execute traced.outer"); err == nil && s.Resource["service.name"] != "atoll-worker" {
		missing = append(missing, fmt.Sprintf("execute traced.outer: service.name %q, want atoll-worker", s.Resource["service.name"]))
	}
	if len(missing) == 0 {
		return ""
	}
	var names []string
	for _, s := range spans {
		names = append(names, s.Name)
	}
	return strings.Join(missing, "; ") + fmt.Sprintf(" (received %d spans: %v)", len(spans), names)
}

// TestOTLPWorkerSpansFlushedAtExit: a program with worker processes that
// ends right after its last Get delivers every span to the collector by
// the time Shutdown returns, the worker processes' execute and
// store_outputs included (the batch delay is an hour: only the flushes at
// exit can have sent them).
func TestOTLPWorkerSpansFlushedAtExit(t *testing.T) {
	recv := otlptest.Start(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", recv.Endpoint)
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "3600000")
	job := runTracedProgram(t, atoll.WithObjectStoreMemory(256<<20), atoll.WithNumCPUs(2), atoll.WithWorkerMode(atoll.ProcessWorkers))
	if msg := checkTracedSpans(recv.Spans(), job, "driver"); msg != "" {
		t.Fatal(msg)
	}
}

// TestOTLPClusterSpansReachTheDriversCollector: on a 3-node cluster whose
// nodes have no OTLP settings, the spans the nodes and their worker
// processes make for a job reach the collector its driver exports to.
func TestOTLPClusterSpansReachTheDriversCollector(t *testing.T) {
	c := testcluster.Start(t, testcluster.Options{Nodes: 3, Node: nodeconfig.Config{NumCPUs: 2, FailureTimeout: 10 * time.Second}})
	recv := otlptest.Start(t) // the nodes started without it
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", recv.Endpoint)
	job := runTracedProgram(t, atoll.WithAddress(c.Address()), atoll.WithSecret(c.Secret()), atoll.WithObjectStoreMemory(256<<20))
	// The nodes and pool workers live on: their spans leave with the
	// batch processor's next export (every 5 s by default).
	deadline := time.Now().Add(30 * time.Second)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for msg := checkTracedSpans(recv.Spans(), job, "node"); msg != ""; msg = checkTracedSpans(recv.Spans(), job, "node") {
		if time.Now().After(deadline) {
			t.Fatalf("after 30s: %s", msg)
		}
		<-tick.C
	}
}

// tracedDriver is the child process of TestOTLPDriverSignalFlushes: it
// runs the traced program with worker processes, prints "ready JOB" and
// waits for a signal. It never returns.
func tracedDriver() {
	ctx := context.Background()
	fail := func(what string, err error) {
		fmt.Println(what+":", err)
		os.Exit(2)
	}
	if err := atoll.Init(ctx, atoll.WithObjectStoreMemory(64<<20), atoll.WithNumCPUs(2)); err != nil {
		fail("init", err)
	}
	job := jobID()
	if _, err := tracedAccType.New(ctx, atoll.ActorName("traced-"+job)); err != nil {
		fail("new actor", err)
	}
	if _, err := atoll.Get(ctx, tracedOuter.Remote(ctx, atoll.Value(tracedArg{Actor: "traced-" + job, X: 1}))); err != nil {
		fail("traced.outer", err)
	}
	if _, err := atoll.Get(ctx, tracedFail.Remote(ctx, atoll.Value(tracedArg{}), atoll.MaxRetries(0))); err == nil {
		fail("traced.fail", errors.New("did not fail"))
	}
	fmt.Println("ready", job)
	select {}
}

// TestOTLPDriverSignalFlushes: a driver ended by SIGTERM (its signal
// handler shuts atoll down) has delivered every span of its program, its
// worker processes' included, by the time it is dead; the batch delay is
// an hour, so only the flushes at exit can have sent them.
func TestOTLPDriverSignalFlushes(t *testing.T) {
	if os.Getenv("ATOLL_TEST_TRACED_DRIVER") != "" {
		tracedDriver()
	}
	recv := otlptest.Start(t)
	cmd := exec.Command(os.Args[0], "-test.run=^TestOTLPDriverSignalFlushes$")
	cmd.Env = append(os.Environ(), "ATOLL_TEST_TRACED_DRIVER=1", "OTEL_EXPORTER_OTLP_ENDPOINT="+recv.Endpoint,
		"OTEL_BSP_SCHEDULE_DELAY=3600000", "TMPDIR="+t.TempDir())
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	sc := bufio.NewScanner(out)
	job, ok := "", sc.Scan()
	if _, err := fmt.Sscanf(sc.Text(), "ready %s", &job); !ok || err != nil {
		t.Fatalf("driver: %q", sc.Text())
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGTERM {
		t.Fatalf("driver after SIGTERM: %v, want killed by SIGTERM", cmd.ProcessState)
	}
	if msg := checkTracedSpans(recv.Spans(), job, "driver"); msg != "" {
		t.Fatal(msg)
	}
}
