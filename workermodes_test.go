package atoll_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/atoll-runtime/atoll"
	"github.com/atoll-runtime/atoll/atolltest"
	"github.com/atoll-runtime/atoll/internal/testutil"
)

// One suite of worker semantics, run against both worker modes: worker
// processes and in-process workers speak the same protocol and must
// differ in isolation only. Tasks and actors meet the test through files
// (they may run in other processes).

type modeCase struct {
	name string
	run  func(t *testing.T, ctx context.Context)
}

// workerModeCases run under ProcessWorkers and under InProcessWorkers.
var workerModeCases = []modeCase{
	{"ConcurrencyGroups", caseConcurrencyGroups},
	{"CallerOrder", caseCallerOrder},
	{"CancelRecursive", caseCancelRecursive},
	{"CancelledReturnsNormally", caseCancelledReturnsNormally},
	{"CancelNonRecursive", testCancelNonRecursive},
	{"ForceCancel", caseForceCancel},
	{"WorkerKilledTaskRetried", caseWorkerKilled},
	{"ActorPanicRestarts", caseActorPanicRestarts},
	{"ActorWorkerKilledRestarts", caseActorWorkerKilled},
	{"ConstructorFails", caseConstructorFails},
	{"SlowConstructorWithArguments", caseSlowConstructor},
	{"ConstructorCallsAnotherActor", caseConstructorCallsActor},
	{"ConstructorSubmitsATask", caseConstructorSubmitsTask},
	{"GeneratorStream", testStream},
	{"GeneratorBackpressure", testBackpressure},
	{"GeneratorCancel", testCancel},
	{"BorrowAcrossATask", caseBorrowAcrossTask},
}

func TestWorkerModes(t *testing.T) {
	for _, mode := range []atoll.WorkerMode{atoll.ProcessWorkers, atoll.InProcessWorkers} {
		t.Run(mode.String(), func(t *testing.T) {
			for _, c := range workerModeCases {
				t.Run(c.name, func(t *testing.T) {
					c.run(t, start(t, atoll.WithWorkerMode(mode)))
				})
			}
		})
	}
}

// modeArgs name a directory of rendezvous files and a value.
type modeArgs struct {
	Dir string
	I   int
}

// exists reports whether dir/name exists.
func exists(dir, name string) bool {
	_, err := os.Stat(filepath.Join(dir, name))
	return err == nil
}

// waitFile waits until dir/name exists.
func waitFile(t *testing.T, dir, name string) {
	t.Helper()
	testutil.Eventually(t, name+" to appear", func() bool { return exists(dir, name) })
}

// modesSeqActor records the calls it runs, in order.
type modesSeqActor struct {
	seen []int
	n    int
}

// callerActor is built by a constructor that calls another actor, or
// submits a task, and keeps what it got.
type callerActor struct{ got int }

var (
	modesSeqType = atoll.NewActorType("modes.seq", func(context.Context) (*modesSeqActor, error) { return &modesSeqActor{}, nil })
	modesAppend  = atoll.NewMethod1(modesSeqType, "Append", func(a *modesSeqActor, _ context.Context, i int) (int, error) {
		a.seen = append(a.seen, i)
		return len(a.seen), nil
	})
	modesSeen = atoll.NewMethod0(modesSeqType, "Seen", func(a *modesSeqActor, _ context.Context) ([]int, error) { return slices.Clone(a.seen), nil })
	// modesBump counts calls on this instance; modesPanic panics.
	modesBump  = atoll.NewMethod0(modesSeqType, "Bump", func(a *modesSeqActor, _ context.Context) (int, error) { a.n++; return a.n, nil })
	modesPanic = atoll.NewMethod0(modesSeqType, "Panic", func(*modesSeqActor, context.Context) (int, error) { panic("modes: asked to panic") })
	// modesBlock marks dir/blocked and waits for its context or dir/go.
	modesBlock = atoll.NewMethod1(modesSeqType, "Block", func(_ *modesSeqActor, ctx context.Context, a modeArgs) (int, error) {
		if err := mark(a.Dir, "blocked"); err != nil {
			return 0, err
		}
		return 0, waitGate(ctx, a.Dir, "go")
	})

	// ctorType's constructor fails when I is negative, waits for dir/ctor
	// when it is 1, and keeps the sum of a lent object.
	ctorType = atoll.NewActorType2("modes.ctor", func(ctx context.Context, a modeArgs, box refBox) (*callerActor, error) {
		if a.I < 0 {
			return nil, fmt.Errorf("modes: constructor asked to fail")
		}
		if a.I == 1 {
			if err := mark(a.Dir, "ctor-started"); err != nil {
				return nil, err
			}
			if err := waitGate(ctx, a.Dir, "ctor"); err != nil {
				return nil, err
			}
		}
		b, err := atoll.Get(ctx, box.Ref)
		if err != nil {
			return nil, err
		}
		return &callerActor{got: blobSum(b)}, nil
	})
	ctorGot = atoll.NewMethod0(ctorType, "Got", func(c *callerActor, _ context.Context) (int, error) { return c.got, nil })

	// callsActorType's constructor calls a method of the actor it is
	// given (a user's report: it used to hang until the host's start
	// timeout with worker processes).
	callsActorType = atoll.NewActorType1("modes.callsActor", func(ctx context.Context, other atoll.ActorHandle[*counter]) (*callerActor, error) {
		v, err := atoll.Get(ctx, bump.Remote(ctx, other, atoll.Value(5)))
		if err != nil {
			return nil, err
		}
		return &callerActor{got: v}, nil
	})
	callsActorGot = atoll.NewMethod0(callsActorType, "Got", func(c *callerActor, _ context.Context) (int, error) { return c.got, nil })
	// submitsTaskType's constructor runs a task and waits for it.
	submitsTaskType = atoll.NewActorType1("modes.submitsTask", func(ctx context.Context, x int) (*callerActor, error) {
		v, err := atoll.Get(ctx, double.Remote(ctx, atoll.Value(x)))
		if err != nil {
			return nil, err
		}
		return &callerActor{got: v}, nil
	})
	submitsTaskGot = atoll.NewMethod0(submitsTaskType, "Got", func(c *callerActor, _ context.Context) (int, error) { return c.got, nil })

	// killedOnce marks dir/attempt-N; attempt 0 then waits for its
	// context (its worker is killed) or dir/go, later attempts return.
	killedOnce = atoll.NewFunc1("modes.killedOnce", func(ctx context.Context, a modeArgs) (string, error) {
		attempt := atoll.CurrentAttempt(ctx)
		if err := mark(a.Dir, fmt.Sprintf("attempt-%d", attempt)); err != nil {
			return "", err
		}
		if attempt == 0 {
			if err := waitGate(ctx, a.Dir, "go"); err != nil {
				return "", err
			}
		}
		return fmt.Sprintf("attempt %d", attempt), nil
	})
	// ignoresContextUntilGo marks dir/started and waits for dir/go,
	// whatever its context says, then marks dir/ended.
	ignoresContextUntilGo = atoll.NewFunc1("modes.ignoresContext", func(_ context.Context, a modeArgs) (int, error) {
		if err := mark(a.Dir, "started"); err != nil {
			return 0, err
		}
		if err := waitGate(context.Background(), a.Dir, "go"); err != nil {
			return 0, err
		}
		return 0, mark(a.Dir, "ended")
	})
	// lentSum reads the object a box lends and returns a new box holding
	// a ref to an object it puts.
	lentSum = atoll.NewFunc1("modes.lentSum", func(ctx context.Context, b refBox) (refBox, error) {
		v, err := atoll.Get(ctx, b.Ref)
		if err != nil {
			return refBox{}, err
		}
		ref, err := atoll.Put(ctx, blob(byte(blobSum(v)%251)))
		if err != nil {
			return refBox{}, err
		}
		return refBox{Ref: ref, Note: fmt.Sprint(blobSum(v))}, nil
	})
)

// caseConcurrencyGroups: MaxConcurrency and a concurrency group limit
// the calls running at once, each on its own.
func caseConcurrencyGroups(t *testing.T, ctx context.Context) {
	dir := t.TempDir()
	a, err := concurrentType.New(ctx, atoll.MaxConcurrency(2), atoll.ConcurrencyGroup("io", 1, "EnterIO"), atoll.ConcurrencyGroup("admin", 1, "Peaks"))
	if err != nil {
		t.Fatal(err)
	}
	var refs []atoll.ObjectRef[int]
	for range 4 {
		refs = append(refs, enter.Remote(ctx, a, atoll.Value(enterArgs{dir, "default"})))
	}
	for range 3 {
		refs = append(refs, enterIO.Remote(ctx, a, atoll.Value(enterArgs{dir, "io"})))
	}
	testutil.Eventually(t, "2 default and 1 io calls running at once", func() bool {
		p, err := atoll.Get(ctx, peaks.Remote(ctx, a))
		if err != nil {
			t.Fatal(err)
		}
		return p["default.now"] == 2 && p["io.now"] == 1
	})
	openGate(t, dir, "go-default")
	openGate(t, dir, "go-io")
	if _, err := atoll.GetAll(ctx, refs); err != nil {
		t.Fatal(err)
	}
	p, err := atoll.Get(ctx, peaks.Remote(ctx, a))
	if err != nil || p["default"] != 2 || p["io"] != 1 {
		t.Fatalf("peak concurrency %v (%v), want default 2 and io 1", p, err)
	}
}

// caseCallerOrder: a caller's calls start in the order it made them,
// also those made while the actor was still being created.
func caseCallerOrder(t *testing.T, ctx context.Context) {
	a, err := modesSeqType.New(ctx)
	if err != nil {
		t.Fatal(err)
	}
	const n = 200
	refs := make([]atoll.ObjectRef[int], n)
	for i := range refs {
		refs[i] = modesAppend.Remote(ctx, a, atoll.Value(i))
	}
	if _, err := atoll.GetAll(ctx, refs); err != nil {
		t.Fatal(err)
	}
	seen, err := atoll.Get(ctx, modesSeen.Remote(ctx, a))
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range seen {
		if v != i {
			t.Fatalf("call %d ran as the %dth; calls of one caller must run in order: %v", v, i, seen[:min(len(seen), 20)])
		}
	}
	if len(seen) != n {
		t.Fatalf("%d calls ran, want %d: a call ran twice or not at all", len(seen), n)
	}
}

// caseCancelRecursive: cancelling a task cancels the task it submitted.
func caseCancelRecursive(t *testing.T, ctx context.Context) {
	path := filepath.Join(t.TempDir(), "child")
	parent := parentOf.Remote(ctx, atoll.Value(path))
	testutil.Eventually(t, "the parent's child to start", func() bool { _, err := os.Stat(path); return err == nil })
	if err := atoll.Cancel(ctx, parent); err != nil {
		t.Fatal(err)
	}
	if _, err := atoll.Get(ctx, parent); !errors.Is(err, atoll.ErrCancelled) {
		t.Fatalf("the cancelled parent: %v, want ErrCancelled", err)
	}
	testutil.Eventually(t, "the child to see its context cancelled", func() bool { _, err := os.Stat(path + ".cancelled"); return err == nil })
}

// caseCancelledReturnsNormally: a task that returns a value, and no
// error, once its context is cancelled still fails Get with
// ErrCancelled (what the parent in caseCancelRecursive returns when its
// child's value beats its own context to its Get).
func caseCancelledReturnsNormally(t *testing.T, ctx context.Context) {
	path := filepath.Join(t.TempDir(), "task")
	ref := untilCancelled.Remote(ctx, atoll.Value(path))
	testutil.Eventually(t, "the task to start", func() bool { _, err := os.Stat(path); return err == nil })
	if err := atoll.Cancel(ctx, ref); err != nil {
		t.Fatal(err)
	}
	if v, err := atoll.Get(ctx, ref); !errors.Is(err, atoll.ErrCancelled) {
		t.Fatalf("a cancelled task that returned %d normally: %v, want ErrCancelled", v, err)
	}
	testutil.Eventually(t, "the task to see its context cancelled", func() bool { _, err := os.Stat(path + ".cancelled"); return err == nil })
}

// caseForceCancel: a task that ignores its context is stopped by killing
// its worker (in-process: its connection closes and its result is
// dropped; its goroutine runs on until it returns) and is not retried.
func caseForceCancel(t *testing.T, ctx context.Context) {
	dir := t.TempDir()
	ref := ignoresContextUntilGo.Remote(ctx, atoll.Value(modeArgs{Dir: dir}), atoll.MaxRetries(3))
	waitFile(t, dir, "started")
	defer func() {
		// An in-process task's goroutine runs on after the kill: let it
		// end. A worker process was killed: its gate stays shut, or the
		// process, not dead yet, could write "ended" while the test's
		// directory is being removed.
		if pid, err := os.ReadFile(filepath.Join(dir, "started")); err == nil && string(pid) == strconv.Itoa(os.Getpid()) {
			openGate(t, dir, "go")
			waitFile(t, dir, "ended")
		}
	}()
	if err := atoll.Cancel(ctx, ref, atoll.ForceCancel()); err != nil {
		t.Fatal(err)
	}
	if _, err := atoll.Get(ctx, ref); !errors.Is(err, atoll.ErrCancelled) {
		t.Fatalf("a force-cancelled task: %v, want ErrCancelled (not retried)", err)
	}
	// The node replaced the worker: tasks still run.
	if v, err := atoll.Get(ctx, double.Remote(ctx, atoll.Value(4))); err != nil || v != 8 {
		t.Fatalf("a task after the kill: %v %v", v, err)
	}
}

// caseWorkerKilled: a task whose worker is killed mid-run is retried on
// another worker, within MaxRetries.
func caseWorkerKilled(t *testing.T, ctx context.Context) {
	dir := t.TempDir()
	defer openGate(t, dir, "go")
	ref := killedOnce.Remote(ctx, atoll.Value(modeArgs{Dir: dir}), atoll.MaxRetries(1))
	waitFile(t, dir, "attempt-0")
	if err := atolltest.KillTaskWorker(ctx, ref); err != nil {
		t.Fatal(err)
	}
	if v, err := atoll.Get(ctx, ref); err != nil || v != "attempt 1" {
		t.Fatalf("a task whose worker was killed: %q %v, want its retry's result", v, err)
	}
}

// caseActorPanicRestarts: a method that panics fails its call and
// restarts the actor (the constructor runs again) within MaxRestarts;
// past them the actor is dead.
func caseActorPanicRestarts(t *testing.T, ctx context.Context) {
	a, err := modesSeqType.New(ctx, atoll.MaxRestarts(1))
	if err != nil {
		t.Fatal(err)
	}
	if v, err := atoll.Get(ctx, modesBump.Remote(ctx, a)); err != nil || v != 1 {
		t.Fatalf("first call: %v %v", v, err)
	}
	if _, err := atoll.Get(ctx, modesPanic.Remote(ctx, a)); !errors.Is(err, atoll.ErrTask) || !strings.Contains(err.Error(), "asked to panic") {
		t.Fatalf("a panicking method: %v, want its TaskError", err)
	}
	if v, err := atoll.Get(ctx, modesBump.Remote(ctx, a)); err != nil || v != 1 {
		t.Fatalf("a call after the restart: %v %v, want 1 from a fresh instance", v, err)
	}
	if _, err := atoll.Get(ctx, modesPanic.Remote(ctx, a)); err == nil {
		t.Fatal("the second panic did not fail its call")
	}
	testutil.Eventually(t, "calls to fail with ActorDied once the restarts are spent", func() bool {
		_, err := atoll.Get(ctx, modesBump.Remote(ctx, a))
		return errors.Is(err, atoll.ErrActorDied)
	})
}

// caseActorWorkerKilled: the actor's worker dies while a call runs: the
// call fails as crashed (not retried: MaxTaskRetries 0), the actor
// restarts, and later calls run on the new instance.
func caseActorWorkerKilled(t *testing.T, ctx context.Context) {
	dir := t.TempDir()
	defer openGate(t, dir, "go")
	a, err := modesSeqType.New(ctx, atoll.MaxRestarts(1))
	if err != nil {
		t.Fatal(err)
	}
	if v, err := atoll.Get(ctx, modesBump.Remote(ctx, a)); err != nil || v != 1 {
		t.Fatalf("first call: %v %v", v, err)
	}
	blocked := modesBlock.Remote(ctx, a, atoll.Value(modeArgs{Dir: dir}))
	waitFile(t, dir, "blocked")
	if err := atolltest.CrashActor(ctx, a); err != nil {
		t.Fatal(err)
	}
	if _, err := atoll.Get(ctx, blocked); !errors.Is(err, atoll.ErrActorDied) {
		t.Fatalf("the call running when the actor's worker died: %v, want ActorDied", err)
	}
	if v, err := atoll.Get(ctx, modesBump.Remote(ctx, a)); err != nil || v != 1 {
		t.Fatalf("a call after the restart: %v %v, want 1 from a fresh instance", v, err)
	}
}

// caseConstructorFails: a constructor's error kills the actor; its calls
// fail with ActorDied naming the cause.
func caseConstructorFails(t *testing.T, ctx context.Context) {
	ref, err := atoll.Put(ctx, blob(3))
	if err != nil {
		t.Fatal(err)
	}
	a, err := ctorType.New(ctx, atoll.Value(modeArgs{I: -1}), atoll.Value(refBox{Ref: ref}))
	if err != nil {
		t.Fatal(err)
	}
	_, err = atoll.Get(ctx, ctorGot.Remote(ctx, a))
	if !errors.Is(err, atoll.ErrActorDied) || !strings.Contains(err.Error(), "constructor asked to fail") {
		t.Fatalf("a call to an actor whose constructor failed: %v", err)
	}
}

// caseSlowConstructor: calls made while a slow constructor runs wait for
// it; the constructor reads an object lent through its arguments.
func caseSlowConstructor(t *testing.T, ctx context.Context) {
	dir := t.TempDir()
	ref, err := atoll.Put(ctx, blob(5))
	if err != nil {
		t.Fatal(err)
	}
	a, err := ctorType.New(ctx, atoll.Value(modeArgs{Dir: dir, I: 1}), atoll.Value(refBox{Ref: ref}))
	if err != nil {
		t.Fatal(err)
	}
	got := ctorGot.Remote(ctx, a)
	waitFile(t, dir, "ctor-started")
	wctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if ready, _, err := atoll.Wait(wctx, []atoll.ObjectRef[int]{got}); err != nil || len(ready) != 0 {
		t.Fatalf("a call finished before the constructor did: %d ready, %v", len(ready), err)
	}
	openGate(t, dir, "ctor")
	if v, err := atoll.Get(ctx, got); err != nil || v != blobSum(blob(5)) {
		t.Fatalf("a call after a slow constructor: %v %v", v, err)
	}
}

// caseConstructorCallsActor: a constructor that calls a method of another
// actor it was given a handle to is created at once (it used to wait for
// the host's 30 s start timeout with worker processes, and fail with
// "constructor failed: context deadline exceeded").
func caseConstructorCallsActor(t *testing.T, ctx context.Context) {
	b, err := pidActorType.New(ctx, atoll.Value(10))
	if err != nil {
		t.Fatal(err)
	}
	tctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	a, err := callsActorType.New(tctx, atoll.Value(b))
	if err != nil {
		t.Fatal(err)
	}
	if v, err := atoll.Get(tctx, callsActorGot.Remote(tctx, a)); err != nil || v != 15 {
		t.Fatalf("an actor whose constructor called another actor: %v %v, want 15", v, err)
	}
}

// caseConstructorSubmitsTask: a constructor that runs a task and waits
// for its result is created at once too.
func caseConstructorSubmitsTask(t *testing.T, ctx context.Context) {
	tctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	a, err := submitsTaskType.New(tctx, atoll.Value(21))
	if err != nil {
		t.Fatal(err)
	}
	if v, err := atoll.Get(tctx, submitsTaskGot.Remote(tctx, a)); err != nil || v != 42 {
		t.Fatalf("an actor whose constructor ran a task: %v %v, want 42", v, err)
	}
}

// caseBorrowAcrossTask: a ref inside an argument is lent to the task,
// which returns a ref to an object it put inside its result; the driver
// reads it, and everything is freed once dropped.
func caseBorrowAcrossTask(t *testing.T, ctx context.Context) {
	ref, err := atoll.Put(ctx, blob(11))
	if err != nil {
		t.Fatal(err)
	}
	box, err := atoll.Get(ctx, lentSum.Remote(ctx, atoll.Value(refBox{Ref: ref})))
	if err != nil {
		t.Fatal(err)
	}
	want := blobSum(blob(11))
	if box.Note != fmt.Sprint(want) {
		t.Fatalf("the task read %q through the lent ref, want %d", box.Note, want)
	}
	v, err := atoll.Get(ctx, box.Ref)
	if err != nil || blobSum(v) != blobSum(blob(byte(want%251))) {
		t.Fatalf("the object returned inside the result: %v", err)
	}
	ref.Release()
	box = refBox{}
	settled(t, ctx)
}
