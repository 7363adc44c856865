package main

import (
	"context"
	"fmt"
	"maps"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/atoll-runtime/atoll/data"
	"github.com/atoll-runtime/atoll/data/expr"
	"github.com/atoll-runtime/atoll/internal/benchfmt"
)

// Pipeline G: a GroupBy into about two million groups, each met in every
// row group: ReadParquet → WithColumn("g", id mod 1e6) →
// GroupBy("g").Aggregate(Count(), Sum("value")). Every map task's
// partials hold a group for most of its rows, so the partials of all the
// map tasks are several times the result, and each part is more than a
// reduce task should hold: atoll cuts the parts again while the maps
// run, and G runs again cutting them after the last map
// (Config.NoOverlap). The baseline is one goroutine adding the same
// columns into a Go map.

// groupMod makes G's groups: id mod groupMod (Go's %: negative for
// negative ids, so about twice as many groups).
const groupMod = 1_000_000

var gColumns = []string{"id", "value"}

// gAgg is one group's count and sum of value.
type gAgg struct{ Count, Sum int64 }

func runG(ctx context.Context, e *env) ([]benchfmt.Record, error) {
	var want, got, serial map[int64]gAgg
	var overlapped, plain *data.Dataset
	ps, err := turns(e, "G", contender{"baseline", func() (phase, error) {
		return measureBaseline(ctx, func() error {
			var err error
			want, err = baselineG(ctx, e.files)
			return err
		})
	}}, contender{"atoll", func() (phase, error) {
		p, err := measure(ctx, func() error {
			var err error
			got, overlapped, err = pipelineG(ctx, e.in, false)
			return err
		})
		p.verified = err == nil && maps.Equal(got, want) && len(want) > 0
		return p, err
	}}, contender{"atoll, cut after the last map", func() (phase, error) {
		p, err := measure(ctx, func() error {
			var err error
			serial, plain, err = pipelineG(ctx, e.in, true)
			return err
		})
		p.verified = err == nil && maps.Equal(serial, want) && len(want) > 0
		return p, err
	}})
	if err != nil {
		return nil, err
	}
	base, g, noOverlap := ps[0], ps[1], ps[2]
	fmt.Fprint(e.stderr, overlapped.Stats(), plain.Stats())
	groups := map[string]any{"groups": len(want)}
	return []benchfmt.Record{
		e.record("g_wall_s", g.wall.Seconds(), "s", "single_goroutine_s", base.wall.Seconds()).WithVerified(g.verified).WithConfig(groups),
		e.record("g_no_overlap_wall_s", noOverlap.wall.Seconds(), "s", "overlap_s", g.wall.Seconds()).WithVerified(noOverlap.verified),
		e.record("g_peak_pss_bytes", float64(g.peak), "bytes", "single_goroutine_peak_pss_bytes", float64(base.peak)),
		e.record("g_no_overlap_peak_pss_bytes", float64(noOverlap.peak), "bytes", "overlap_peak_pss_bytes", float64(g.peak)),
		e.record("g_spilled_bytes", float64(g.spilled), "bytes", "no_overlap_spilled_bytes", float64(noOverlap.spilled)),
	}, nil
}

// pipelineG runs G on atoll, cutting its parts while the maps run
// unless noOverlap.
func pipelineG(ctx context.Context, in string, noOverlap bool) (map[int64]gAgg, *data.Dataset, error) {
	cfg := data.DefaultConfig()
	cfg.NoOverlap = noOverlap
	ds := data.ReadParquet(in).WithConfig(cfg).WithColumn("g", expr.Col("id").Mod(groupMod)).
		GroupBy("g").Aggregate(data.Count(), data.Sum("value"))
	out := map[int64]gAgg{}
	for rec, err := range ds.IterBatches(ctx, 0) {
		if err != nil {
			return nil, nil, err
		}
		gs, err := column[*array.Int64](rec, "g")
		if err != nil {
			return nil, nil, err
		}
		cs, err := column[*array.Int64](rec, "count()")
		if err != nil {
			return nil, nil, err
		}
		ss, err := column[*array.Int64](rec, "sum(value)")
		if err != nil {
			return nil, nil, err
		}
		for i := range gs.Len() {
			k := gs.Value(i)
			if _, dup := out[k]; dup {
				return nil, nil, fmt.Errorf("group %d in two output rows", k)
			}
			out[k] = gAgg{Count: cs.Value(i), Sum: ss.Value(i)}
		}
	}
	return out, ds, nil
}

// baselineG is G in this goroutine: each row group's two columns read,
// and added into a Go map by id mod groupMod.
func baselineG(ctx context.Context, files []string) (map[int64]gAgg, error) {
	out := map[int64]gAgg{}
	err := eachRowGroup(ctx, files, gColumns, func(rec arrow.RecordBatch) error {
		ids, err := column[*array.Int64](rec, "id")
		if err != nil {
			return err
		}
		vs, err := column[*array.Int64](rec, "value")
		if err != nil {
			return err
		}
		vv := vs.Int64Values()
		for i, id := range ids.Int64Values() {
			a := out[id%groupMod]
			a.Count++
			a.Sum += vv[i]
			out[id%groupMod] = a
		}
		return nil
	})
	return out, err
}
