package atoll_test

import (
	"context"
	"os"
	goruntime "runtime"
	"testing"

	"github.com/atoll-runtime/atoll"
)

// gomaxprocs is the GOMAXPROCS of the process that runs it.
var gomaxprocs = atoll.NewFunc0("proc.gomaxprocs", func(context.Context) (int, error) {
	return goruntime.GOMAXPROCS(0), nil
})

type procsActor struct{}

var (
	procsActorType = atoll.NewActorType("proc.actor", func(context.Context) (*procsActor, error) { return &procsActor{}, nil })
	actorProcs     = atoll.NewMethod0(procsActorType, "Procs", func(*procsActor, context.Context) (int, error) {
		return goruntime.GOMAXPROCS(0), nil
	})
)

// TestWorkerGOMAXPROCS: a worker process runs a task on as many Ps as the
// CPUs the task holds (one by default, a fraction rounded up, no more
// than the machine has), and an actor's calls on the CPUs its creation
// holds; the setting follows the tasks a worker runs in turn.
func TestWorkerGOMAXPROCS(t *testing.T) {
	if os.Getenv("GOMAXPROCS") != "" {
		t.Skip("GOMAXPROCS set: the workers keep it")
	}
	most := goruntime.NumCPU()
	ctx := startProcesses(t, atoll.WithNumCPUs(float64(max(2, most))))
	cpus := func(n float64) atoll.TaskOrActorOption { return atoll.WithTaskResources(atoll.Resources{CPU: n}) }
	for _, c := range []struct {
		name string
		opts []atoll.TaskOption
		want int
	}{
		{"default", nil, 1},
		{"two CPUs", []atoll.TaskOption{cpus(2)}, min(2, most)},
		{"half a CPU", []atoll.TaskOption{cpus(0.5)}, 1},
		{"default again", nil, 1},
	} {
		got, err := atoll.Get(ctx, gomaxprocs.Remote(ctx, c.opts...))
		if err != nil {
			t.Fatal(err)
		}
		if got != c.want {
			t.Errorf("%s: the task ran with GOMAXPROCS %d, want %d", c.name, got, c.want)
		}
	}
	for _, c := range []struct {
		name string
		opts []atoll.ActorOption
		want int
	}{
		{"an actor of no CPUs", nil, 1},
		{"an actor of two CPUs", []atoll.ActorOption{cpus(2)}, min(2, most)},
	} {
		a, err := procsActorType.New(ctx, c.opts...)
		if err != nil {
			t.Fatal(err)
		}
		for range 2 {
			got, err := atoll.Get(ctx, actorProcs.Remote(ctx, a))
			if err != nil {
				t.Fatal(err)
			}
			if got != c.want {
				t.Errorf("%s: a call ran with GOMAXPROCS %d, want %d", c.name, got, c.want)
			}
		}
	}
}
