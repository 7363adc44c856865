package atoll_test

import (
	"context"
	"os"
	goruntime "runtime"
	"testing"
	"time"

	"github.com/atoll-runtime/atoll"
)

// gomaxprocs is the GOMAXPROCS of the process that runs it, as it
// starts; then it computes for least (a long task is busy).
var gomaxprocs = atoll.NewFunc1("proc.gomaxprocs", func(_ context.Context, least time.Duration) (int, error) {
	n := goruntime.GOMAXPROCS(0)
	busy(least)
	return n, nil
})

// busy keeps a core busy for d.
func busy(d time.Duration) {
	for start := time.Now(); time.Since(start) < d; {
	}
}

type procsActor struct{}

var (
	procsActorType = atoll.NewActorType("proc.actor", func(context.Context) (*procsActor, error) { return &procsActor{}, nil })
	actorProcs     = atoll.NewMethod1(procsActorType, "Procs", func(_ *procsActor, _ context.Context, least time.Duration) (int, error) {
		n := goruntime.GOMAXPROCS(0)
		busy(least)
		return n, nil
	})
)

// TestWorkerGOMAXPROCS: after a task of a millisecond or more, a worker
// process runs the next on as many Ps as the CPUs the last held (one by
// default, a fraction rounded up, no more than Go's default); after a
// shorter one, on Go's default. An actor's calls hold what the actor
// does. One CPU on the node: every task runs in the same worker, in turn.
func TestWorkerGOMAXPROCS(t *testing.T) {
	if os.Getenv("GOMAXPROCS") != "" {
		t.Skip("GOMAXPROCS set: the workers keep it")
	}
	dflt := goruntime.GOMAXPROCS(0)
	ctx := startProcesses(t, atoll.WithNumCPUs(1))
	long := 5 * time.Millisecond
	half := atoll.WithTaskResources(atoll.Resources{CPU: 0.5})
	for _, c := range []struct {
		name  string
		least time.Duration
		opts  []atoll.TaskOption
		want  int // seen by the next task
	}{
		{"a short task", 0, nil, dflt},
		{"a long task", long, nil, 1},
		{"another long task", long, nil, 1},
		{"a long task of half a CPU", long, []atoll.TaskOption{half}, 1},
		{"a short task", 0, nil, dflt},
	} {
		got := afterOne(t, tries(c.least), func(least time.Duration) (int, error) {
			return atoll.Get(ctx, gomaxprocs.Remote(ctx, atoll.Value(least), c.opts...))
		}, c.least, c.want)
		if got != c.want {
			t.Errorf("after %s: the next task ran with GOMAXPROCS %d, want %d", c.name, got, c.want)
		}
	}
	a, err := procsActorType.New(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		least time.Duration
		want  int
	}{{long, 1}, {0, dflt}} {
		got := afterOne(t, tries(c.least), func(least time.Duration) (int, error) {
			return atoll.Get(ctx, actorProcs.Remote(ctx, a, atoll.Value(least)))
		}, c.least, c.want)
		if got != c.want {
			t.Errorf("after a call of %v: the next call ran with GOMAXPROCS %d, want %d", c.least, got, c.want)
		}
	}
}

// afterOne runs one of work for least, then one for no time, and returns
// the GOMAXPROCS the second saw; up to n times, until it is want. A long
// first (5 ms) is long however loaded the machine, so its case gets one
// try; a short one may run past a millisecond on a loaded machine (then
// the worker keeps to its CPUs, rightly), so its case gets a few.
func afterOne(t *testing.T, n int, work func(least time.Duration) (int, error), least time.Duration, want int) int {
	t.Helper()
	var got int
	for range n {
		if _, err := work(least); err != nil {
			t.Fatal(err)
		}
		var err error
		if got, err = work(0); err != nil {
			t.Fatal(err)
		}
		if got == want {
			break
		}
	}
	return got
}

func tries(least time.Duration) int {
	if least > 0 {
		return 1
	}
	return 10
}
