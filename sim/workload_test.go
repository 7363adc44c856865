package sim_test

import (
	"testing"

	"github.com/atoll-runtime/atoll/sim"
	"github.com/atoll-runtime/atoll/sim/workloads"
)

// config is the configuration of the stock workload w on five nodes.
func config(seed uint64, w workloads.Workload) sim.Config {
	return sim.Config{Seed: seed, Nodes: 5, Checkers: w.Checkers, Released: w.Released}
}

func mustWorkload(t testing.TB, name string) workloads.Workload {
	t.Helper()
	w, ok := workloads.ByName(name)
	if !ok {
		t.Fatalf("no workload %q", name)
	}
	return w
}

func report(t *testing.T, res *sim.Result) {
	t.Helper()
	if res.Failure == nil {
		return
	}
	for _, l := range res.Tail[max(0, len(res.Tail)-80):] {
		t.Log(l)
	}
	t.Fatalf("%v\nschedule: %s", res, sim.FormatSchedule(res.Schedule))
}

func TestMixedNoFaults(t *testing.T) {
	w := mustWorkload(t, "mixed")
	cfg := config(3, w)
	cfg.NoFaults = true
	res := sim.Run(cfg, w.Run)
	report(t, res)
	if res.WorkloadErr != nil {
		t.Fatalf("workload: %v", res.WorkloadErr)
	}
	if res.Stats.Spilled == 0 {
		t.Errorf("nothing spilled: %+v", res.Stats)
	}
	t.Log(res, res.Stats)
}

func TestKVNoFaults(t *testing.T) {
	w := mustWorkload(t, "kv")
	cfg := config(1, w)
	cfg.NoFaults = true
	res := sim.Run(cfg, w.Run)
	report(t, res)
	t.Log(res)
}

// TestMixedSeeds runs the first ten seeds of the mixed workload (with the
// race detector, under make test); make sim runs a hundred without it.
func TestMixedSeeds(t *testing.T) {
	w := mustWorkload(t, "mixed")
	for seed := uint64(1); seed <= 10; seed++ {
		res := sim.Run(config(seed, w), w.Run)
		t.Log(res)
		report(t, res)
	}
}

// TestDeterminism runs 8 seeds twice: each run's event log hash must be
// the same both times.
func TestDeterminism(t *testing.T) {
	w := mustWorkload(t, "mixed")
	for seed := uint64(1); seed <= 8; seed++ {
		a := sim.Run(config(seed, w), w.Run)
		b := sim.Run(config(seed, w), w.Run)
		if a.Hash != b.Hash || a.Events != b.Events {
			t.Errorf("seed %d: %v then %v", seed, a, b)
		}
	}
}
