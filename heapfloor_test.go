package atoll_test

import (
	"context"
	"os"
	"runtime/metrics"
	"testing"

	"github.com/atoll-runtime/atoll"
)

// gogc is the GOGC in force in the process that runs it.
var gogc = atoll.NewFunc0("proc.gogc", func(context.Context) (int, error) {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	metrics.Read(s)
	return int(s[0].Value.Uint64()), nil
})

// TestWorkerHeapFloor: a worker process raises GOGC while its live heap
// is small (the default floor, 128 MiB, is many times a fresh worker's
// heap); a floor of one byte leaves Go's default.
func TestWorkerHeapFloor(t *testing.T) {
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		t.Skip("GOGC or GOMEMLIMIT set: the workers keep them, with no floor")
	}
	for _, c := range []struct {
		name  string
		opts  []atoll.Option
		check func(int) bool
		want  string
	}{
		{"default", nil, func(p int) bool { return p > 100 }, "above 100"},
		{"one byte", []atoll.Option{atoll.WithWorkerHeapFloor(1)}, func(p int) bool { return p == 100 }, "100"},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := startProcesses(t, c.opts...)
			p, err := atoll.Get(ctx, gogc.Remote(ctx))
			if err != nil {
				t.Fatal(err)
			}
			if !c.check(p) {
				t.Fatalf("a worker's GOGC is %d, want %s", p, c.want)
			}
		})
	}
}
