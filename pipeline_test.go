package atoll_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/atoll-runtime/atoll"
	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/atolltest"
	"github.com/atoll-runtime/atoll/internal/actors"
	"github.com/atoll-runtime/atoll/internal/testutil"
)

// Pipelining, direct actor calls and concurrent actors, with worker
// processes. Tasks and methods meet the test through files in a
// directory (they run in other processes): each run leaves a file named
// after it, and a gated one waits until the test creates the gate file.

type gatedArgs struct {
	Dir  string
	I    int
	Gate bool // wait for Dir/go before returning
}

// mark records a run: a file named name holding the process's pid.
func mark(dir, name string) error {
	return os.WriteFile(filepath.Join(dir, name), []byte(strconv.Itoa(os.Getpid())), 0o644)
}

// waitGate waits until the gate file exists, or ctx ends.
func waitGate(ctx context.Context, dir, gate string) error {
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for {
		if _, err := os.Stat(filepath.Join(dir, gate)); err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

func openGate(t *testing.T, dir, gate string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, gate), nil, 0o644); err != nil {
		t.Fatal(err)
	}
}

// runs lists the run files in dir with the given prefix, sorted.
func runs(t *testing.T, dir, prefix string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), prefix) {
			out = append(out, e.Name())
		}
	}
	slices.Sort(out)
	return out
}

var gated = atoll.NewFunc1("pipe.gated", func(ctx context.Context, a gatedArgs) (int, error) {
	if err := mark(a.Dir, fmt.Sprintf("run-%d-%d", a.I, atoll.CurrentAttempt(ctx))); err != nil {
		return 0, err
	}
	if a.Gate {
		if err := waitGate(ctx, a.Dir, "go"); err != nil {
			return 0, err
		}
	}
	return a.I, nil
})

// waitStatus waits until the node runs (or holds pipelined) running
// tasks and queues queued.
func waitStatus(t *testing.T, ctx context.Context, running, queued int) {
	t.Helper()
	testutil.Eventually(t, fmt.Sprintf("%d tasks running or pipelined and %d queued", running, queued), func() bool {
		st, err := atolltest.Status(ctx)
		return err == nil && st.Running == running && st.Queued == queued
	})
}

// A worker killed with tasks pipelined behind the running one: each
// attempt it held is reported crashed exactly once and retried, the
// pipelined ones never having run; the tasks still queued run once.
func TestPipelinedTasksWorkerKilledMidPipeline(t *testing.T) {
	ctx := startProcesses(t, atoll.WithNumCPUs(1), atoll.WithPipelineDepth(4))
	dir := t.TempDir()
	refs := []atoll.ObjectRef[int]{gated.Remote(ctx, atoll.Value(gatedArgs{dir, 0, true}), atoll.MaxRetries(1))}
	testutil.Eventually(t, "task 0 to start", func() bool { return len(runs(t, dir, "run-0-0")) == 1 })
	for i := 1; i < 6; i++ {
		refs = append(refs, gated.Remote(ctx, atoll.Value(gatedArgs{dir, i, false}), atoll.MaxRetries(1)))
	}
	// One CPU: task 0 runs; 1-3 wait in its worker (the driver's
	// submitter fills the worker leased to it up to the depth), 4 and 5
	// in the submitter.
	waitStatus(t, ctx, 4, 2)
	pid, err := os.ReadFile(filepath.Join(dir, "run-0-0"))
	if err != nil {
		t.Fatal(err)
	}
	victim, _ := strconv.Atoi(string(pid))
	if err := syscall.Kill(victim, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	openGate(t, dir, "go")
	for i, ref := range refs {
		if v, err := atoll.Get(ctx, ref); err != nil || v != i {
			t.Fatalf("task %d: %v, %v", i, v, err)
		}
	}
	// Task 0 ran twice (killed, retried); 1-3 once, as their retry
	// (attempt 1: the attempt pipelined to the killed worker never ran);
	// 4 and 5 once, first time.
	want := []string{"run-0-0", "run-0-1", "run-1-1", "run-2-1", "run-3-1", "run-4-0", "run-5-0"}
	if got := runs(t, dir, "run-"); !slices.Equal(got, want) {
		t.Fatalf("runs %v, want %v", got, want)
	}

	// Without retries, the pipelined attempts fail as crashed, once.
	dir2 := t.TempDir()
	first := gated.Remote(ctx, atoll.Value(gatedArgs{dir2, 0, true}), atoll.MaxRetries(0))
	testutil.Eventually(t, "task 0 to start", func() bool { return len(runs(t, dir2, "run-0-0")) == 1 })
	second := gated.Remote(ctx, atoll.Value(gatedArgs{dir2, 1, false}), atoll.MaxRetries(0))
	waitStatus(t, ctx, 2, 0)
	pid, err = os.ReadFile(filepath.Join(dir2, "run-0-0"))
	if err != nil {
		t.Fatal(err)
	}
	victim, _ = strconv.Atoi(string(pid))
	if err := syscall.Kill(victim, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	var wc *atoll.WorkerCrashedError
	for i, ref := range []atoll.ObjectRef[int]{first, second} {
		if _, err := atoll.Get(ctx, ref); !errors.As(err, &wc) {
			t.Fatalf("task %d: want WorkerCrashedError, got %v", i, err)
		}
	}
	if got := runs(t, dir2, "run-"); !slices.Equal(got, []string{"run-0-0"}) {
		t.Fatalf("runs %v, want only task 0's", got)
	}
}

// Cancelling a task that waits in its worker behind a running one fails
// it at once; it never runs.
func TestCancelPipelinedTask(t *testing.T) {
	ctx := startProcesses(t, atoll.WithNumCPUs(1), atoll.WithPipelineDepth(4))
	dir := t.TempDir()
	first := gated.Remote(ctx, atoll.Value(gatedArgs{dir, 0, true}))
	testutil.Eventually(t, "task 0 to start", func() bool { return len(runs(t, dir, "run-0-0")) == 1 })
	second := gated.Remote(ctx, atoll.Value(gatedArgs{dir, 1, true}))
	waitStatus(t, ctx, 2, 0)
	if err := atoll.Cancel(ctx, second); err != nil {
		t.Fatal(err)
	}
	var ce *atoll.CancelledError
	if _, err := atoll.Get(ctx, second); !errors.As(err, &ce) {
		t.Fatalf("cancelled pipelined task: want CancelledError, got %v", err)
	}
	openGate(t, dir, "go")
	if v, err := atoll.Get(ctx, first); err != nil || v != 0 {
		t.Fatalf("task 0: %v, %v", v, err)
	}
	if got := runs(t, dir, "run-"); !slices.Equal(got, []string{"run-0-0"}) {
		t.Fatalf("runs %v: the cancelled task ran", got)
	}
}

// Short tasks pipelined behind a long one on one worker are taken back
// and run on the other worker when it runs out of work: none waits for
// the long task.
func TestLongTaskDoesNotHoldPipelinedTasks(t *testing.T) {
	ctx := startProcesses(t, atoll.WithNumCPUs(2), atoll.WithPipelineDepth(4))
	dir := t.TempDir()
	long := gated.Remote(ctx, atoll.Value(gatedArgs{dir, 0, true}))
	testutil.Eventually(t, "the long task to start", func() bool { return len(runs(t, dir, "run-0-0")) == 1 })
	var short []atoll.ObjectRef[int]
	for i := 1; i <= 12; i++ {
		short = append(short, gated.Remote(ctx, atoll.Value(gatedArgs{dir, i, false})))
	}
	for i, ref := range short {
		if v, err := atoll.Get(ctx, ref); err != nil || v != i+1 {
			t.Fatalf("short task %d: %v, %v (while the long task runs)", i+1, v, err)
		}
	}
	openGate(t, dir, "go")
	if v, err := atoll.Get(ctx, long); err != nil || v != 0 {
		t.Fatalf("long task: %v, %v", v, err)
	}
}

// logArgs names an actor's log file and a call's index.
type logArgs struct {
	Dir   string
	I     int
	Crash int // the call that crashes the actor
}

type logActor struct{}

var (
	logActorType = atoll.NewActorType("pipe.log", func(context.Context) (*logActor, error) { return &logActor{}, nil })
	logAppend    = atoll.NewMethod1(logActorType, "Append", func(_ *logActor, _ context.Context, a logArgs) (int, error) {
		if a.I == a.Crash {
			panic("crash on call " + strconv.Itoa(a.I))
		}
		f, err := os.OpenFile(filepath.Join(a.Dir, "log"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			return 0, err
		}
		defer f.Close()
		_, err = fmt.Fprintln(f, a.I)
		return a.I, err
	})
)

// Calls pipelined to an actor's process behind one that crashes it run
// on the restarted actor, in order, each once.
func TestActorCallsKeepOrderAcrossRestart(t *testing.T) {
	ctx := startProcesses(t, atoll.WithPipelineDepth(4))
	dir := t.TempDir()
	a, err := logActorType.New(ctx, atoll.MaxRestarts(1))
	if err != nil {
		t.Fatal(err)
	}
	const n, crash = 40, 10
	refs := make([]atoll.ObjectRef[int], n)
	for i := range refs {
		refs[i] = logAppend.Remote(ctx, a, atoll.Value(logArgs{dir, i, crash}))
	}
	var crashed *atoll.TaskError
	var want []string
	for i, ref := range refs {
		v, err := atoll.Get(ctx, ref)
		if i == crash {
			if !errors.As(err, &crashed) {
				t.Fatalf("call %d: want the method's panic as a TaskError, got %v, %v", i, v, err)
			}
			continue
		}
		if err != nil || v != i {
			t.Fatalf("call %d: %v, %v", i, v, err)
		}
		want = append(want, strconv.Itoa(i))
	}
	log, err := os.ReadFile(filepath.Join(dir, "log"))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Fields(string(log)); !slices.Equal(got, want) {
		t.Fatalf("calls applied in order %v, want %v", got, want)
	}
}

// concurrent records how many of its calls run at once, per group.
type concurrent struct {
	mu        sync.Mutex
	now, peak map[string]int
}

type enterArgs struct {
	Dir   string
	Group string // the name the call counts under
}

func (c *concurrent) enter(ctx context.Context, a enterArgs) (int, error) {
	c.mu.Lock()
	c.now[a.Group]++
	c.peak[a.Group] = max(c.peak[a.Group], c.now[a.Group])
	c.mu.Unlock()
	err := waitGate(ctx, a.Dir, "go-"+a.Group)
	c.mu.Lock()
	c.now[a.Group]--
	c.mu.Unlock()
	return 0, err
}

var (
	concurrentType = atoll.NewActorType("pipe.concurrent", func(context.Context) (*concurrent, error) {
		return &concurrent{now: map[string]int{}, peak: map[string]int{}}, nil
	})
	enter   = atoll.NewMethod1(concurrentType, "Enter", (*concurrent).enter)
	enterIO = atoll.NewMethod1(concurrentType, "EnterIO", (*concurrent).enter)
	peaks   = atoll.NewMethod0(concurrentType, "Peaks", func(c *concurrent, _ context.Context) (map[string]int, error) {
		c.mu.Lock()
		defer c.mu.Unlock()
		out := map[string]int{}
		for g, p := range c.peak {
			out[g] = p
			out[g+".now"] = c.now[g]
		}
		return out, nil
	})
)

// MaxConcurrency(3) runs three calls at once and never a fourth; a
// concurrency group has its own limit, and a group ("admin") keeps
// serving while the others are full.
func TestConcurrentActorLimits(t *testing.T) {
	ctx := startProcesses(t)
	dir := t.TempDir()
	a, err := concurrentType.New(ctx, atoll.MaxConcurrency(3),
		atoll.ConcurrencyGroup("io", 2, "EnterIO"), atoll.ConcurrencyGroup("admin", 1, "Peaks"))
	if err != nil {
		t.Fatal(err)
	}
	var refs []atoll.ObjectRef[int]
	for range 6 {
		refs = append(refs, enter.Remote(ctx, a, atoll.Value(enterArgs{dir, "default"})))
	}
	for range 5 {
		refs = append(refs, enterIO.Remote(ctx, a, atoll.Value(enterArgs{dir, "io"})))
	}
	var p map[string]int
	testutil.Eventually(t, "3 default and 2 io calls running at once", func() bool {
		p, err = atoll.Get(ctx, peaks.Remote(ctx, a))
		if err != nil {
			t.Fatal(err)
		}
		return p["default.now"] == 3 && p["io.now"] == 2
	})
	openGate(t, dir, "go-default")
	openGate(t, dir, "go-io")
	for i, ref := range refs {
		if _, err := atoll.Get(ctx, ref); err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
	}
	p, err = atoll.Get(ctx, peaks.Remote(ctx, a))
	if err != nil {
		t.Fatal(err)
	}
	if p["default"] != 3 || p["io"] != 2 {
		t.Fatalf("peak concurrency %v, want default 3 and io 2", p)
	}

	// A call naming a group the actor lacks fails, typed.
	if _, err := atoll.Get(ctx, enter.Remote(ctx, a, atoll.Value(enterArgs{dir, "default"}), atoll.InGroup("nope"))); !errors.Is(err, atoll.ErrInvalidArgument) {
		t.Fatalf("unknown group: want ErrInvalidArgument, got %v", err)
	}
	// Bad options fail New.
	for _, opt := range []atoll.ActorOption{atoll.MaxConcurrency(-1), atoll.ConcurrencyGroup("g", 0), atoll.MaxPendingCalls(-1)} {
		if _, err := concurrentType.New(ctx, opt); !errors.Is(err, atoll.ErrInvalidArgument) {
			t.Fatalf("bad option: want ErrInvalidArgument, got %v", err)
		}
	}
	if _, err := concurrentType.New(ctx, atoll.ConcurrencyGroup("a", 1, "Enter"), atoll.ConcurrencyGroup("b", 1, "Enter")); !errors.Is(err, atoll.ErrInvalidArgument) {
		t.Fatalf("a method in two groups: want ErrInvalidArgument, got %v", err)
	}
}

// MaxPendingCalls holds a caller back while its calls are pending: the
// call past the bound waits, and gives up when its context ends.
func TestMaxPendingCallsBackpressure(t *testing.T) {
	ctx := startProcesses(t)
	dir := t.TempDir()
	a, err := concurrentType.New(ctx, atoll.MaxConcurrency(4), atoll.MaxPendingCalls(2))
	if err != nil {
		t.Fatal(err)
	}
	first := enter.Remote(ctx, a, atoll.Value(enterArgs{dir, "default"}))
	second := enter.Remote(ctx, a, atoll.Value(enterArgs{dir, "default"}))
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	third := enter.Remote(short, a, atoll.Value(enterArgs{dir, "default"}))
	if _, err := atoll.Get(ctx, third); !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "MaxPendingCalls") {
		t.Fatalf("a call past MaxPendingCalls: want it to wait and time out, got %v", err)
	}
	if waited := time.Since(start); waited < 250*time.Millisecond {
		t.Fatalf("the call past MaxPendingCalls returned after %v: it did not wait", waited)
	}
	// Room frees up when the pending calls end.
	done := make(chan atoll.ObjectRef[int], 1)
	go func() { done <- enter.Remote(ctx, a, atoll.Value(enterArgs{dir, "default"})) }()
	openGate(t, dir, "go-default")
	for _, ref := range []atoll.ObjectRef[int]{first, second, <-done} {
		if _, err := atoll.Get(ctx, ref); err != nil {
			t.Fatal(err)
		}
	}
}

// Calls held up on their way to the actor's host (a delayed message goes
// back to the tail of the host's mailbox, behind later calls) still run
// in the caller's order: the host orders them by sequence number.
func TestDelayedActorCallsRunInCallerOrder(t *testing.T) {
	fi := actors.NewFaultInjector()
	ctx := startProcesses(t, atoll.WithFaultInjector(fi))
	dir := t.TempDir()
	a, err := logActorType.New(ctx)
	if err != nil {
		t.Fatal(err)
	}
	fi.Delay(actors.WithProbability(actors.MessageType[*atollpb.PushTask](), 0.3, rand.New(rand.NewPCG(1, 2))), 2*time.Millisecond, 20)
	const n = 60
	refs := make([]atoll.ObjectRef[int], n)
	want := make([]string, n)
	for i := range refs {
		refs[i] = logAppend.Remote(ctx, a, atoll.Value(logArgs{dir, i, -1}))
		want[i] = strconv.Itoa(i)
	}
	for i, ref := range refs {
		if v, err := atoll.Get(ctx, ref); err != nil || v != i {
			t.Fatalf("call %d: %v, %v", i, v, err)
		}
	}
	if d := fi.Stats().Delayed; d == 0 {
		t.Fatal("no call was delayed: the test checked nothing")
	}
	log, err := os.ReadFile(filepath.Join(dir, "log"))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Fields(string(log)); !slices.Equal(got, want) {
		t.Fatalf("calls applied in order %v, want %v", got, want)
	}
}

// sequencer checks, per caller, that calls arrive in the order that
// caller made them.
type sequencer struct{ last map[int]int }

var (
	sequencerType = atoll.NewActorType1("test.Sequencer", func(context.Context, int) (*sequencer, error) {
		return &sequencer{last: map[int]int{}}, nil
	})
	// sequencerNext records call seq of caller and returns the sequence
	// number it expected (seq itself when in order).
	sequencerNext = atoll.NewMethod2(sequencerType, "Next", func(s *sequencer, _ context.Context, caller, seq int) (int, error) {
		want := s.last[caller] + 1
		s.last[caller] = seq
		return want, nil
	})
)

// 10,000 calls from 8 goroutines of the driver to one actor in a worker
// process of its node (the direct path: each call handed to the host's
// state on the calling goroutine), all in flight at once: every caller's
// calls run in that caller's order, and none is lost or run twice.
func TestDirectCallsFromEightCallersKeepEachCallersOrder(t *testing.T) {
	ctx := startProcesses(t)
	a, err := sequencerType.New(ctx, atoll.Value(0))
	if err != nil {
		t.Fatal(err)
	}
	const callers, each = 8, 1250
	refs := make([][]atoll.ObjectRef[int], callers)
	var wg sync.WaitGroup
	for c := range callers {
		wg.Go(func() {
			for seq := 1; seq <= each; seq++ {
				refs[c] = append(refs[c], sequencerNext.Remote(ctx, a, atoll.Value(c), atoll.Value(seq)))
			}
		})
	}
	wg.Wait()
	for c := range callers {
		got, err := atoll.GetAll(ctx, refs[c])
		if err != nil {
			t.Fatalf("caller %d: %v", c, err)
		}
		for i, want := range got {
			if want != i+1 {
				t.Fatalf("caller %d: call %d ran after call %d: out of order", c, i+1, want-1)
			}
		}
	}
}

// callLog is an actor that appends each call it runs to a file, which
// outlives its incarnations: "start" for each incarnation, then "CALLER
// SEQ" for each call.
type callLog struct{ f *os.File }

type callLogArgs struct {
	Caller, Seq           int
	CrashCaller, CrashSeq int // the call that crashes the actor
}

var (
	callLogType = atoll.NewActorType1("pipe.callLog", func(_ context.Context, dir string) (*callLog, error) {
		f, err := os.OpenFile(filepath.Join(dir, "log"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			return nil, err
		}
		if _, err := fmt.Fprintln(f, "start"); err != nil {
			return nil, err
		}
		return &callLog{f: f}, nil
	})
	callLogAppend = atoll.NewMethod1(callLogType, "Append", func(l *callLog, _ context.Context, a callLogArgs) (int, error) {
		if a.Caller == a.CrashCaller && a.Seq == a.CrashSeq {
			panic(fmt.Sprintf("crash on call %d of caller %d", a.Seq, a.Caller))
		}
		_, err := fmt.Fprintln(l.f, a.Caller, a.Seq)
		return a.Seq, err
	})
)

// 10,000 calls from 8 goroutines of the driver to one actor in a worker
// process, all in flight at once, across one restart of the actor: the
// call that crashes it fails with its panic, and every other call runs
// exactly once, on the first incarnation or the second, in its caller's
// order.
func TestDirectCallsFromEightCallersKeepOrderAcrossRestart(t *testing.T) {
	ctx := startProcesses(t)
	dir := t.TempDir()
	a, err := callLogType.New(ctx, atoll.Value(dir), atoll.MaxRestarts(1))
	if err != nil {
		t.Fatal(err)
	}
	const callers, each = 8, 1250
	const crashCaller, crashSeq = 3, each / 2
	refs := make([][]atoll.ObjectRef[int], callers)
	var wg sync.WaitGroup
	for c := range callers {
		wg.Go(func() {
			for seq := 1; seq <= each; seq++ {
				args := callLogArgs{Caller: c, Seq: seq, CrashCaller: crashCaller, CrashSeq: crashSeq}
				refs[c] = append(refs[c], callLogAppend.Remote(ctx, a, atoll.Value(args)))
			}
		})
	}
	wg.Wait()
	want := make([][]int, callers) // each caller's calls that must have run, in order
	for c := range callers {
		for i, ref := range refs[c] {
			seq := i + 1
			v, err := atoll.Get(ctx, ref)
			if c == crashCaller && seq == crashSeq {
				var crashed *atoll.TaskError
				if !errors.As(err, &crashed) {
					t.Fatalf("caller %d, call %d: want the method's panic as a TaskError, got %v, %v", c, seq, v, err)
				}
				continue
			}
			if err != nil || v != seq {
				t.Fatalf("caller %d, call %d: %v, %v", c, seq, v, err)
			}
			want[c] = append(want[c], seq)
		}
	}
	log, err := os.ReadFile(filepath.Join(dir, "log"))
	if err != nil {
		t.Fatal(err)
	}
	got := make([][]int, callers)
	starts, afterRestart := 0, 0
	for _, line := range strings.Split(strings.TrimSpace(string(log)), "\n") {
		if line == "start" {
			starts++
			continue
		}
		var c, seq int
		if _, err := fmt.Sscan(line, &c, &seq); err != nil || c < 0 || c >= callers {
			t.Fatalf("log line %q", line)
		}
		got[c] = append(got[c], seq)
		if starts == 2 {
			afterRestart++
		}
	}
	if starts != 2 || afterRestart == 0 {
		t.Fatalf("%d incarnations, %d calls run on the second: want 2, and calls on both", starts, afterRestart)
	}
	t.Logf("%d calls ran on the actor's second incarnation", afterRestart)
	for c := range callers {
		if !slices.Equal(got[c], want[c]) {
			t.Fatalf("caller %d: %d calls ran, want %d; the first difference at %d", c, len(got[c]), len(want[c]), firstDiff(got[c], want[c]))
		}
	}
}

// firstDiff is the index at which a and b first differ.
func firstDiff(a, b []int) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}
