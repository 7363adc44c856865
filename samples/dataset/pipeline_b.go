package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/atoll-runtime/atoll/data"
	"github.com/atoll-runtime/atoll/internal/benchfmt"
)

// runB measures pipeline B (a sort written to Parquet) and, up to
// -baseline-max, the in-memory baseline.
func runB(ctx context.Context, e *env) ([]benchfmt.Record, error) {
	out, baseOut := filepath.Join(e.dir, "sorted"), filepath.Join(e.dir, "baseline-sorted")
	for _, d := range []string{out, baseOut} {
		if err := os.RemoveAll(d); err != nil {
			return nil, err
		}
	}
	var base phase
	if e.opts.genSize <= e.opts.baselineMax {
		e.progress.Phase("B baseline: read everything, sort by id, write, one goroutine")
		var err error
		if base, err = measureBaseline(ctx, func() error { return baselineB(ctx, e.files, baseOut) }); err != nil {
			return nil, err
		}
		if base.verified, err = checkSorted(ctx, baseOut, e.input); err != nil {
			return nil, err
		}
		if err := os.RemoveAll(baseOut); err != nil {
			return nil, err
		}
		if !base.verified {
			return nil, fmt.Errorf("dataset: the baseline sort's output is not the sorted input")
		}
	}
	e.progress.Phase("B atoll: ReadParquet -> Sort(id) -> WriteParquet")
	var stats string
	b, err := measure(ctx, func() error {
		ds := data.ReadParquet(e.in).Sort("id")
		err := ds.WriteParquet(ctx, out)
		stats = ds.Stats()
		return err
	})
	if err != nil {
		return nil, err
	}
	fmt.Fprint(e.stderr, stats)
	e.progress.Phase("B verify: read the sorted files back")
	if b.verified, err = checkSorted(ctx, out, e.input); err != nil {
		return nil, err
	}
	return []benchfmt.Record{
		e.record("b_wall_s", b.wall.Seconds(), "s", "single_goroutine_in_memory_s", base.wall.Seconds()).WithVerified(b.verified),
		e.record("b_peak_pss_bytes", float64(b.peak), "bytes", "single_goroutine_peak_pss_bytes", float64(base.peak)),
		e.record("b_spilled_bytes", float64(b.spilled), "bytes", "", 0),
		e.record("b_restored_bytes", float64(b.restored), "bytes", "", 0),
	}, nil
}

// baselineB reads every file into memory, sorts the rows by id with the
// kernels data.Sort uses (SortIndices, Take) and writes one Parquet file.
func baselineB(ctx context.Context, files []string, out string) error {
	var recs []arrow.RecordBatch
	defer func() {
		for _, r := range recs {
			r.Release()
		}
	}()
	if err := eachRowGroup(ctx, files, nil, func(rec arrow.RecordBatch) error {
		rec.Retain()
		recs = append(recs, rec)
		return nil
	}); err != nil {
		return err
	}
	cols := make([]arrow.Array, len(inputSchema.Fields()))
	var rows int64
	for j := range cols {
		parts := make([]arrow.Array, len(recs))
		for i, r := range recs {
			parts[i] = r.Column(j)
		}
		c, err := array.Concatenate(parts, data.Allocator())
		if err != nil {
			return err
		}
		cols[j], rows = c, int64(c.Len())
	}
	for _, r := range recs {
		r.Release()
	}
	recs = nil
	all := array.NewRecordBatch(inputSchema, cols, rows)
	for _, c := range cols {
		c.Release()
	}
	defer all.Release()
	key := compute.DefaultSortKey()
	key.ColumnIndex = 0
	order, err := compute.SortIndicesRecordBatch(ctx, all, []compute.SortKey{key})
	if err != nil {
		return err
	}
	defer order.Release()
	sorted := make([]arrow.Array, all.NumCols())
	for j := range sorted {
		if sorted[j], err = compute.TakeArray(ctx, all.Column(j), order); err != nil {
			return err
		}
		defer sorted[j].Release()
	}
	srec := array.NewRecordBatch(inputSchema, sorted, rows)
	defer srec.Release()
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	f, err := os.Create(filepath.Join(out, "part-00000.parquet"))
	if err != nil {
		return err
	}
	defer f.Close()
	// the properties WriteParquet writes with (the same encoder)
	fw, err := pqarrow.NewFileWriter(inputSchema, struct{ io.Writer }{f}, data.ParquetWriterProperties(), pqarrow.DefaultWriterProps())
	if err != nil {
		return err
	}
	if err := fw.Write(srec); err != nil {
		_ = fw.Close()
		return err
	}
	if err := fw.Close(); err != nil {
		return err
	}
	return f.Close()
}

// checkSorted reads dir's Parquet files in name order and reports
// whether ids ascend across them and the rows are exactly want's.
func checkSorted(ctx context.Context, dir string, want digest) (bool, error) {
	files, err := parquetFiles(dir)
	if err != nil {
		return false, err
	}
	var got digest
	var prev int64
	first, sorted := true, true
	err = eachRowGroup(ctx, files, nil, func(rec arrow.RecordBatch) error {
		if rec.NumRows() == 0 {
			return nil
		}
		d, last, ok, err := summarize(rec, prev, first)
		if err != nil {
			return err
		}
		got.add(d)
		prev, first, sorted = last, false, sorted && ok
		return nil
	})
	if err != nil {
		return false, err
	}
	return sorted && got == want, nil
}
