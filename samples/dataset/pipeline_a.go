package main

import (
	"context"
	"fmt"
	"maps"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"

	"github.com/atoll-runtime/atoll/data"
	"github.com/atoll-runtime/atoll/data/expr"
	"github.com/atoll-runtime/atoll/internal/benchfmt"
)

// runA measures pipeline A and its baseline in turns, then A without
// pushdown (and materialized, with -materialize).
func runA(ctx context.Context, e *env) ([]benchfmt.Record, error) {
	var want, got map[int64]agg
	var ds *data.Dataset
	base, atollA, err := turns(ctx, e, "A", func() (phase, error) {
		return measure(ctx, func() error {
			var err error
			want, err = baselineA(ctx, e.files)
			return err
		})
	}, func() (phase, error) {
		p, err := measure(ctx, func() error {
			var err error
			got, ds, err = pipelineA(ctx, e.in, false, false)
			return err
		})
		p.verified = err == nil && maps.Equal(got, want) && len(want) > 0
		return p, err
	})
	if err != nil {
		return nil, err
	}
	fmt.Fprint(e.stderr, ds.Stats())
	e.progress.Phase("A atoll without pushdown: every column of every row group read")
	var noPush *data.Dataset
	np, err := measure(ctx, func() error {
		var err error
		got, noPush, err = pipelineA(ctx, e.in, false, true)
		return err
	})
	if err != nil {
		return nil, err
	}
	np.verified = maps.Equal(got, want)
	rs := []benchfmt.Record{
		e.record("a_wall_s", atollA.wall.Seconds(), "s", "single_goroutine_s", base.wall.Seconds()).WithVerified(atollA.verified),
		e.record("a_peak_pss_bytes", float64(atollA.peak), "bytes", "single_goroutine_peak_pss_bytes", float64(base.peak)),
		e.record("a_spilled_bytes", float64(atollA.spilled), "bytes", "", 0),
		e.record("a_read_bytes", float64(ds.BytesRead()), "bytes", "without_pushdown_read_bytes", float64(noPush.BytesRead())),
		e.record("a_no_pushdown_wall_s", np.wall.Seconds(), "s", "pushdown_s", atollA.wall.Seconds()).WithVerified(np.verified),
	}
	if e.opts.materialize {
		e.progress.Phase("A atoll, every stage materialized")
		mat, err := measure(ctx, func() error {
			var err error
			got, _, err = pipelineA(ctx, e.in, true, false)
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
func pipelineA(ctx context.Context, in string, materialized, noPushdown bool) (map[int64]agg, *data.Dataset, error) {
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
	ds = ds.GroupBy("key").Aggregate(data.Count(), data.Sum("score"), data.Sum("value"))
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

// baselineA is pipeline A in this goroutine: each row group's used
// columns read, scored and filtered with the same expressions (the same
// Arrow kernels), and summed per key in a Go loop.
func baselineA(ctx context.Context, files []string) (map[int64]agg, error) {
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
