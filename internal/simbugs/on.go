//go:build simbugs

package simbugs

import (
	"os"
	"strings"
	"sync/atomic"
)

// Built reports whether the binary has the bugs (the simbugs tag).
const Built = true

var on atomic.Pointer[map[Bug]bool]

func init() {
	m := map[Bug]bool{}
	for _, b := range strings.Split(os.Getenv(EnvBugs), ",") {
		if b = strings.TrimSpace(b); b != "" {
			m[Bug(b)] = true
		}
	}
	on.Store(&m)
}

// On reports whether bug b is on.
func On(b Bug) bool { return (*on.Load())[b] }

// Set turns bug b on or off (for tests; not while a run reads it).
func Set(b Bug, v bool) {
	m := map[Bug]bool{}
	for k, x := range *on.Load() {
		m[k] = x
	}
	m[b] = v
	on.Store(&m)
}
