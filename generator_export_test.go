package atoll

import "github.com/atoll-runtime/atoll/internal/owner"

// GeneratorCountsForTest reports how many items g's task has reported to
// the owner and how many the caller took.
func GeneratorCountsForTest[R any](g *ObjectRefGenerator[R]) (reported, taken int) {
	g.rt.owner.do(func(t *owner.Table) { reported, taken = t.GeneratorCounts(g.task) })
	return reported, taken
}

// GeneratorStreamsForTest is the number of generator streams the running
// driver's owner table holds.
func GeneratorStreamsForTest() int {
	rt := current()
	if rt == nil {
		return 0
	}
	n := 0
	rt.owner.do(func(t *owner.Table) { n = t.Stats().Generators })
	return n
}
