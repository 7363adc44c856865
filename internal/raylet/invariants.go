package raylet

import "fmt"

// checkAdmission verifies, in builds with invariants on, the admission
// rule at the moment a task starts: it may add argument bytes beyond the
// cap only when running tasks held none (a task whose arguments alone
// exceed the cap must be able to run).
func (c *Core) checkAdmission(before, more uint64) {
	if !invariantsEnabled {
		return
	}
	if limit := c.argsCap(); limit > 0 && more > 0 && before > 0 && before+more > limit {
		panic(fmt.Sprintf("raylet: admission invariant: a task added %d argument bytes to %d held, over the cap of %d", more, before, limit))
	}
}
