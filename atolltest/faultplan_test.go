package atolltest_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/atoll-runtime/atoll"
	"github.com/atoll-runtime/atoll/atolltest"
	"github.com/atoll-runtime/atoll/faultplan"
	"github.com/atoll-runtime/atoll/internal/testutil"
)

var fpSquare = atoll.NewFunc1("fp.square", func(_ context.Context, x int) (int, error) { return x * x, nil })

// replayPlan delays submissions and store creations, each with a
// probability: harmless faults, so the workload's outcome is known.
const replayPlan = `
rules:
  - name: slow-submits
    action: delay
    message: SubmitTask
    actor: raylet
    delay: 1ms
    probability: 0.5
  - name: slow-creates
    action: delay
    message: CreateObjectRequest
    delay: 1ms
    probability: 0.5
`

// runPlan runs a sequential workload under the plan with the given seed
// and returns its fault log.
func runPlan(t *testing.T, seed uint64) []string {
	t.Helper()
	p, err := faultplan.Parse([]byte(replayPlan))
	if err != nil {
		t.Fatal(err)
	}
	p.Seed = seed
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := atoll.Init(ctx, atoll.WithObjectStoreMemory(64<<20), atoll.WithNumCPUs(1), atoll.WithWorkerMode(atoll.InProcessWorkers),
		atoll.WithFaultPlan(p)); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := atoll.Shutdown(context.Background()); err != nil {
			t.Error(err)
		}
	}()
	big := make([]byte, 256<<10)
	for i := range 40 {
		got, err := atoll.Get(ctx, fpSquare.Remote(ctx, atoll.Value(i)))
		if err != nil || got != i*i {
			t.Fatalf("square(%d) = %d, %v", i, got, err)
		}
		if i%4 == 0 {
			ref, err := atoll.Put(ctx, big)
			if err != nil {
				t.Fatal(err)
			}
			if b, err := atoll.Get(ctx, ref); err != nil || len(b) != len(big) {
				t.Fatalf("get of a put: %d bytes, %v", len(b), err)
			}
		}
	}
	log, err := atolltest.GetFaultLog(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range log.Messages {
		out = append(out, e.String())
	}
	return out
}

// The same plan and seed replay the same fault log on the same workload;
// another seed faults other messages.
func TestFaultPlanReplays(t *testing.T) {
	a, b, c := runPlan(t, 7), runPlan(t, 7), runPlan(t, 8)
	if len(a) < 10 {
		t.Fatalf("only %d faults injected: %q", len(a), a)
	}
	if !slices.Equal(a, b) {
		t.Fatalf("seed 7 twice, different fault logs:\n%q\n%q", a, b)
	}
	if slices.Equal(a, c) {
		t.Fatalf("seeds 7 and 8 gave the same fault log %q", a)
	}
}

// A timed rule: the store fails its next creations once the rule fires,
// and the fault log records it.
func TestFaultPlanTimedRule(t *testing.T) {
	p, err := faultplan.Parse([]byte("rules: [{name: full-store, action: fail-creates, count: 2}]"))
	if err != nil {
		t.Fatal(err)
	}
	ctx := start(t, atoll.WithFaultPlan(p))
	testutil.Eventually(t, "the timed rule to fire", func() bool {
		log, err := atolltest.GetFaultLog(ctx)
		return err == nil && len(log.Timed) == 1
	})
	log, _ := atolltest.GetFaultLog(ctx)
	if e := log.Timed[0]; e.Rule != "full-store" || e.Action != faultplan.FailCreates || e.Firing != 1 || e.Err != "" {
		t.Fatalf("timed event %+v", e)
	}
	big := make([]byte, 1<<20)
	for i := range 2 {
		if _, err := atoll.Put(ctx, big); !errors.Is(err, atoll.ErrObjectStoreFull) {
			t.Fatalf("put %d: %v, want the planned ObjectStoreFull", i, err)
		}
	}
	if _, err := atoll.Put(ctx, big); err != nil {
		t.Fatalf("put after the planned failures: %v", err)
	}
}
