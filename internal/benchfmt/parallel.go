package benchfmt

import (
	"sync"
	"sync/atomic"
)

// ParallelFor runs f(0), ..., f(n-1) on w goroutines (at least one), each
// taking the next index until none is left, and returns when every call
// has: the loop of a baseline that uses every core the way a Go program
// without atoll would.
func ParallelFor(w, n int, f func(i int)) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range max(w, 1) {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
				f(i)
			}
		})
	}
	wg.Wait()
}
