package sim_test

import (
	"bytes"
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/atoll-runtime/atoll"
	"github.com/atoll-runtime/atoll/sim"
)

// program is a main written against the SDK, unchanged: a task, an
// actor's calls, a put passed to a task.
func program(t *testing.T, cfg sim.Config) string {
	t.Helper()
	var report bytes.Buffer
	cfg.Report = &report
	ctx := context.Background()
	if err := atoll.Init(ctx, atoll.WithSimulation(cfg)); err != nil {
		t.Fatalf("Init: %v", err)
	}
	v, err := atoll.Get(ctx, square.Remote(ctx, atoll.Value(9)))
	if err != nil || v != 81 {
		t.Errorf("square(9) = %v, %v", v, err)
	}
	big, err := atoll.Put(ctx, bytes.Repeat([]byte{3}, 1<<20))
	if err != nil {
		t.Fatalf("Put: %v", err)
	}
	n, err := atoll.Get(ctx, byteSum.Remote(ctx, big))
	if err != nil || n != 3<<20 {
		t.Errorf("byteSum = %v, %v", n, err)
	}
	big.Release()
	if err := atoll.Shutdown(ctx); err != nil {
		t.Errorf("Shutdown: %v\n%s", err, report.String())
	}
	return report.String()
}

var byteSum = atoll.NewFunc1("sim_test.byteSum", func(_ context.Context, b []byte) (int, error) {
	s := 0
	for _, x := range b {
		s += int(x)
	}
	return s, nil
})

// TestProgram runs a program on a simulated cluster with
// atoll.WithSimulation, twice: the same seed gives the same run.
func TestProgram(t *testing.T) {
	cfg := sim.Config{Seed: 11, Nodes: 3}
	a := program(t, cfg)
	b := program(t, cfg)
	hash := regexp.MustCompile(`hash [0-9a-f]+`)
	if !strings.Contains(a, "seed 11: PASS") || hash.FindString(a) == "" || hash.FindString(a) != hash.FindString(b) {
		t.Errorf("runs:\n%s\n%s", a, b)
	}
	t.Log(a)
}
