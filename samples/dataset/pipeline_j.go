package main

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/atoll-runtime/atoll/data"
	"github.com/atoll-runtime/atoll/internal/benchfmt"
)

// Pipeline J: the generated table as a fact table, joined with a
// dimension table on value = dim_id, grouped by the dimension's
// category. The dimension has a row per value in [0, maxValue): dim_id,
// category (one of categories, as text) and weight (in [0, 7)), about
// 20 MiB in memory. Per category: the joined rows, the sum of weight,
// and the sum of the fact rows' random ids (wrapping: an order-free
// checksum of which rows were joined into the category), so the totals
// check the join row for row.

const categories = 100

var dimSchema = arrow.NewSchema([]arrow.Field{
	{Name: "dim_id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "category", Type: arrow.BinaryTypes.String},
	{Name: "weight", Type: arrow.PrimitiveTypes.Int64},
}, nil)

// joined is one category's totals.
type joined struct{ Count, Weight, IDs int64 }

func category(id int64) string { return fmt.Sprintf("category-%03d", id%categories) }

// generateDim writes the dimension table to dir: one file, row groups of
// 1 << 17 rows, seeded.
func generateDim(dir string, seed uint64) (int64, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return 0, err
	}
	f, err := os.Create(filepath.Join(dir, "dim.parquet"))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	cw := &countingWriter{w: f}
	props := parquet.NewWriterProperties(parquet.WithCompression(compress.Codecs.Snappy), parquet.WithMaxRowGroupLength(1<<17))
	fw, err := pqarrow.NewFileWriter(dimSchema, cw, props, pqarrow.DefaultWriterProps())
	if err != nil {
		return 0, err
	}
	r := rand.New(rand.NewPCG(seed, 0xd1))
	mem := memory.DefaultAllocator
	for lo := int64(0); lo < maxValue; lo += 1 << 17 {
		ib, cb, wb := array.NewInt64Builder(mem), array.NewStringBuilder(mem), array.NewInt64Builder(mem)
		for id := lo; id < min(lo+1<<17, maxValue); id++ {
			ib.Append(id)
			cb.Append(category(id))
			wb.Append(int64(r.IntN(7)))
		}
		cols := []arrow.Array{ib.NewArray(), cb.NewArray(), wb.NewArray()}
		rec := array.NewRecordBatch(dimSchema, cols, int64(cols[0].Len()))
		err := fw.Write(rec)
		rec.Release()
		for _, c := range cols {
			c.Release()
		}
		ib.Release()
		cb.Release()
		wb.Release()
		if err != nil {
			_ = fw.Close()
			return cw.n, err
		}
	}
	if err := fw.Close(); err != nil {
		return cw.n, err
	}
	return cw.n, f.Close()
}

// runJ measures pipeline J and its baseline in turns.
func runJ(ctx context.Context, e *env) ([]benchfmt.Record, error) {
	dimDir := filepath.Join(e.dir, "dim")
	if err := os.RemoveAll(dimDir); err != nil {
		return nil, err
	}
	e.progress.Phase("J: generate the dimension table")
	dimBytes, err := generateDim(dimDir, e.opts.seed)
	if err != nil {
		return nil, err
	}
	var want, got map[string]joined
	var ds *data.Dataset
	ps, err := turns(e, "J", contender{"baseline", func() (phase, error) {
		return measureBaseline(ctx, func() error {
			var err error
			want, err = baselineJ(ctx, e.files, dimDir)
			return err
		})
	}}, contender{"atoll", func() (phase, error) {
		p, err := measure(ctx, func() error {
			var err error
			got, ds, err = pipelineJ(ctx, e.in, dimDir, e.opts.joinShuffled)
			return err
		})
		p.verified = err == nil && maps.Equal(got, want) && len(want) == categories
		return p, err
	}})
	if err != nil {
		return nil, err
	}
	base, j := ps[0], ps[1]
	fmt.Fprint(e.stderr, ds.Stats())
	cfg := map[string]any{"dim_parquet_bytes": dimBytes, "dim_rows": maxValue}
	return []benchfmt.Record{
		e.record("j_wall_s", j.wall.Seconds(), "s", "single_goroutine_hash_join_s", base.wall.Seconds()).WithVerified(j.verified).WithConfig(cfg),
		e.record("j_peak_pss_bytes", float64(j.peak), "bytes", "single_goroutine_peak_pss_bytes", float64(base.peak)).WithConfig(cfg),
		e.record("j_spilled_bytes", float64(j.spilled), "bytes", "", 0).WithConfig(cfg),
	}, nil
}

// pipelineJ runs J on atoll: ReadParquet(fact) joined with
// ReadParquet(dim) (broadcast: the dimension is under the threshold;
// shuffled if asked), then GroupBy(category).
func pipelineJ(ctx context.Context, in, dimDir string, shuffled bool) (map[string]joined, *data.Dataset, error) {
	opts := []data.JoinOption{data.RightOn("dim_id")}
	if shuffled {
		opts = append(opts, data.BroadcastBelow(0))
	}
	ds := data.ReadParquet(in).
		Join(data.ReadParquet(dimDir), data.InnerJoin, []string{"value"}, opts...).
		GroupBy("category").Aggregate(data.Count(), data.Sum("weight"), data.Sum("id"))
	out := map[string]joined{}
	for rec, err := range ds.IterBatches(ctx, 0) {
		if err != nil {
			return nil, nil, err
		}
		cs, err := column[*array.String](rec, "category")
		if err != nil {
			return nil, nil, err
		}
		ns, err := column[*array.Int64](rec, "count()")
		if err != nil {
			return nil, nil, err
		}
		ws, err := column[*array.Int64](rec, "sum(weight)")
		if err != nil {
			return nil, nil, err
		}
		is, err := column[*array.Int64](rec, "sum(id)")
		if err != nil {
			return nil, nil, err
		}
		for i := range cs.Len() {
			out[strings.Clone(cs.Value(i))] = joined{Count: ns.Value(i), Weight: ws.Value(i), IDs: is.Value(i)}
		}
	}
	return out, ds, nil
}

// baselineJ is J in this goroutine: the dimension read into a Go map by
// dim_id, then each row group of the fact table's id and value columns
// probed into it, the totals kept per category.
func baselineJ(ctx context.Context, files []string, dimDir string) (map[string]joined, error) {
	ctx = compute.WithAllocator(ctx, data.Allocator()) // the memory atoll's tasks use
	type dimRow struct {
		category int32
		weight   int64
	}
	dim := map[int64]dimRow{}
	var names []string
	index := map[string]int32{}
	dimFiles, err := parquetFiles(dimDir)
	if err != nil {
		return nil, err
	}
	if err := eachRowGroup(ctx, dimFiles, nil, func(rec arrow.RecordBatch) error {
		ids, err := column[*array.Int64](rec, "dim_id")
		if err != nil {
			return err
		}
		cs, err := column[*array.String](rec, "category")
		if err != nil {
			return err
		}
		ws, err := column[*array.Int64](rec, "weight")
		if err != nil {
			return err
		}
		for i := range ids.Len() {
			c, ok := index[cs.Value(i)]
			if !ok {
				// Value is a view of the batch's buffer, which is
				// reused once the batch is released: keep a copy.
				c = int32(len(names))
				names = append(names, strings.Clone(cs.Value(i)))
				index[names[c]] = c
			}
			dim[ids.Value(i)] = dimRow{category: c, weight: ws.Value(i)}
		}
		return nil
	}); err != nil {
		return nil, err
	}
	totals := make([]joined, len(names))
	if err := eachRowGroup(ctx, files, []string{"id", "value"}, func(rec arrow.RecordBatch) error {
		ids, err := column[*array.Int64](rec, "id")
		if err != nil {
			return err
		}
		vs, err := column[*array.Int64](rec, "value")
		if err != nil {
			return err
		}
		iv, vv := ids.Int64Values(), vs.Int64Values()
		for i, v := range vv {
			d, ok := dim[v]
			if !ok {
				continue
			}
			t := &totals[d.category]
			t.Count++
			t.Weight += d.weight
			t.IDs += iv[i]
		}
		return nil
	}); err != nil {
		return nil, err
	}
	out := map[string]joined{}
	for c, t := range totals {
		if t.Count > 0 {
			out[names[c]] = t
		}
	}
	return out, nil
}
