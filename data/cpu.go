package data

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"strings"
	"time"
)

// CPUs: a run's share of the node's CPUs (Config.CPUShare), and the
// report of a stage whose tasks wait for CPUs other work holds
// (Config.CPUWaitWarning).

// cpu is what each task of the stage holds: the resources' CPU (one by
// default); for an actor stage, what each actor holds (nothing by
// default).
func (s *stage) cpu() float64 {
	o := s.allToAll
	if len(s.ops) > 0 {
		o = s.ops[len(s.ops)-1]
	}
	if o.resources == nil {
		if o.strategy() == "actors" {
			return 0
		}
		return 1
	}
	return o.resources["CPU"]
}

// initCPU records this node's CPUs (nodeCPUs), and sets the run's CPU
// cap from Config.CPUShare and its first wave (firstWave) from the CPUs
// it may use; all are left unset where the node cannot be asked (a run
// inside a task).
func (r *run) initCPU(ctx context.Context) {
	s, err := nodeStatus(ctx)
	if err != nil {
		return
	}
	r.cpus = int(s.Total["CPU"])
	free := s.Available["CPU"]
	if r.cfg.CPUShare > 0 {
		r.cpuCap = r.cfg.CPUShare * s.Total["CPU"]
		free = min(free, r.cpuCap)
	}
	r.wave = max(1, min(maxFirstWave, int(free)))
}

// nodeCPUs is the number of CPUs of the driver's node, or a large number
// where the node cannot be asked (a dataset run inside a task).
func (r *run) nodeCPUs() int {
	if r.cpus < 1 {
		return math.MaxInt
	}
	return r.cpus
}

// firstWave is how many tasks a stream runs before the first of them
// has finished (and so before it knows what a task makes per byte of
// input): one per CPU free when the run started (within its share), at
// most maxFirstWave, and one where the node cannot be asked. Each one
// past the first starts only if firstWaveGrowth times its estimate fits
// the budget.
func (r *run) firstWave() int { return max(1, r.wave) }

const (
	maxFirstWave    = 16
	firstWaveGrowth = 4
)

// cpuFits says whether a task holding cpu more keeps the run within its
// share. Streams ask only when they already have a task running: each
// stage may always run one.
func (r *run) cpuFits(cpu float64) bool {
	if r.cpuCap <= 0 || cpu <= 0 {
		return true
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.cpuHeld+cpu <= r.cpuCap+1e-9
}

func (r *run) holdCPU(cpu float64) {
	r.mu.Lock()
	r.cpuHeld += cpu
	r.mu.Unlock()
}

func (r *run) logger() *slog.Logger {
	if r.cfg.Logger != nil {
		return r.cfg.Logger
	}
	return slog.Default()
}

// cpuWait is a stage's waits for a CPU (guarded by its subStats' mu).
type cpuWait struct {
	blockedSince time.Time // since when every check saw no CPU for it
	waiting      bool      // a wait past the threshold is under way
	waitStart    time.Time
	times        int
	total        time.Duration
	warned       bool
}

func (w *cpuWait) format(b *strings.Builder) {
	if w.times == 0 {
		return
	}
	fmt.Fprintf(b, "* Waited for a CPU held by other work: %d times, %s in all\n", w.times, secs(w.total))
}

// end closes a wait under way.
func (w *cpuWait) end(now time.Time) {
	if w.waiting {
		w.total += now.Sub(w.waitStart)
		w.waiting = false
	}
	w.blockedSince = time.Time{}
}

// threshold is how long a stage waits before it is reported (negative:
// never).
func (c Config) cpuWaitThreshold() time.Duration {
	if c.CPUWaitWarning == 0 {
		return 30 * time.Second
	}
	return c.CPUWaitWarning
}

// checkCPUWait looks at each stage of the run once (the monitor calls it
// every tick): a stage is waiting for a CPU when it has tasks pending and
// none of them finished for the threshold while, at every check, this
// node had less free CPU than one of its tasks needs, tasks queued, and
// more CPUs held than the stage's own pending tasks could hold (so
// the holders include other work). The first wait of a stage logs a
// warning naming it; every wait counts in its stats. Actor stages are
// not checked (their actors hold their CPUs; an actor that cannot start
// is not seen).
func (r *run) checkCPUWait(ctx context.Context, subs []*subStats, now time.Time) {
	threshold := r.cfg.cpuWaitThreshold()
	if threshold < 0 {
		return
	}
	st, err := nodeStatus(ctx)
	if err != nil {
		return // a worker process, or atoll stopping: nothing to say
	}
	total, avail := st.Total["CPU"], st.Available["CPU"]
	for _, s := range subs {
		s.mu.Lock()
		pending := s.submittedTasks - len(s.wall)
		w := &s.cpuWait
		// (a pool's calls run on actors that hold their CPU already)
		blocked := s.pool == nil && s.taskCPU > 0 && pending > 0 && avail < s.taskCPU && st.Queued > 0 && total-avail > float64(pending)*s.taskCPU
		if !blocked {
			w.end(now)
			s.mu.Unlock()
			continue
		}
		if w.waiting && s.progressAt.After(w.waitStart) {
			// a task finished: that wait is over
			w.total += s.progressAt.Sub(w.waitStart)
			w.waiting = false
		}
		if w.blockedSince.IsZero() {
			w.blockedSince = now
		}
		since := w.blockedSince
		if s.progressAt.After(since) {
			since = s.progressAt
		}
		warn := false
		if !w.waiting && now.Sub(since) >= threshold {
			w.waiting, w.waitStart = true, since
			w.times++
			warn = !w.warned
			w.warned = true
		}
		name := s.name
		s.mu.Unlock()
		if warn {
			r.logger().Warn(fmt.Sprintf("data: stage %s has waited %s for a CPU: all of this node's CPUs are held by other work", name, secs(now.Sub(since))),
				"stage", name, "pending_tasks", pending, "cpus_total", total, "cpus_available", avail, "queued_tasks", st.Queued)
		}
	}
}
