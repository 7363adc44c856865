package atoll_test

import (
	"testing"

	"github.com/atoll-runtime/atoll"
	"github.com/atoll-runtime/atoll/internal/runtime"
)

// TestConstantsMatchTheRuntime: the SDK's documented constants are the
// values the runtime behind it uses.
func TestConstantsMatchTheRuntime(t *testing.T) {
	for _, c := range []struct {
		name     string
		sdk, got any
	}{
		{"EnvWorkerCPUProfile", atoll.EnvWorkerCPUProfile, runtime.EnvWorkerCPUProfile},
		{"EnvWorkerCPUProfileSeconds", atoll.EnvWorkerCPUProfileSeconds, runtime.EnvWorkerCPUProfileSeconds},
		{"EnvWorkerMemProfile", atoll.EnvWorkerMemProfile, runtime.EnvWorkerMemProfile},
		{"EnvWorkerMemProfileRate", atoll.EnvWorkerMemProfileRate, runtime.EnvWorkerMemProfileRate},
		{"EnvLogToDriver", atoll.EnvLogToDriver, runtime.EnvLogToDriver},
		{"MaxInlineTotal", atoll.MaxInlineTotal, runtime.MaxInlineTotal},
	} {
		if c.sdk != c.got {
			t.Errorf("atoll.%s = %v, the runtime uses %v", c.name, c.sdk, c.got)
		}
	}
}
