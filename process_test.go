package atoll_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"syscall"
	"testing"

	"gonum.org/v1/gonum/floats"

	"github.com/atoll-runtime/atoll"
	"github.com/atoll-runtime/atoll/atolltest"
	"github.com/atoll-runtime/atoll/internal/pss"
	"github.com/atoll-runtime/atoll/internal/testutil"
)

// Tasks and actors for worker processes: they run in a re-executed copy
// of this test binary, so they may share nothing with the test but what
// atoll carries.

type killArgs struct {
	Tracker string // name of the tracker actor to register with
	X       int
}

type sumAndPid struct {
	Sum float64
	Pid int
}

// tracker is a rendezvous for tests that must act while a task runs: tasks
// register their pid, the test reads it and kills that process.
type tracker struct{ pids []int }

var (
	whereAmI   = atoll.NewFunc0("proc.whereAmI", func(context.Context) (int, error) { return os.Getpid(), nil })
	sumWithPid = atoll.NewFunc1("proc.sumWithPid", func(_ context.Context, xs []float64) (sumAndPid, error) {
		return sumAndPid{floats.Sum(xs), os.Getpid()}, nil
	})
	trackerType = atoll.NewActorType("proc.tracker", func(context.Context) (*tracker, error) { return &tracker{}, nil })
	register    = atoll.NewMethod1(trackerType, "Register", func(t *tracker, _ context.Context, pid int) (int, error) {
		t.pids = append(t.pids, pid)
		return len(t.pids), nil
	})
	pids = atoll.NewMethod0(trackerType, "Pids", func(t *tracker, _ context.Context) ([]int, error) {
		return slices.Clone(t.pids), nil
	})
	// killMeOnce registers with the tracker; the first attempt then waits
	// to be killed, later ones return double the argument.
	killMeOnce = atoll.NewFunc1("proc.killMeOnce", func(ctx context.Context, a killArgs) (int, error) {
		t, err := atoll.GetActor[*tracker](ctx, a.Tracker)
		if err != nil {
			return 0, err
		}
		// Hold a worker-owned object in shared memory while registering
		// (the test kills after that): the kill must free it.
		held, err := atoll.Put(ctx, make([]byte, 1<<20))
		if err != nil {
			return 0, err
		}
		n, err := atoll.Get(ctx, register.Remote(ctx, t, atoll.Value(os.Getpid())))
		if err != nil {
			return 0, err
		}
		if n == 1 {
			<-ctx.Done()
			held.Release()
			return 0, ctx.Err()
		}
		held.Release()
		return 2 * a.X, nil
	})
	pidActorType = atoll.NewActorType1("proc.counter", func(_ context.Context, start int) (*counter, error) {
		return &counter{n: start}, nil
	})
	pidOf = atoll.NewMethod0(pidActorType, "Pid", func(*counter, context.Context) (int, error) { return os.Getpid(), nil })
	bump  = atoll.NewMethod1(pidActorType, "Bump", func(c *counter, _ context.Context, d int) (int, error) {
		c.n += d
		return c.n, nil
	})
)

func startProcesses(t *testing.T, opts ...atoll.Option) context.Context {
	t.Helper()
	return start(t, append([]atoll.Option{atoll.WithWorkerMode(atoll.ProcessWorkers)}, opts...)...)
}

func TestTasksRunInWorkerProcesses(t *testing.T) {
	ctx := startProcesses(t)
	pid, err := atoll.Get(ctx, whereAmI.Remote(ctx))
	if err != nil {
		t.Fatal(err)
	}
	if pid == os.Getpid() || pid == 0 {
		t.Fatalf("task ran in pid %d; the driver is %d", pid, os.Getpid())
	}
	// Values and refs, inline and through shared memory, cross processes.
	a := double.Remote(ctx, atoll.Value(21))
	if v, err := atoll.Get(ctx, add.Remote(ctx, a, atoll.Value(8))); err != nil || v != 50 {
		t.Fatalf("chained tasks in processes: %v %v", v, err)
	}
	parts := split.Remote(ctx, 2, atoll.Value(make([]int64, 100000)), atoll.Value(2))
	if got, err := atoll.Get(ctx, parts[0]); err != nil || len(got) != 100000 {
		t.Fatalf("large return from a process: %d %v", len(got), err)
	}
	// Nested tasks: the worker owns its children.
	if v, err := atoll.Get(ctx, nest.Remote(ctx, atoll.Value(2))); err != nil || v != 2 {
		t.Fatalf("nested tasks in processes: %v %v", v, err)
	}
	_, err = atoll.Get(ctx, failing.Remote(ctx, atoll.Value("from a process")))
	var te *atoll.TaskError
	if !errors.As(err, &te) || te.Message != "from a process" {
		t.Fatalf("task error across processes: %v", err)
	}
}

func TestSharedObjectIsOneCopyAcrossWorkerProcesses(t *testing.T) {
	const size = 256 << 20 // a second copy would show, beside the ~10 MiB the processes grow by
	ctx := startProcesses(t, atoll.WithObjectStoreMemory(size+64<<20))
	// Warm both workers up, then measure the cluster's memory before the
	// object exists.
	for range 2 {
		if _, err := atoll.Get(ctx, whereAmI.Remote(ctx)); err != nil {
			t.Fatal(err)
		}
	}
	clusterPSS := func() uint64 {
		tree, err := pss.Tree(os.Getpid())
		if err != nil {
			t.Fatal(err)
		}
		total, err := pss.Sum(tree)
		if err != nil {
			t.Fatal(err)
		}
		return total
	}
	before := clusterPSS()
	ref, err := atoll.PutWith(ctx, size/8, func(xs []float64) {
		ones := make([]float64, 1<<16)
		for i := range ones {
			ones[i] = 1
		}
		for i := 0; i < len(xs); i += len(ones) {
			copy(xs[i:], ones) // copy, not a loop: cheap under -race
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	a, b := sumWithPid.Remote(ctx, ref), sumWithPid.Remote(ctx, ref)
	ra, err := atoll.Get(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	rb, err := atoll.Get(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	if ra.Sum != size/8 || rb.Sum != size/8 {
		t.Fatalf("sums %v %v, want %d", ra.Sum, rb.Sum, size/8)
	}
	if ra.Pid == rb.Pid || ra.Pid == os.Getpid() || rb.Pid == os.Getpid() {
		t.Fatalf("want two different worker processes, got pids %d and %d (driver %d)", ra.Pid, rb.Pid, os.Getpid())
	}
	grown := clusterPSS() - before
	// Three processes map the object (driver wrote it, two workers read
	// it); PSS splits shared pages between them, so one copy is ~size.
	if grown > size*5/4 {
		t.Fatalf("the cluster grew by %d MiB for a %d MiB object: more than one copy", grown>>20, size>>20)
	}
	t.Logf("cluster PSS grew by %d MiB for a %d MiB object read by 2 worker processes", grown>>20, size>>20)
}

func TestKilledWorkerProcessTaskIsRetried(t *testing.T) {
	ctx := startProcesses(t)
	tr, err := trackerType.New(ctx, atoll.ActorName("tracker"))
	if err != nil {
		t.Fatal(err)
	}
	before, err := atolltest.Memory(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ref := killMeOnce.Remote(ctx, atoll.Value(killArgs{"tracker", 21}), atoll.MaxRetries(1))
	victim := waitForPid(t, ctx, tr)
	if err := syscall.Kill(victim, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if v, err := atoll.Get(ctx, ref); err != nil || v != 42 {
		t.Fatalf("retried task: %v %v", v, err)
	}
	testutil.Eventually(t, "store usage to return to where it was", func() bool {
		m, err := atolltest.Memory(ctx)
		return err == nil && m.StoreUsed == before.StoreUsed && m.StorePinned == before.StorePinned
	})

	// Without retries the kill is final.
	tr2, err := trackerType.New(ctx, atoll.ActorName("tracker-2"))
	if err != nil {
		t.Fatal(err)
	}
	ref = killMeOnce.Remote(ctx, atoll.Value(killArgs{"tracker-2", 1}), atoll.MaxRetries(0))
	if err := syscall.Kill(waitForPid(t, ctx, tr2), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	var wc *atoll.WorkerCrashedError
	if _, err := atoll.Get(ctx, ref); !errors.As(err, &wc) {
		t.Fatalf("want WorkerCrashed, got %v", err)
	}
}

// waitForPid waits until the tracker has seen a task and returns its pid.
func waitForPid(t *testing.T, ctx context.Context, tr atoll.ActorHandle[*tracker]) int {
	t.Helper()
	var got []int
	testutil.Eventually(t, "a task to register", func() bool {
		var err error
		got, err = atoll.Get(ctx, pids.Remote(ctx, tr))
		if err != nil {
			t.Fatal(err)
		}
		return len(got) > 0
	})
	return got[len(got)-1]
}

func TestKilledActorProcessIsRestarted(t *testing.T) {
	ctx := startProcesses(t)
	c, err := pidActorType.New(ctx, atoll.Value(5), atoll.MaxRestarts(1))
	if err != nil {
		t.Fatal(err)
	}
	if v, err := atoll.Get(ctx, bump.Remote(ctx, c, atoll.Value(1))); err != nil || v != 6 {
		t.Fatalf("first call: %v %v", v, err)
	}
	pid, err := atoll.Get(ctx, pidOf.Remote(ctx, c))
	if err != nil || pid == os.Getpid() {
		t.Fatalf("actor pid %d (driver %d): %v", pid, os.Getpid(), err)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	// The next call runs on the restarted actor: a new process, the
	// constructor run again.
	testutil.Eventually(t, "the actor to come back in a new process", func() bool {
		p, err := atoll.Get(ctx, pidOf.Remote(ctx, c))
		return err == nil && p != pid
	})
	if v, err := atoll.Get(ctx, bump.Remote(ctx, c, atoll.Value(1))); err != nil || v != 6 {
		t.Fatalf("after restart: %v %v (want 6: state re-initialised)", v, err)
	}
	// The second death spends the last restart.
	pid2, _ := atoll.Get(ctx, pidOf.Remote(ctx, c))
	if err := syscall.Kill(pid2, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, "calls to fail with ActorDied", func() bool {
		_, err := atoll.Get(ctx, bump.Remote(ctx, c, atoll.Value(1)))
		return errors.Is(err, atoll.ErrActorDied)
	})
}

var workerOf = atoll.NewFunc1("proc.workerOf", func(ctx context.Context, tr string) (string, error) {
	t, err := atoll.GetActor[*tracker](ctx, tr)
	if err != nil {
		return "", err
	}
	n, err := atoll.Get(ctx, register.Remote(ctx, t, atoll.Value(os.Getpid())))
	if err != nil {
		return "", err
	}
	if n > 1 { // the retry answers
		if a := atoll.CurrentAttempt(ctx); a != n-1 {
			return "", fmt.Errorf("run %d reports attempt %d, want %d", n, a, n-1)
		}
		return atoll.CurrentWorkerID(ctx), nil
	}
	<-ctx.Done()
	return "", ctx.Err()
})

func TestKillWorkerByID(t *testing.T) {
	ctx := startProcesses(t)
	tr, err := trackerType.New(ctx, atoll.ActorName("tracker-kw"))
	if err != nil {
		t.Fatal(err)
	}
	ref := workerOf.Remote(ctx, atoll.Value("tracker-kw"), atoll.MaxRetries(1))
	first := waitForPid(t, ctx, tr)
	// Killing by task ends the worker process running it; the retry runs
	// on another worker and reports that worker's id.
	if err := atolltest.KillTaskWorker(ctx, ref); err != nil {
		t.Fatal(err)
	}
	id, err := atoll.Get(ctx, ref)
	if err != nil || len(id) != 32 {
		t.Fatalf("retried task: %q %v", id, err)
	}
	testutil.Eventually(t, "the killed worker process to exit", func() bool { return syscall.Kill(first, 0) != nil })
	if err := atolltest.KillWorker(ctx, id); err != nil {
		t.Fatal(err)
	}
	if err := atolltest.KillWorker(ctx, "zz"); !errors.Is(err, atoll.ErrInvalidArgument) {
		t.Fatalf("bad id: %v", err)
	}
	// The node keeps serving after the kills.
	if v, err := atoll.Get(ctx, double.Remote(ctx, atoll.Value(4))); err != nil || v != 8 {
		t.Fatalf("after kills: %v %v", v, err)
	}
}

// lookupAtBirth looks up another actor from its constructor, which runs in
// its own worker process while its host waits for it.
type lookupAtBirth struct{ found string }

var (
	lookupType = atoll.NewActorType1("proc.lookupAtBirth", func(ctx context.Context, name string) (*lookupAtBirth, error) {
		t, err := atoll.GetActor[*tracker](ctx, name)
		if err != nil {
			return nil, err
		}
		return &lookupAtBirth{found: t.ID()}, nil
	})
	foundID = atoll.NewMethod0(lookupType, "Found", func(l *lookupAtBirth, _ context.Context) (string, error) { return l.found, nil })
)

func TestActorConstructorCanCallTheGCS(t *testing.T) {
	ctx := startProcesses(t)
	tr, err := trackerType.New(ctx, atoll.ActorName("tracker-birth"))
	if err != nil {
		t.Fatal(err)
	}
	l, err := lookupType.New(ctx, atoll.Value("tracker-birth"))
	if err != nil {
		t.Fatal(err)
	}
	if id, err := atoll.Get(ctx, foundID.Remote(ctx, l)); err != nil || id != tr.ID() {
		t.Fatalf("constructor lookup: %q %v, want %q", id, err, tr.ID())
	}
}
