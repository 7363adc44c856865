package microbench

import (
	"fmt"
	"io"
	"maps"
	"math"
	"runtime"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/atoll-runtime/atoll/internal/benchfmt"
)

// bench is the "bench" field of every record.
const bench = "microbenchmark"

// report writes results: a JSON line per metric as it finishes, or a
// table at the end.
type report struct {
	opts   Options
	json   *benchfmt.Writer
	stdout io.Writer
	common map[string]any
	rows   []result
}

func newReport(opts Options, stdout io.Writer, common map[string]any) *report {
	common["atoll_version"] = benchfmt.Version()
	r := &report{opts: opts, stdout: stdout, common: common}
	if opts.JSON {
		r.json = benchfmt.NewWriter(stdout)
	}
	return r
}

// record returns res as a benchfmt record: value is atoll's median rate,
// baseline_value the baseline's.
func (r *report) record(res result) benchfmt.Record {
	c := maps.Clone(r.common)
	maps.Copy(c, res.shape)
	c["min"], c["max"] = res.atoll.min, res.atoll.max
	c["baseline_min"], c["baseline_max"] = res.base.min, res.base.max
	c["units_per_op"] = res.units
	if res.atollTrips.n > 0 {
		c["p50_us"], c["p99_us"], c["round_trips"] = micros(res.atollTrips.p50), micros(res.atollTrips.p99), res.atollTrips.n
	}
	if res.baseTrips.n > 0 {
		c["baseline_p50_us"], c["baseline_p99_us"] = micros(res.baseTrips.p50), micros(res.baseTrips.p99)
	}
	return benchfmt.NewRecord(bench, res.metric.name, res.atoll.median, res.metric.unit, res.metric.baseline, res.base.median, c)
}

func (r *report) add(res result) error {
	if r.json != nil {
		return r.json.Write(r.record(res))
	}
	r.rows = append(r.rows, res)
	return nil
}

// flush writes the table (text output only).
func (r *report) flush() error {
	if r.json != nil || len(r.rows) == 0 {
		return nil
	}
	fmt.Fprintf(r.stdout, "atoll microbenchmark (atoll %s, %s workers, %d CPUs): median of %d repetitions of >= %v each\n",
		r.common["atoll_version"], r.opts.Mode, runtime.NumCPU(), r.opts.Repeat, r.opts.Duration)
	tw := tabwriter.NewWriter(r.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "metric\tatoll\tmin\tmax\tbaseline\tratio\tunit\tbaseline kind")
	for _, res := range r.rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%.3f\t%s\t%s\n", res.metric.name,
			formatRate(res.atoll.median), formatRate(res.atoll.min), formatRate(res.atoll.max),
			formatRate(res.base.median), res.ratio(), res.metric.unit, res.metric.baseline)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, res := range r.rows {
		if res.atollTrips.n > 0 {
			fmt.Fprintf(r.stdout, "%s round trip: p50 %.1f us, p99 %.1f us (%d trips; baseline p50 %.1f us, p99 %.1f us)\n", res.metric.name,
				micros(res.atollTrips.p50), micros(res.atollTrips.p99), res.atollTrips.n, micros(res.baseTrips.p50), micros(res.baseTrips.p99))
		}
	}
	return nil
}

// micros is d in microseconds.
func micros(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

// formatRate prints a rate with thousands separators from 1,000 up, and
// with three significant digits below.
func formatRate(v float64) string {
	switch a := math.Abs(v); {
	case math.IsNaN(v) || math.IsInf(v, 0):
		return strconv.FormatFloat(v, 'g', -1, 64)
	case a >= 999.5:
		return groupThousands(int64(math.Round(v)))
	case a >= 99.95:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case a >= 9.995:
		return strconv.FormatFloat(v, 'f', 1, 64)
	case a >= 0.9995:
		return strconv.FormatFloat(v, 'f', 2, 64)
	default:
		return strconv.FormatFloat(v, 'g', 3, 64)
	}
}

func groupThousands(n int64) string {
	digits := strconv.FormatInt(n, 10)
	var b strings.Builder
	if rest, neg := strings.CutPrefix(digits, "-"); neg {
		b.WriteByte('-')
		digits = rest
	}
	for i, d := range digits {
		if i > 0 && (len(digits)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(d)
	}
	return b.String()
}
