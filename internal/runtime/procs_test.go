package runtime

import (
	"math"
	goruntime "runtime"
	"testing"
	"time"
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
	p.ran(1, time.Second)
	p.ran(64, time.Second)
	var none *procs
	none.ran(1, time.Second)
	if got := goruntime.GOMAXPROCS(0); got != before {
		t.Fatalf("GOMAXPROCS is %d, want %d left as it was", got, before)
	}
}

// TestProcsFollowTheTasks: after a long task GOMAXPROCS is the CPUs it
// held; after a short one, Go's default again.
func TestProcsFollowTheTasks(t *testing.T) {
	before := goruntime.GOMAXPROCS(0)
	t.Cleanup(func() { goruntime.GOMAXPROCS(before) })
	t.Setenv("GOMAXPROCS", "")
	p := newProcs()
	for _, c := range []struct {
		cpu  float64
		d    time.Duration
		want int
	}{
		{1, longTask, 1},
		{1, longTask - 1, before},
		{0.5, time.Second, 1},
		{2, time.Second, min(2, before)},
		{0, 0, before},
	} {
		p.ran(c.cpu, c.d)
		if got := goruntime.GOMAXPROCS(0); got != c.want {
			t.Fatalf("after a task of %v CPUs that ran %v: GOMAXPROCS %d, want %d", c.cpu, c.d, got, c.want)
		}
	}
}
