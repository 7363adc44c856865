package sim_test

import (
	"testing"

	"github.com/atoll-runtime/atoll/sim"
)

// BenchmarkMixedSeed runs one seed of the mixed workload per iteration,
// seeds 1, 2, ...
func BenchmarkMixedSeed(b *testing.B) {
	w := mustWorkload(b, "mixed")
	for i := 0; i < b.N; i++ {
		res := sim.Run(config(uint64(i+1), w), w.Run)
		if res.Failure != nil {
			b.Fatal(res)
		}
		b.ReportMetric(float64(res.Events), "events/seed")
	}
}
