package runtime

import (
	"math"
	"os"
	goruntime "runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/atoll-runtime/atoll/atollpb"
)

// A worker process busy with long tasks runs on as many Ps (GOMAXPROCS)
// as the CPUs its work holds, as Ray sets OMP_NUM_THREADS to a task's
// CPUs. Left at Go's default, every worker process has a P per core of
// the machine: on two cores, two workers running a task each are four
// Ps, and each process's collector workers and helper goroutines take
// the core the other worker's task holds. The operating system then
// switches between the processes' threads over a hundred times per 12 ms
// task of a Parquet pipeline, and the pipeline ran 10–15% slower than the
// same kernels in two goroutines of one process; with a P per CPU held,
// as fast.
//
// Short tasks are the other way round: a worker that answers round trips
// of tasks or actor calls under a millisecond each answers them 10–15%
// later on one P (sync round trips of 40 µs became 50). So the setting
// follows the length of the work: after a task or call that ran
// longTask or more, the worker runs on the CPUs it holds; after a shorter
// one, on Go's default again. A task holds the CPUs its resources ask for
// (one by default; a fraction or none rounds up to one, so that it runs
// at all); an actor's calls what its creation holds. A worker runs one
// task at a time, so the setting changes only where the length of its
// tasks does (a change stops the world for a moment). GOMAXPROCS set in
// the worker's environment is the user's own policy and is left alone,
// as is an in-process worker (it shares the driver's process: its procs
// is nil).
type procs struct {
	fixed bool // GOMAXPROCS set in the environment
	dflt  int  // Go's default for this process, the most it is set to
	cur   atomic.Int32
	mu    sync.Mutex // serializes changes
}

// longTask is the length of a task past which its worker keeps to the
// CPUs its tasks hold.
const longTask = time.Millisecond

func newProcs() *procs {
	p := &procs{fixed: os.Getenv("GOMAXPROCS") != "", dflt: goruntime.GOMAXPROCS(0)}
	p.cur.Store(int32(p.dflt))
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

// ran sets GOMAXPROCS for the work after one that held cpu CPUs and ran
// for d.
func (p *procs) ran(cpu float64, d time.Duration) {
	if p == nil || p.fixed {
		return
	}
	n := p.dflt
	if d >= longTask {
		n = procsFor(cpu, p.dflt)
	}
	p.set(n)
}

// set sets GOMAXPROCS to n if it is not n already.
func (p *procs) set(n int) {
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

// ran tells the worker's procs that spec's work, started at start, ended:
// an actor's calls hold what its creation holds.
func (wk *Worker) ran(spec *atollpb.TaskSpec, start time.Time) {
	var cpu float64
	switch spec.Type {
	case atollpb.TaskType_ACTOR_TASK:
		cpu = math.Float64frombits(wk.actorCPU.Load())
	case atollpb.TaskType_ACTOR_CREATION_TASK:
		cpu = spec.Resources["CPU"]
		wk.actorCPU.Store(math.Float64bits(cpu))
	default:
		cpu = spec.Resources["CPU"]
	}
	wk.procs.ran(cpu, time.Since(start))
}
