package microbench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"runtime"
	"runtime/pprof"
	"strings"
	"time"

	"github.com/atoll-runtime/atoll"
	"github.com/atoll-runtime/atoll/atolltest"
	"github.com/atoll-runtime/atoll/internal/benchfmt"
)

// Defaults of the command's flags. Sixteen metrics at five repetitions of
// at least a second, for atoll and for the baseline, plus warm-ups, take
// about 3.5 minutes on 2 cores.
const (
	DefaultRepeat   = 5
	DefaultDuration = time.Second
)

// Options configure a run.
type Options struct {
	// Mode is where tasks and actors run: worker processes (the default)
	// or goroutines of this process.
	Mode atoll.WorkerMode
	// Filter selects the metrics whose name it matches; nil runs all.
	Filter *regexp.Regexp
	// Repeat is the number of timed repetitions of each side of a metric
	// (at least 1).
	Repeat int
	// Duration is the least time of one repetition; 0 runs one step of
	// ops (at least one op).
	Duration time.Duration
	// JSON prints one benchfmt line per metric instead of a table.
	JSON bool
	// CPUProfile, if set, is where a CPU profile of this process (the
	// driver) is written, covering the selected metrics.
	CPUProfile string

	// shapes replaces Ray's workload sizes (tests use tiny ones).
	shapes *shapes
}

// DefaultOptions returns the command's defaults.
func DefaultOptions() Options {
	return Options{Mode: atoll.ProcessWorkers, Repeat: DefaultRepeat, Duration: DefaultDuration}
}

// ErrNoMetric is returned when the filter matches no metric.
var ErrNoMetric = errors.New("no metric matches the filter")

func (o Options) validate() error {
	if o.Mode != atoll.ProcessWorkers && o.Mode != atoll.InProcessWorkers {
		return fmt.Errorf("microbenchmark: unknown worker mode %d", o.Mode)
	}
	if o.Repeat < 1 {
		return fmt.Errorf("microbenchmark: -repeat %d: want at least 1", o.Repeat)
	}
	if o.Duration < 0 {
		return fmt.Errorf("microbenchmark: -duration %v: must not be negative", o.Duration)
	}
	if len(selectMetrics(o.Filter)) == 0 {
		return fmt.Errorf("microbenchmark: -filter %q: %w (metrics: %s)", o.Filter, ErrNoMetric, strings.Join(Names(), ", "))
	}
	return nil
}

// Run starts atoll's embedded cluster, runs the selected metrics and
// writes their figures to stdout (a table, or JSON lines); progress goes
// to stderr. It returns the errors of failed metrics after running the
// others.
//
// In a worker process (ATOLL_WORKER=1: the raylet re-executed this binary
// with the same arguments) Run never returns: atoll.Init serves tasks.
// So nothing is written before Init, and options are validated (without
// output) first, as the driver validated the same arguments.
func Run(ctx context.Context, opts Options, stdout, stderr io.Writer) (err error) {
	if err := opts.validate(); err != nil {
		return err
	}
	// The CLI handles SIGINT itself (its context ends, then Shutdown).
	if err := atoll.Init(ctx, atoll.WithWorkerMode(opts.Mode), atoll.WithoutSignalHandler()); err != nil {
		return fmt.Errorf("microbenchmark: start atoll: %w", err)
	}
	defer func() {
		if serr := atoll.Shutdown(context.Background()); serr != nil {
			err = errors.Join(err, fmt.Errorf("microbenchmark: shut atoll down: %w", serr))
		}
	}()
	if opts.CPUProfile != "" {
		stop, err := benchfmt.StartCPUProfile(opts.CPUProfile)
		if err != nil {
			return err
		}
		defer func() { err = errors.Join(err, stop()) }()
	}
	r := newRunner(opts, stderr)
	defer r.env.close()
	out := newReport(opts, stdout, r.config(ctx))
	var errList []error
	for _, m := range selectMetrics(opts.Filter) {
		start := time.Now()
		res, err := r.run(ctx, m)
		if err != nil {
			r.progress("%s: FAILED after %.1fs: %v", m.name, time.Since(start).Seconds(), err)
			errList = append(errList, fmt.Errorf("%s: %w", m.name, err))
			continue
		}
		r.progress("%s: %s %s, baseline %s (ratio %.3g), %.1fs", m.name, formatRate(res.atoll.median), m.unit,
			formatRate(res.base.median), res.ratio(), time.Since(start).Seconds())
		if err := out.add(res); err != nil {
			return err
		}
	}
	if err := out.flush(); err != nil {
		return err
	}
	return errors.Join(errList...)
}

// runner runs metrics one after the other.
type runner struct {
	opts   Options
	env    *env
	timer  timer
	stderr io.Writer
}

func newRunner(opts Options, stderr io.Writer) *runner {
	s := rayShapes
	if opts.shapes != nil {
		s = *opts.shapes
	}
	return &runner{opts: opts, env: &env{shapes: s, cpus: runtime.NumCPU()}, timer: timer{d: opts.Duration, now: time.Now}, stderr: stderr}
}

func (r *runner) progress(format string, args ...any) {
	fmt.Fprintf(r.stderr, "microbenchmark: "+format+"\n", args...)
}

// result is one metric's figures: atoll's and the baseline's repetitions.
type result struct {
	metric      metric
	atoll, base summary
	// atollTrips and baseTrips are the round trips' percentiles of a
	// sync metric (workload.roundTrips; zero n otherwise).
	atollTrips, baseTrips latency
	units                 float64 // units per atoll op
	shape                 map[string]any
}

func (r result) ratio() float64 {
	if r.base.median == 0 {
		return 0
	}
	return r.atoll.median / r.base.median
}

// run sets both sides of m up, warms them up, then alternates their
// repetitions.
func (r *runner) run(ctx context.Context, m metric) (res result, err error) {
	runtime.GC() // the previous metric's garbage is not this one's cost
	defer pprof.SetGoroutineLabels(ctx)
	r.progress("%s: setting up", m.name)
	actx, bctx := labelled(ctx, m, "atoll"), labelled(ctx, m, "baseline")

	pprof.SetGoroutineLabels(actx)
	aw, err := m.atoll(actx, r.env)
	if err != nil {
		return res, fmt.Errorf("set up: %w", err)
	}
	defer func() { err = errors.Join(err, aw.release(ctx)) }()
	pprof.SetGoroutineLabels(bctx)
	bw, err := m.base(bctx, r.env)
	if err != nil {
		return res, fmt.Errorf("set up the baseline: %w", err)
	}
	defer func() { err = errors.Join(err, bw.release(ctx)) }()

	bstep, err := r.timer.warmUp(bctx, bw)
	if err != nil {
		return res, fmt.Errorf("baseline: %w", err)
	}
	pprof.SetGoroutineLabels(actx)
	astep, err := r.timer.warmUp(actx, aw)
	if err != nil {
		return res, err
	}
	var arates, brates []float64
	for i := range r.opts.Repeat {
		pprof.SetGoroutineLabels(bctx)
		b, err := r.timer.rate(bctx, bw, bstep)
		if err != nil {
			return res, fmt.Errorf("baseline: %w", err)
		}
		pprof.SetGoroutineLabels(actx)
		a, err := r.timer.rate(actx, aw, astep)
		if err != nil {
			return res, err
		}
		r.progress("%s: repetition %d/%d: %s %s, baseline %s", m.name, i+1, r.opts.Repeat, formatRate(a), m.unit, formatRate(b))
		arates, brates = append(arates, a), append(brates, b)
	}
	return result{metric: m, atoll: summarize(arates), base: summarize(brates), atollTrips: latencyOf(aw.trips), baseTrips: latencyOf(bw.trips),
		units: aw.units, shape: m.shape(r.env)}, nil
}

// labelled returns ctx with profiler labels metric=m and side (atoll or
// baseline). Set on the running goroutine, they are inherited by the
// goroutines it starts (the baseline's pools, actor mailboxes woken by
// its sends), so a -cpuprofile splits by them: go tool pprof
// -tagfocus side=atoll, or -tagignore side=baseline to keep the runtime's
// own goroutines too.
func labelled(ctx context.Context, m metric, side string) context.Context {
	return pprof.WithLabels(ctx, pprof.Labels("metric", m.name, "side", side))
}

// config is what every record's config holds besides the metric's own.
func (r *runner) config(ctx context.Context) map[string]any {
	c := map[string]any{
		"worker_mode": r.opts.Mode.String(), "cpus": runtime.NumCPU(), "go": runtime.Version(),
		"repetitions": r.opts.Repeat, "statistic": "median", "min_duration_s": r.opts.Duration.Seconds(),
	}
	if st, err := atolltest.Memory(ctx); err == nil {
		c["object_store_bytes"] = st.StoreCapacity
	}
	return c
}
