package microbench

import (
	"context"
	"math"
	"slices"
	"time"
)

// workload is one side of a metric (atoll or its baseline), set up and
// ready to run.
type workload struct {
	// op runs one operation.
	op func(ctx context.Context) error
	// units is what one op counts for: tasks, calls, puts, or gigabytes
	// (Ray's timeit multiplier).
	units float64
	// close releases what setup created (actors, refs, goroutines); nil
	// when there is nothing to release.
	close func(ctx context.Context) error
	// roundTrips: each op is one round trip (a sync task or call), timed
	// one by one in the repetitions (trips) for its percentiles.
	roundTrips bool
	trips      []time.Duration
}

func (w *workload) release(ctx context.Context) error {
	if w == nil || w.close == nil {
		return nil
	}
	return w.close(ctx)
}

// timer runs workloads Ray's way (ray_microbenchmark_helpers.timeit),
// scaled: a warm-up sets a step, then each repetition runs whole steps
// until it has lasted at least d.
type timer struct {
	d time.Duration
	// now is the clock; time.Now outside tests.
	now func() time.Time
}

// warmUp runs ops for d/2 (at least one) and returns the step: a tenth
// of the ops it ran, plus one.
func (t timer) warmUp(ctx context.Context, w *workload) (step int, err error) {
	start := t.now()
	count := 0
	for {
		if err := w.op(ctx); err != nil {
			return 0, err
		}
		count++
		if t.now().Sub(start) >= t.d/2 {
			return count/10 + 1, nil
		}
	}
}

// rate runs one repetition and returns its units per second.
func (t timer) rate(ctx context.Context, w *workload, step int) (float64, error) {
	start := t.now()
	count := 0
	for {
		for range step {
			var begin time.Time
			if w.roundTrips {
				begin = t.now()
			}
			if err := w.op(ctx); err != nil {
				return 0, err
			}
			if w.roundTrips {
				w.trips = append(w.trips, t.now().Sub(begin))
			}
		}
		count += step
		if elapsed := t.now().Sub(start); elapsed >= t.d && elapsed > 0 {
			return w.units * float64(count) / elapsed.Seconds(), nil
		}
		if err := ctx.Err(); err != nil {
			return 0, err
		}
	}
}

// summary is the statistics of one side's repetitions.
type summary struct {
	median, min, max float64
	rates            []float64
}

func summarize(rates []float64) summary {
	s := slices.Clone(rates)
	slices.Sort(s)
	med := s[len(s)/2]
	if len(s)%2 == 0 {
		med = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return summary{median: med, min: s[0], max: s[len(s)-1], rates: rates}
}

// latency is the percentiles of a workload's round trips.
type latency struct {
	p50, p99 time.Duration
	n        int
}

// latencyOf returns the 50th and 99th percentiles of trips (nearest rank;
// zero when there are none). It sorts trips.
func latencyOf(trips []time.Duration) latency {
	if len(trips) == 0 {
		return latency{}
	}
	slices.Sort(trips)
	rank := func(p float64) time.Duration {
		i := int(math.Ceil(p*float64(len(trips)))) - 1
		return trips[max(0, min(i, len(trips)-1))]
	}
	return latency{p50: rank(0.50), p99: rank(0.99), n: len(trips)}
}
