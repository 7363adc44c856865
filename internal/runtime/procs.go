package runtime

import (
	"math"
	"os"
	goruntime "runtime"
	"sync"
	"sync/atomic"
)

// A worker process's Go scheduler runs on as many threads as the CPUs
// its work holds (Ray sets OMP_NUM_THREADS to a task's CPUs for the same
// reason). Left at Go's default, every worker process has a P per core
// of the machine: on two cores, two workers running a task each are
// four Ps, and each process's collector workers and helper goroutines
// take cores the other worker's task holds. The operating system then
// switches between the processes' threads many times a task (over a
// hundred context switches per 12 ms task of a Parquet pipeline), and
// the pipeline ran 10–15% slower than the same kernels in two
// goroutines of one process; with a P per CPU held, at the same speed.
//
// A task holds the CPUs its resources ask for (one by default; a
// fraction or none rounds up to one, so that the task runs at all); an
// actor the CPUs of its creation, for its life; a worker runs one task at
// a time, and an actor's calls share what the actor holds. GOMAXPROCS
// set in the worker's environment is the user's own policy and is left
// alone, as is an in-process worker (it shares the driver's process).
type procs struct {
	fixed bool // GOMAXPROCS set in the environment
	most  int  // the machine's CPUs
	cur   atomic.Int32
	mu    sync.Mutex // serializes changes
}

func newProcs() *procs {
	p := &procs{fixed: os.Getenv("GOMAXPROCS") != "", most: goruntime.NumCPU()}
	p.cur.Store(int32(goruntime.GOMAXPROCS(0)))
	return p
}

// procsFor is the Ps for work holding cpu CPUs: cpu rounded up, at least
// one and at most most.
func procsFor(cpu float64, most int) int {
	if math.IsNaN(cpu) || cpu < 1 {
		return 1
	}
	return int(min(math.Ceil(cpu), float64(max(most, 1))))
}

// hold sets GOMAXPROCS for work holding cpu CPUs, if it differs from the
// current setting: tasks of one shape change nothing after the first
// (a change stops the world for a moment).
func (p *procs) hold(cpu float64) {
	if p == nil || p.fixed {
		return
	}
	n := procsFor(cpu, p.most)
	if int(p.cur.Load()) == n {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if int(p.cur.Load()) != n {
		goruntime.GOMAXPROCS(n)
		p.cur.Store(int32(n))
	}
}
