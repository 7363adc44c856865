package sim

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"text/tabwriter"
	"time"
)

// Seeds runs cfg's workload on count seeds from first, parallel runs at a
// time (each run is one goroutine at a time; runs share nothing), and
// calls report (if set) with each result as it comes, from one goroutine
// at a time. It returns the results in seed order.
func Seeds(cfg Config, first uint64, count, parallel int, w Workload, report func(*Result)) []*Result {
	if parallel <= 0 {
		parallel = 1
	}
	out := make([]*Result, count)
	seeds := make(chan int)
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := 0; i < parallel; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range seeds {
				c := cfg
				c.Seed = first + uint64(i)
				res := Run(c, w)
				mu.Lock()
				out[i] = res
				if report != nil {
					report(res)
				}
				mu.Unlock()
			}
		}()
	}
	for i := 0; i < count; i++ {
		seeds <- i
	}
	close(seeds)
	wg.Wait()
	return out
}

// Shrink removes faults from the schedule of a failing run while the run
// still fails the same checker, one at a time (the last first), until
// removing any of them makes it pass; then it tries shorter durations
// and lower counts. It returns the smallest failing run found (res itself
// if nothing can go). progress, if set, sees each run it tries.
func Shrink(cfg Config, res *Result, w Workload, progress func(*Result)) *Result {
	if res.Failure == nil {
		return res
	}
	best := res
	try := func(s []Fault) bool {
		c := cfg
		c.Seed, c.Schedule, c.NoFaults = res.Seed, append([]Fault{}, s...), false
		r := Run(c, w)
		if progress != nil {
			progress(r)
		}
		if r.Failure != nil && r.Failure.Checker == res.Failure.Checker {
			best = r
			return true
		}
		return false
	}
	for changed := true; changed; {
		changed = false
		s := best.Schedule
		for i := len(s) - 1; i >= 0; i-- {
			cand := append(append([]Fault{}, s[:i]...), s[i+1:]...)
			if try(cand) {
				changed = true
				break
			}
		}
	}
	// Simpler faults: halve durations and counts while it still fails.
	for i := range best.Schedule {
		for {
			f := best.Schedule[i]
			g := f
			switch {
			case f.For > 100*time.Millisecond:
				g.For = (f.For / 2).Truncate(time.Millisecond)
			case f.Count > 1:
				g.Count = f.Count / 2
			default:
				g = f
			}
			if g.String() == f.String() {
				break
			}
			cand := append([]Fault{}, best.Schedule...)
			cand[i] = g
			if !try(cand) {
				break
			}
		}
	}
	return best
}

// Replay is the command that runs res again, exactly: prefix is the
// command that runs its workload (e.g. "atoll sim -workload mixed"); the
// seed and the schedule (unless it is the seed's own) follow as flags.
func (r *Result) Replay(prefix string, generated bool) string {
	s := fmt.Sprintf("%s -seed %d", prefix, r.Seed)
	switch {
	case generated:
	case len(r.Schedule) == 0:
		if !strings.Contains(prefix, "-no-faults") {
			s += " -no-faults"
		}
	default:
		s += fmt.Sprintf(" -schedule '%s'", FormatSchedule(r.Schedule))
	}
	return s
}

// Table prints results as a table: one row per seed (failures, and the
// passing ones too if all), then the totals.
func Table(out io.Writer, results []*Result, all bool) {
	tw := tabwriter.NewWriter(out, 0, 2, 2, ' ', 0)
	fmt.Fprintln(tw, "seed\tfaults\tverdict\tevents\tsim\twall\thash")
	var pass, fail int
	var simT, wallT time.Duration
	for _, r := range results {
		if r == nil {
			continue
		}
		simT += r.SimTime
		wallT += r.Wall
		verdict := "PASS"
		if r.Failure != nil {
			fail++
			verdict = "FAIL " + r.Failure.Checker
		} else {
			pass++
		}
		if all || r.Failure != nil {
			fmt.Fprintf(tw, "%d\t%d\t%s\t%d\t%v\t%v\t%s\n", r.Seed, len(r.Schedule), verdict, r.Events, r.SimTime.Round(time.Millisecond),
				r.Wall.Round(time.Millisecond), r.Hash)
		}
	}
	_ = tw.Flush()
	fmt.Fprintf(out, "%d seeds: %d passed, %d failed; simulated %v in %v of run time (%.0fx)\n", pass+fail, pass, fail,
		simT.Round(time.Second), wallT.Round(time.Millisecond), float64(simT)/float64(max(wallT, 1)))
}

// FaultCounts counts the faults of results by action.
func FaultCounts(results []*Result) string {
	n := map[string]int{}
	for _, r := range results {
		if r == nil {
			continue
		}
		for _, f := range r.Schedule {
			n[f.Action]++
		}
	}
	keys := make([]string, 0, len(n))
	for k := range n {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s %d", k, n[k]))
	}
	return strings.Join(parts, ", ")
}
