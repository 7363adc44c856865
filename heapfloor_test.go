package atoll_test

import (
	"context"
	"os"
	goruntime "runtime"
	"runtime/metrics"
	"testing"

	"github.com/atoll-runtime/atoll"
	"github.com/atoll-runtime/atoll/internal/gcfloor"
)

// heapGoal is the heap goal of the process that runs it, after a
// collection.
var heapGoal = atoll.NewFunc0("proc.heapGoal", func(context.Context) (uint64, error) {
	goruntime.GC()
	s := []metrics.Sample{{Name: "/gc/heap/goal:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64(), nil
})

// TestWorkerHeapFloor: a worker process's heap goal is at least three
// times its floor (twice the floor in ballast, at GOGC 50: 24 MiB by
// default, where a fresh worker's own heap makes a goal of a few MiB); a
// floor of one byte leaves Go's default.
func TestWorkerHeapFloor(t *testing.T) {
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		t.Skip("GOGC or GOMEMLIMIT set: the workers keep them, with no floor")
	}
	for _, c := range []struct {
		name  string
		opts  []atoll.Option
		check func(uint64) bool
		want  string
	}{
		{"default", nil, func(g uint64) bool { return g >= 3*gcfloor.DefaultFloor }, "three times the default floor at least"},
		{"one byte", []atoll.Option{atoll.WithWorkerHeapFloor(1)}, func(g uint64) bool { return g < 3*gcfloor.DefaultFloor }, "under the default floor's goal"},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := startProcesses(t, c.opts...)
			g, err := atoll.Get(ctx, heapGoal.Remote(ctx))
			if err != nil {
				t.Fatal(err)
			}
			if !c.check(g) {
				t.Fatalf("a worker's heap goal is %d bytes, want %s", g, c.want)
			}
		})
	}
}
