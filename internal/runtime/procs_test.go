package runtime

import (
	"math"
	goruntime "runtime"
	"testing"
)

func TestProcsFor(t *testing.T) {
	for _, c := range []struct {
		cpu  float64
		most int
		want int
	}{
		{0, 8, 1}, {-1, 8, 1}, {math.NaN(), 8, 1}, {0.25, 8, 1}, {1, 8, 1},
		{1.5, 8, 2}, {4, 8, 4}, {16, 8, 8}, {math.Inf(1), 8, 8}, {3, 0, 1},
	} {
		if got := procsFor(c.cpu, c.most); got != c.want {
			t.Errorf("procsFor(%v, %d) = %d, want %d", c.cpu, c.most, got, c.want)
		}
	}
}

// TestProcsKeepsTheEnvironments: GOMAXPROCS set in the environment is left
// alone; a nil procs (an in-process worker) changes nothing.
func TestProcsKeepsTheEnvironments(t *testing.T) {
	before := goruntime.GOMAXPROCS(0)
	t.Cleanup(func() { goruntime.GOMAXPROCS(before) })
	t.Setenv("GOMAXPROCS", "3")
	p := newProcs()
	p.hold(1)
	p.hold(64)
	var none *procs
	none.hold(1)
	if got := goruntime.GOMAXPROCS(0); got != before {
		t.Fatalf("GOMAXPROCS is %d, want %d left as it was", got, before)
	}
}

// TestProcsHold: hold sets GOMAXPROCS to the CPUs held, and back.
func TestProcsHold(t *testing.T) {
	if goruntime.NumCPU() < 2 {
		t.Skip("one CPU")
	}
	before := goruntime.GOMAXPROCS(0)
	t.Cleanup(func() { goruntime.GOMAXPROCS(before) })
	t.Setenv("GOMAXPROCS", "")
	p := newProcs()
	for _, cpu := range []float64{1, 2, 0, 2} {
		p.hold(cpu)
		if got, want := goruntime.GOMAXPROCS(0), procsFor(cpu, goruntime.NumCPU()); got != want {
			t.Fatalf("after hold(%v): GOMAXPROCS %d, want %d", cpu, got, want)
		}
	}
}
