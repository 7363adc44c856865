//go:build simbugs

package sim_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/atoll-runtime/atoll/internal/simbugs"
	"github.com/atoll-runtime/atoll/sim"
)

// TestSeededBugs puts each bug of package simbugs into the cores in turn
// and runs seeds of the mixed workload until one fails the checker the
// bug breaks (within maxSeeds), shrinks that seed's schedule to at most
// five faults, replays the small schedule to the same hash, and prints
// the command that replays it. Build tag simbugs: make sim-bugs.
func TestSeededBugs(t *testing.T) {
	const maxSeeds = 100
	w := mustWorkload(t, "mixed")
	for _, tc := range []struct {
		bug      simbugs.Bug
		actions  []string // the faults the seeds draw from (nil: all)
		checkers []string // what the bug breaks
	}{
		{simbugs.OwnerKeepsDeadBorrowers, nil, []string{"leak"}},
		{simbugs.OwnerIgnoresBorrowers, nil, []string{"no-read-after-free"}},
		{simbugs.RayletRunsLateCopies, []string{"duplicate"}, []string{"at-most-once"}},
		{simbugs.HostIgnoresCallerOrder, []string{"delay"}, []string{"actor-order", "at-most-once"}},
		{simbugs.NoticesNotRepaired, []string{"partition", "cut", "drop"}, []string{"quiescence"}},
	} {
		t.Run(string(tc.bug), func(t *testing.T) {
			simbugs.Set(tc.bug, true)
			defer simbugs.Set(tc.bug, false)
			cfg := config(0, w)
			cfg.Faults.Actions = tc.actions
			var found *sim.Result
			for seed := uint64(1); seed <= maxSeeds && found == nil; seed++ {
				c := cfg
				c.Seed = seed
				if r := sim.Run(c, w.Run); r.Failure != nil {
					if !slices.Contains(tc.checkers, r.Failure.Checker) {
						t.Fatalf("seed %d failed %s, not %v: %v", seed, r.Failure.Checker, tc.checkers, r.Failure)
					}
					found = r
				}
			}
			if found == nil {
				t.Fatalf("not found in %d seeds", maxSeeds)
			}
			c := cfg
			c.Seed = found.Seed
			small := sim.Shrink(c, found, w.Run, nil)
			if len(small.Schedule) > 5 {
				t.Errorf("shrunk to %d faults: %s", len(small.Schedule), sim.FormatSchedule(small.Schedule))
			}
			c.Schedule = small.Schedule
			again := sim.Run(c, w.Run)
			if again.Hash != small.Hash || again.Failure == nil {
				t.Errorf("the shrunk schedule replays to %v, not %v", again, small)
			}
			prefix := fmt.Sprintf("%s=%s go run -tags simbugs ./cmd/atoll sim -workload mixed -nodes 5", simbugs.EnvBugs, tc.bug)
			if tc.actions != nil {
				prefix += " -actions " + strings.Join(tc.actions, ",")
			}
			t.Logf("found at seed %d (%s: %s), shrunk from %d to %d faults:\n  %s\n  hash %s",
				found.Seed, found.Failure.Checker, found.Failure.Message, len(found.Schedule), len(small.Schedule),
				small.Replay(prefix, false), small.Hash)
		})
	}
}
