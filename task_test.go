package atoll_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/atoll-runtime/atoll"
	"github.com/atoll-runtime/atoll/atolltest"
	"github.com/atoll-runtime/atoll/internal/testutil"
)

var (
	double = atoll.NewFunc1("test.double", func(_ context.Context, x int) (int, error) { return 2 * x, nil })
	add    = atoll.NewFunc2("test.add", func(_ context.Context, a, b int) (int, error) { return a + b, nil })
	sum    = atoll.NewFunc1("test.sum", func(_ context.Context, xs []float64) (float64, error) {
		var s float64
		for _, x := range xs {
			s += x
		}
		return s, nil
	})
	split = atoll.NewMultiFunc2("test.split", func(_ context.Context, xs []int64, n int) ([][]int64, error) {
		parts := make([][]int64, n)
		for _, x := range xs {
			parts[x%int64(n)] = append(parts[x%int64(n)], x)
		}
		return parts, nil
	})
	failing = atoll.NewFunc1("test.failing", func(_ context.Context, msg string) (int, error) {
		return 0, errors.New(msg)
	})
	panicking = atoll.NewFunc0("test.panicking", func(context.Context) (int, error) { panic("kaboom") })
	// flaky fails until its counter reaches the given number of failures.
	flakyCalls atomic.Int32
	flaky      = atoll.NewFunc1("test.flaky", func(_ context.Context, failures int32) (int32, error) {
		n := flakyCalls.Add(1)
		if n <= failures {
			return 0, fmt.Errorf("attempt %d fails", n)
		}
		return n, nil
	})
	// picky fails with errMayPass twice (wrapped), then succeeds, or
	// always with errWontPass; pickyTyped the same with a *chargeError
	// for errMayPass.
	pickyCalls atomic.Int32
	picky      = atoll.NewFunc1("test.picky", func(_ context.Context, mayPass bool) (int32, error) {
		return pickyFails(mayPass, errMayPass)
	})
	pickyTyped = atoll.NewFunc1("test.pickyTyped", func(_ context.Context, mayPass bool) (int32, error) {
		return pickyFails(mayPass, &chargeError{User: "u", Cents: 1})
	})
	blockUntil = atoll.NewFunc1("test.block", func(ctx context.Context, key chanKey) (string, error) {
		select {
		case <-key.ch():
			return "released", nil
		case <-ctx.Done():
			return "", ctx.Err()
		}
	})
	// blockStarted signals that it is running, then blocks until its key
	// is released or it is cancelled.
	blockStarted = atoll.NewFunc1("test.blockStarted", func(ctx context.Context, key chanKey) (string, error) {
		close(key.started())
		select {
		case <-key.ch():
			return "released", nil
		case <-ctx.Done():
			return "", ctx.Err()
		}
	})
	// waitStarted signals that it is running (in-process workers share the
	// test's process, so a channel can cross) and waits to be cancelled.
	waitStarted = atoll.NewFunc1("test.waitStarted", func(ctx context.Context, key chanKey) (string, error) {
		close(key.started())
		<-ctx.Done()
		return "", ctx.Err()
	})
)

var attempts sync.Map

// crashOnce blocks (to be killed) on its first attempt and succeeds on the
// next.
var crashOnce = atoll.NewFunc1("test.crashOnce", func(ctx context.Context, key chanKey) (string, error) {
	n, _ := attempts.LoadOrStore(key, new(atomic.Int32))
	if n.(*atomic.Int32).Add(1) == 1 {
		close(key.started())
		<-ctx.Done()
		return "", ctx.Err()
	}
	return fmt.Sprintf("attempt %d", n.(*atomic.Int32).Load()), nil
})

// nest submits a chain of tasks depth deep and returns the depth seen at
// the bottom. A function that submits itself is registered in init to
// break Go's initialisation cycle.
var nest *atoll.Func1[int, int]

func init() {
	nest = atoll.NewFunc1("test.nest", func(ctx context.Context, depth int) (int, error) {
		if depth == 0 {
			return 0, nil
		}
		below, err := atoll.Get(ctx, nest.Remote(ctx, atoll.Value(depth-1)))
		return below + 1, err
	})
}

// chanKey names a channel registered in this test process, so tasks on
// in-process workers can synchronise with the test without sleeps.
type chanKey string

var (
	chans   sync.Map
	chanSeq atomic.Int64
)

func newChanKey(t *testing.T) chanKey {
	k := chanKey(fmt.Sprintf("%s/%d", t.Name(), chanSeq.Add(1)))
	chans.Store(k, make(chan struct{}))
	chans.Store(k+"/started", make(chan struct{}))
	return k
}

func (k chanKey) ch() chan struct{} { c, _ := chans.Load(k); return c.(chan struct{}) }
func (k chanKey) started() chan struct{} {
	c, _ := chans.Load(k + "/started")
	return c.(chan struct{})
}

func TestTasksWithValuesAndRefs(t *testing.T) {
	ctx := start(t)
	a := double.Remote(ctx, atoll.Value(21))
	b := add.Remote(ctx, a, atoll.Value(8))
	c := add.Remote(ctx, a, b)
	if v, err := atoll.Get(ctx, c); err != nil || v != 42+50 {
		t.Fatalf("chained tasks: %v %v", v, err)
	}
	xs := make([]float64, 1<<18) // 2 MiB: passed through the object store
	for i := range xs {
		xs[i] = 1
	}
	ref, err := atoll.Put(ctx, xs)
	if err != nil {
		t.Fatal(err)
	}
	if v, err := atoll.Get(ctx, sum.Remote(ctx, ref)); err != nil || v != float64(len(xs)) {
		t.Fatalf("sum of a stored array: %v %v", v, err)
	}
	if v, err := atoll.Get(ctx, sum.Remote(ctx, atoll.Value(xs))); err != nil || v != float64(len(xs)) {
		t.Fatalf("sum of a large value argument: %v %v", v, err)
	}
}

func TestMultipleReturnsAreSeparateRefs(t *testing.T) {
	ctx := start(t)
	xs := make([]int64, 1000)
	for i := range xs {
		xs[i] = int64(i)
	}
	parts := split.Remote(ctx, 4, atoll.Value(xs), atoll.Value(4))
	if len(parts) != 4 {
		t.Fatalf("%d refs, want 4", len(parts))
	}
	total := 0
	for i, p := range parts {
		got, err := atoll.Get(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range got {
			if x%4 != int64(i) {
				t.Fatalf("partition %d holds %d", i, x)
			}
		}
		total += len(got)
	}
	if total != 1000 {
		t.Fatalf("partitions hold %d values, want 1000", total)
	}
	wrong := split.Remote(ctx, 3, atoll.Value(xs), atoll.Value(4))
	if _, err := atoll.Get(ctx, wrong[0]); !errors.Is(err, atoll.ErrInvalidArgument) && !errors.Is(err, atoll.ErrTask) {
		t.Fatalf("returning 4 values for 3 refs: %v", err)
	}
}

func TestTaskErrorsAreTyped(t *testing.T) {
	ctx := start(t)
	_, err := atoll.Get(ctx, failing.Remote(ctx, atoll.Value("bad input")))
	var te *atoll.TaskError
	if !errors.As(err, &te) || te.TaskName != "test.failing" || !strings.Contains(te.Message, "bad input") {
		t.Fatalf("want TaskError from test.failing, got %#v", err)
	}
	_, err = atoll.Get(ctx, panicking.Remote(ctx, atoll.MaxRetries(0)))
	if !errors.As(err, &te) || !strings.Contains(te.Message, "kaboom") || !strings.Contains(te.RemoteStack, "goroutine") {
		t.Fatalf("want TaskError with the panic and its stack, got %#v", err)
	}
	// A failed argument fails the task that consumes it.
	_, err = atoll.Get(ctx, double.Remote(ctx, failing.Remote(ctx, atoll.Value("upstream"))))
	if !errors.As(err, &te) || !strings.Contains(te.Message, "upstream") {
		t.Fatalf("want the upstream TaskError, got %v", err)
	}
}

func TestRetriesOnApplicationErrorsAreOptIn(t *testing.T) {
	ctx := start(t)
	flakyCalls.Store(0)
	if _, err := atoll.Get(ctx, flaky.Remote(ctx, atoll.Value[int32](2))); !errors.Is(err, atoll.ErrTask) {
		t.Fatalf("without RetryExceptions the first failure is final: %v", err)
	}
	flakyCalls.Store(0)
	v, err := atoll.Get(ctx, flaky.Remote(ctx, atoll.Value[int32](2), atoll.RetryExceptions(), atoll.MaxRetries(3)))
	if err != nil || v != 3 {
		t.Fatalf("with retries: %v %v (want success on attempt 3)", v, err)
	}
	flakyCalls.Store(0)
	if _, err := atoll.Get(ctx, flaky.Remote(ctx, atoll.Value[int32](5), atoll.RetryExceptions(), atoll.MaxRetries(2))); !errors.Is(err, atoll.ErrTask) {
		t.Fatalf("retries exhausted: %v", err)
	}
	if n := flakyCalls.Load(); n != 3 {
		t.Fatalf("%d attempts, want 3 (1 + 2 retries)", n)
	}
}

// Registered sentinels that picky fails with, and one never registered.
var (
	errMayPass   = errors.New("test: may pass if tried again")
	errWontPass  = errors.New("test: will not pass")
	errNotShared = errors.New("test: not registered")
)

func init() { atoll.RegisterError(errMayPass, errWontPass) }

func pickyFails(mayPass bool, passing error) (int32, error) {
	n := pickyCalls.Add(1)
	switch {
	case !mayPass:
		return 0, fmt.Errorf("attempt %d: %w", n, errWontPass)
	case n < 3:
		return 0, fmt.Errorf("attempt %d: %w", n, passing)
	}
	return n, nil
}

// TestRetryExceptionsOfSomeErrors: RetryExceptions given sentinels
// retries an error that matches one (wrapped, in the worker), and fails
// at once on one that matches none; given a value of a registered error
// type, an error holding one of that type; a sentinel or type never
// registered cannot be matched across processes, so the call fails with
// ErrInvalidArgument.
func TestRetryExceptionsOfSomeErrors(t *testing.T) {
	ctx := start(t)
	only := []atoll.TaskOption{atoll.RetryExceptions(errMayPass), atoll.MaxRetries(3)}
	pickyCalls.Store(0)
	if v, err := atoll.Get(ctx, picky.Remote(ctx, atoll.Value(true), only...)); err != nil || v != 3 {
		t.Fatalf("an error named: %v %v (want success on attempt 3)", v, err)
	}
	pickyCalls.Store(0)
	_, err := atoll.Get(ctx, picky.Remote(ctx, atoll.Value(false), only...))
	if !errors.Is(err, errWontPass) {
		t.Fatalf("an error not named: %v", err)
	}
	if n := pickyCalls.Load(); n != 1 {
		t.Fatalf("an error not named ran %d attempts, want 1", n)
	}
	pickyCalls.Store(0)
	both := []atoll.TaskOption{atoll.RetryExceptions(errMayPass, errWontPass), atoll.MaxRetries(2)}
	if _, err := atoll.Get(ctx, picky.Remote(ctx, atoll.Value(false), both...)); !errors.Is(err, errWontPass) || pickyCalls.Load() != 3 {
		t.Fatalf("the second error named: %v after %d attempts, want 3", err, pickyCalls.Load())
	}
	pickyCalls.Store(0)
	byType := []atoll.TaskOption{atoll.RetryExceptions(&chargeError{}), atoll.MaxRetries(3)}
	if v, err := atoll.Get(ctx, pickyTyped.Remote(ctx, atoll.Value(true), byType...)); err != nil || v != 3 {
		t.Fatalf("an error of the type named: %v %v (want success on attempt 3)", v, err)
	}
	pickyCalls.Store(0)
	if _, err := atoll.Get(ctx, pickyTyped.Remote(ctx, atoll.Value(false), byType...)); !errors.Is(err, errWontPass) || pickyCalls.Load() != 1 {
		t.Fatalf("an error of no type named: %v after %d attempts, want 1", err, pickyCalls.Load())
	}
	for _, bad := range []error{errNotShared, &hiddenError{}, nil} {
		_, err = atoll.Get(ctx, picky.Remote(ctx, atoll.Value(true), atoll.RetryExceptions(bad)))
		if !errors.Is(err, atoll.ErrInvalidArgument) || !strings.Contains(err.Error(), "RegisterError") {
			t.Fatalf("RetryExceptions(%v): %v", bad, err)
		}
	}
}

func TestWorkerCrashIsRetriedThenWorkerCrashed(t *testing.T) {
	ctx := start(t)
	key := newChanKey(t)
	ref := waitStarted.Remote(ctx, atoll.Value(key), atoll.MaxRetries(0))
	<-key.started()
	if err := atolltest.KillTaskWorker(ctx, ref); err != nil {
		t.Fatal(err)
	}
	_, err := atoll.Get(ctx, ref)
	var wc *atoll.WorkerCrashedError
	if !errors.As(err, &wc) || wc.TaskName != "test.waitStarted" {
		t.Fatalf("want WorkerCrashed, got %v", err)
	}

	// With retries the task runs again on a fresh worker and succeeds.
	key2 := newChanKey(t)
	retried := crashOnce.Remote(ctx, atoll.Value(key2), atoll.MaxRetries(1))
	<-key2.started()
	if err := atolltest.KillTaskWorker(ctx, retried); err != nil {
		t.Fatal(err)
	}
	if v, err := atoll.Get(ctx, retried); err != nil || v != "attempt 2" {
		t.Fatalf("retried task: %v %v", v, err)
	}
}

func TestNestedTasksThreeDeepOnOneCPU(t *testing.T) {
	ctx := start(t, atoll.WithNumCPUs(1))
	if v, err := atoll.Get(ctx, nest.Remote(ctx, atoll.Value(3))); err != nil || v != 3 {
		t.Fatalf("nested depth: %v %v", v, err)
	}
}

func TestTenThousandTaskDAG(t *testing.T) {
	ctx := start(t)
	const width, depth = 100, 100 // 10,000 tasks
	level := make([]atoll.ObjectRef[int], width)
	want := make([]int, width)
	for i := range level {
		level[i] = double.Remote(ctx, atoll.Value(i))
		want[i] = 2 * i
	}
	for range depth - 1 {
		next := make([]atoll.ObjectRef[int], width)
		nextWant := make([]int, width)
		for i := range next {
			next[i] = add.Remote(ctx, level[i], level[(i+1)%width])
			nextWant[i] = want[i] + want[(i+1)%width] // wraps like the tasks do
		}
		level, want = next, nextWant
	}
	got, err := atoll.GetAll(ctx, level)
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range got {
		if v != want[i] {
			t.Fatalf("node %d = %d, want %d", i, v, want[i])
		}
	}
}

func TestCancellation(t *testing.T) {
	ctx := start(t, atoll.WithNumCPUs(1))
	// Running: its context is cancelled.
	key := newChanKey(t)
	running := waitStarted.Remote(ctx, atoll.Value(key))
	<-key.started()
	// Queued behind it on the single CPU.
	queued := double.Remote(ctx, atoll.Value(1))
	if err := atoll.Cancel(ctx, queued); err != nil {
		t.Fatal(err)
	}
	if _, err := atoll.Get(ctx, queued); !errors.Is(err, atoll.ErrCancelled) {
		t.Fatalf("queued task: want Cancelled, got %v", err)
	}
	if err := atoll.Cancel(ctx, running); err != nil {
		t.Fatal(err)
	}
	var ce *atoll.CancelledError
	if _, err := atoll.Get(ctx, running); !errors.As(err, &ce) || !errors.Is(err, context.Canceled) {
		t.Fatalf("running task: want Cancelled, got %v", err)
	}
	// Cancelling the submitting context cancels the task.
	key2 := newChanKey(t)
	sub, cancel := context.WithCancel(ctx)
	viaCtx := waitStarted.Remote(sub, atoll.Value(key2))
	<-key2.started()
	cancel()
	if _, err := atoll.Get(ctx, viaCtx); !errors.Is(err, atoll.ErrCancelled) {
		t.Fatalf("context-cancelled task: %v", err)
	}
	// A task submitted under a context done already is cancelled too
	// (its context's watch fires before or after its owner knows it).
	for range 20 {
		done, stop := context.WithCancel(ctx)
		stop()
		if _, err := atoll.Get(ctx, waitStarted.Remote(done, atoll.Value(newChanKey(t)))); !errors.Is(err, atoll.ErrCancelled) {
			t.Fatalf("a task submitted under a done context: %v", err)
		}
	}
	// The node still works.
	if v, err := atoll.Get(ctx, double.Remote(ctx, atoll.Value(4))); err != nil || v != 8 {
		t.Fatalf("after cancellations: %v %v", v, err)
	}
}

// Cancelling a context cancels its pending tasks and no other context's,
// the first time (the owner indexes contexts' tasks then) and after (the
// index is kept up), whether tasks carry trace spans or not.
func TestContextCancelsOnlyItsTasks(t *testing.T) {
	for _, traced := range []bool{false, true} {
		t.Run(fmt.Sprint("traced=", traced), func(t *testing.T) {
			opts := []atoll.Option{atoll.WithNumCPUs(1)}
			if traced {
				opts = append(opts, atoll.WithTracerProvider(sdktrace.NewTracerProvider()))
			}
			ctx := start(t, opts...)
			key := newChanKey(t)
			other, stopOther := context.WithCancel(ctx)
			defer stopOther()
			kept := blockStarted.Remote(other, atoll.Value(key)) // holds the one CPU
			<-key.started()
			alsoKept := double.Remote(other, atoll.Value(21))
			for round := range 3 {
				sub, cancel := context.WithCancel(ctx)
				refs := make([]atoll.ObjectRef[int], 5)
				for i := range refs {
					refs[i] = double.Remote(sub, atoll.Value(i))
				}
				cancel()
				for i, r := range refs {
					if _, err := atoll.Get(ctx, r); !errors.Is(err, atoll.ErrCancelled) {
						t.Fatalf("round %d, task %d of the cancelled context: %v", round, i, err)
					}
				}
			}
			close(key.ch())
			if v, err := atoll.Get(ctx, kept); err != nil || v != "released" {
				t.Fatalf("the other context's running task: %q %v", v, err)
			}
			if v, err := atoll.Get(ctx, alsoKept); err != nil || v != 42 {
				t.Fatalf("the other context's queued task: %v %v", v, err)
			}
		})
	}
}

func TestResourcesAreRespected(t *testing.T) {
	ctx := start(t, atoll.WithResources(map[string]float64{"GPU": 1}))
	ok := double.Remote(ctx, atoll.Value(2), atoll.WithTaskResources(atoll.Resources{CPU: 1, Custom: map[string]float64{"GPU": 1}}))
	if v, err := atoll.Get(ctx, ok); err != nil || v != 4 {
		t.Fatalf("GPU task: %v %v", v, err)
	}
	infeasible := double.Remote(ctx, atoll.Value(2), atoll.WithTaskResources(atoll.Resources{CPU: 1, Custom: map[string]float64{"GPU": 2}}))
	if _, err := atoll.Get(ctx, infeasible); !errors.Is(err, atoll.ErrInvalidArgument) {
		t.Fatalf("infeasible task: want ErrInvalidArgument, got %v", err)
	}
}

var logTask = atoll.NewFunc1("test.log", func(ctx context.Context, msg string) (string, error) {
	slog.InfoContext(ctx, msg)
	return msg, nil
})

func TestLogLinesCarryTaskAndTraceIDs(t *testing.T) {
	var buf testutil.LogBuffer
	prev := slog.Default()
	slog.SetDefault(slog.New(atoll.LogHandler(slog.NewTextHandler(&buf, nil))))
	t.Cleanup(func() { slog.SetDefault(prev) })
	rec := tracetest.NewSpanRecorder()
	ctx := start(t, atoll.WithTracerProvider(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))))
	ref := logTask.Remote(ctx, atoll.Value("hello from a task"))
	if _, err := atoll.Get(ctx, ref); err != nil {
		t.Fatal(err)
	}
	line := buf.String()
	for _, want := range []string{"hello from a task", "trace_id=", "span_id=", "task_id=" + ref.ID()[:32]} {
		if !strings.Contains(line, want) {
			t.Errorf("log %q lacks %q", line, want)
		}
	}
}

func TestPoolGrowsForBlockedTasksThenShrinks(t *testing.T) {
	ctx := start(t, atoll.WithNumCPUs(1), atoll.WithIdleWorkerTimeout(50*time.Millisecond))
	if v, err := atoll.Get(ctx, nest.Remote(ctx, atoll.Value(3))); err != nil || v != 3 {
		t.Fatalf("nested: %v %v", v, err)
	}
	st, err := atolltest.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Workers < 2 && st.WorkersReaped == 0 {
		t.Fatalf("the pool did not grow for blocked tasks: %+v", st)
	}
	testutil.Eventually(t, "surplus idle workers to be stopped", func() bool {
		st, err = atolltest.Status(ctx)
		return err == nil && st.Workers == 1 && st.WorkersReaped >= 1
	})
	if st.Total["CPU"] != 1 || st.Available["CPU"] != 1 || st.Queued != 0 || st.Running != 0 {
		t.Fatalf("node status after the run: %+v", st)
	}
}

func TestRootTasksAreQueuedAtTheSaturationLimit(t *testing.T) {
	// 4 CPUs but saturation 0.5: at most 2 root tasks run at once, and a
	// task consuming an existing object is not held back by them. No
	// pipelining: the queue is what the test looks at.
	ctx := start(t, atoll.WithNumCPUs(4), atoll.WithSaturation(0.5), atoll.WithPipelineDepth(1))
	key := newChanKey(t)
	roots := make([]atoll.ObjectRef[string], 6)
	for i := range roots {
		roots[i] = blockUntil.Remote(ctx, atoll.Value(key))
	}
	testutil.Eventually(t, "two root tasks running and four queued", func() bool {
		st, err := atolltest.Status(ctx)
		return err == nil && st.Running == 2 && st.Queued == 4
	})
	input, err := atoll.Put(ctx, 20)
	if err != nil {
		t.Fatal(err)
	}
	if v, err := atoll.Get(ctx, double.Remote(ctx, input)); err != nil || v != 40 {
		t.Fatalf("a consumer behind queued roots: %v %v", v, err)
	}
	close(key.ch())
	if _, err := atoll.GetAll(ctx, roots); err != nil {
		t.Fatal(err)
	}
}
