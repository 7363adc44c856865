package benchfmt

import (
	"sync/atomic"
	"testing"
)

// TestParallelFor: every index runs exactly once, whatever the number of
// goroutines (none asked for still runs them, on one).
func TestParallelFor(t *testing.T) {
	for _, w := range []int{0, 1, 3, 16} {
		for _, n := range []int{0, 1, 7, 100} {
			seen := make([]atomic.Int32, n)
			ParallelFor(w, n, func(i int) { seen[i].Add(1) })
			for i := range seen {
				if c := seen[i].Load(); c != 1 {
					t.Errorf("w=%d n=%d: index %d ran %d times", w, n, i, c)
				}
			}
		}
	}
}
