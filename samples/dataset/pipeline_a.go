package main

import (
	"context"
	"errors"
	"fmt"
	"maps"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"

	"github.com/atoll-runtime/atoll/data"
	"github.com/atoll-runtime/atoll/data/expr"
	"github.com/atoll-runtime/atoll/internal/benchfmt"
)

// runA measures pipeline A and its baselines (one goroutine, and one
// goroutine per worker slot) in turns, then A without pushdown (and
// materialized, with -materialize).
func runA(ctx context.Context, e *env) ([]benchfmt.Record, error) {
	var want, got, par map[int64]agg
	var ds *data.Dataset
	workers := max(e.opts.workers, 1)
	ps, err := turns(e, "A", contender{"baseline", func() (phase, error) {
		return measureBaseline(ctx, func() error {
			var err error
			want, err = baselineA(ctx, e.files)
			return err
		})
	}}, contender{fmt.Sprintf("baseline in %d goroutines", workers), func() (phase, error) {
		p, err := measureBaseline(ctx, func() error {
			var err error
			par, err = parallelBaselineA(ctx, e.files, workers)
			return err
		})
		p.verified = err == nil && maps.Equal(par, want) && len(want) > 0
		return p, err
	}}, contender{"atoll", func() (phase, error) {
		p, err := measure(ctx, func() error {
			var err error
			got, ds, err = pipelineA(ctx, e.in, e.opts.aggPartitions, false, false)
			return err
		})
		p.verified = err == nil && maps.Equal(got, want) && len(want) > 0
		return p, err
	}})
	if err != nil {
		return nil, err
	}
	base, parallel, atollA := ps[0], ps[1], ps[2]
	fmt.Fprint(e.stderr, ds.Stats())
	e.progress.Phase("A atoll without pushdown: every column of every row group read")
	var noPush *data.Dataset
	np, err := measure(ctx, func() error {
		var err error
		got, noPush, err = pipelineA(ctx, e.in, e.opts.aggPartitions, false, true)
		return err
	})
	if err != nil {
		return nil, err
	}
	np.verified = maps.Equal(got, want)
	rs := []benchfmt.Record{
		e.record("a_wall_s", atollA.wall.Seconds(), "s", "single_goroutine_s", base.wall.Seconds()).WithVerified(atollA.verified),
		e.record("a_wall_s_vs_parallel", atollA.wall.Seconds(), "s", "parallel_goroutines_s", parallel.wall.Seconds()).
			WithVerified(atollA.verified && parallel.verified).WithConfig(map[string]any{"baseline_goroutines": workers}),
		e.record("a_peak_pss_bytes", float64(atollA.peak), "bytes", "single_goroutine_peak_pss_bytes", float64(base.peak)),
		e.record("a_spilled_bytes", float64(atollA.spilled), "bytes", "", 0),
		e.record("a_read_bytes", float64(ds.BytesRead()), "bytes", "without_pushdown_read_bytes", float64(noPush.BytesRead())),
		e.record("a_no_pushdown_wall_s", np.wall.Seconds(), "s", "pushdown_s", atollA.wall.Seconds()).WithVerified(np.verified),
	}
	if e.opts.materialize {
		e.progress.Phase("A atoll, every stage materialized")
		mat, err := measure(ctx, func() error {
			var err error
			got, _, err = pipelineA(ctx, e.in, e.opts.aggPartitions, true, false)
			return err
		})
		if err != nil {
			return nil, err
		}
		mat.verified = maps.Equal(got, want)
		rs = append(rs,
			e.record("a_materialized_wall_s", mat.wall.Seconds(), "s", "streaming_s", atollA.wall.Seconds()).WithVerified(mat.verified),
			e.record("a_materialized_peak_pss_bytes", float64(mat.peak), "bytes", "streaming_peak_pss_bytes", float64(atollA.peak)),
			e.record("a_materialized_spilled_bytes", float64(mat.spilled), "bytes", "streaming_spilled_bytes", float64(atollA.spilled)))
	}
	return rs, nil
}

// pipelineA runs A on atoll; materialized runs every stage to the end
// (Materialize) before the next starts; noPushdown reads every column
// of every row group.
func pipelineA(ctx context.Context, in string, aggParts int, materialized, noPushdown bool) (map[int64]agg, *data.Dataset, error) {
	cfg := data.DefaultConfig()
	cfg.NoPushdown = noPushdown
	step := func(ds *data.Dataset) (*data.Dataset, error) {
		if !materialized {
			return ds, nil
		}
		return ds.Materialize(ctx)
	}
	ds, err := step(data.ReadParquet(in).WithConfig(cfg))
	if err != nil {
		return nil, nil, err
	}
	if ds, err = step(ds.WithColumn("score", score)); err != nil {
		return nil, nil, err
	}
	if ds, err = step(ds.Filter(keep)); err != nil {
		return nil, nil, err
	}
	g := ds.GroupBy("key")
	if aggParts > 0 {
		g = g.NumPartitions(aggParts)
	}
	ds = g.Aggregate(data.Count(), data.Sum("score"), data.Sum("value"))
	totals := map[int64]agg{}
	for rec, err := range ds.IterBatches(ctx, 0) {
		if err != nil {
			return nil, nil, err
		}
		if err := collectGroups(totals, rec); err != nil {
			return nil, nil, err
		}
	}
	return totals, ds, nil
}

// parallelBaselineA is baselineA in w goroutines, the way a Go program
// without atoll would use this machine's cores: each takes the next
// file, runs baselineA's steps on its row groups into totals of its own,
// and the totals are added up at the end.
func parallelBaselineA(ctx context.Context, files []string, w int) (map[int64]agg, error) {
	parts := make([]map[int64]agg, len(files))
	errs := make([]error, len(files))
	benchfmt.ParallelFor(w, len(files), func(i int) {
		parts[i], errs[i] = baselineA(ctx, files[i:i+1])
	})
	out := map[int64]agg{}
	for _, part := range parts {
		for k, a := range part {
			t := out[k]
			t.Count, t.SumScore, t.SumValue = t.Count+a.Count, t.SumScore+a.SumScore, t.SumValue+a.SumValue
			out[k] = t
		}
	}
	return out, errors.Join(errs...)
}

// baselineA is pipeline A in this goroutine: each row group's used
// columns read, scored and filtered with the same expressions (the same
// Arrow kernels), and summed per key in a Go loop.
func baselineA(ctx context.Context, files []string) (map[int64]agg, error) {
	ctx = compute.WithAllocator(ctx, data.Allocator()) // the memory atoll's tasks use
	var totals [keys]agg
	var scoreB, keepB *expr.Bound
	err := eachRowGroup(ctx, files, usedColumns, func(rec arrow.RecordBatch) error {
		if scoreB == nil || !scoreB.Schema().Equal(rec.Schema()) {
			var err error
			if scoreB, err = score.Bind(rec.Schema()); err != nil {
				return err
			}
		}
		sc, err := scoreB.Eval(ctx, rec)
		if err != nil {
			return err
		}
		scored := array.NewRecordBatch(arrow.NewSchema(append(rec.Schema().Fields(), arrow.Field{Name: "score", Type: sc.DataType()}), nil),
			append(rec.Columns(), sc), rec.NumRows())
		sc.Release()
		defer scored.Release()
		if keepB == nil || !keepB.Schema().Equal(scored.Schema()) {
			if keepB, err = keep.Bind(scored.Schema()); err != nil {
				return err
			}
		}
		mask, err := keepB.Eval(ctx, scored)
		if err != nil {
			return err
		}
		defer mask.Release()
		kept, err := compute.FilterRecordBatch(ctx, scored, mask, compute.DefaultFilterOptions())
		if err != nil {
			return err
		}
		defer kept.Release()
		return sumByKey(&totals, kept)
	})
	out := map[int64]agg{}
	for k, a := range totals {
		if a.Count > 0 {
			out[int64(k)] = a
		}
	}
	return out, err
}
