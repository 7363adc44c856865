// Command dataset runs two pipelines of package data (Datasets on Arrow)
// over generated Parquet larger than the object store, and checks them
// against a single-goroutine computation with the same code in this
// process:
//
//	go run ./samples/dataset -gen-size 4GiB -store 1GiB -json
//
// The input is -gen-size bytes of Parquet (-files files, -rows-per-group
// rows per row group, seeded; each file stops at the whole row group
// nearest its share, so the total is a few percent off), in -dir or a temporary directory. Its rows:
// a random int64 "id", a group "key" in [0, 1000), an int64 "value" and a
// 200-letter string "payload"; the generator digests every row (count and
// an order-independent checksum).
//
// Pipeline A: ReadParquet → WithColumn("score", (7·value + id mod 1000)
// mod 1000) → Filter(score < 300) → GroupBy("key").Aggregate(Count(),
// Sum("score"), Sum("value")) → IterBatches: one row per key, computed
// by data's hash all-to-all (partial aggregates in the filter's tasks,
// combined by a reduce task per hash part); the read takes the three
// columns the plan uses (pushdown). The baseline reads the same files'
// row groups one at a time in one goroutine, the same three columns,
// evaluates the same expressions (the same Arrow kernels) and sums per
// key in a Go loop over an array; the per-key totals must be equal. A
// is run again without pushdown (every column read) for the bytes read.
// With -materialize, A runs again with Materialize() after every stage,
// for the memory comparison (every intermediate dataset whole in the
// store, spilled when it does not fit).
//
// Pipeline B: ReadParquet → Sort("id") → WriteParquet. The output files
// are read back in order: ids must ascend across them, and the row count
// and checksum must equal the generator's. The baseline (up to
// -baseline-max) reads every file into memory, sorts with the same Arrow
// kernels (SortIndices, Take) and writes one Parquet file.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/atoll-runtime/atoll"
	"github.com/atoll-runtime/atoll/atolltest"
	"github.com/atoll-runtime/atoll/data"
	"github.com/atoll-runtime/atoll/data/expr"
	"github.com/atoll-runtime/atoll/internal/benchfmt"
	"github.com/atoll-runtime/atoll/internal/pss"
)

type options struct {
	genSize      benchfmt.Size
	store        benchfmt.Size
	baselineMax  benchfmt.Size
	files        int
	rowsPerGroup int
	seed         uint64
	workers      int
	mode         string
	dir          string
	spillDir     string
	materialize  bool
	json         bool
}

func main() {
	opts := options{genSize: 1 << 30, store: 256 << 20, baselineMax: 4 << 30, files: 8, rowsPerGroup: 1 << 18, seed: 1,
		workers: runtime.NumCPU()}
	flag.Var(&opts.genSize, "gen-size", "bytes of Parquet to generate (e.g. 1GiB, 4GiB), to the nearest whole row group per file")
	flag.Var(&opts.store, "store", "object store memory; smaller than -gen-size to run out of core")
	flag.Var(&opts.baselineMax, "baseline-max", "largest -gen-size also sorted in memory in this process as pipeline B's baseline")
	flag.IntVar(&opts.files, "files", opts.files, "Parquet files to generate")
	flag.IntVar(&opts.rowsPerGroup, "rows-per-group", opts.rowsPerGroup, "rows per Parquet row group (a read task each)")
	flag.Uint64Var(&opts.seed, "seed", opts.seed, "seed of the generated data")
	flag.IntVar(&opts.workers, "workers", opts.workers, "worker slots (CPUs)")
	flag.StringVar(&opts.mode, "mode", "process", "worker mode: process or inprocess")
	flag.StringVar(&opts.dir, "dir", "", "directory for the generated input and the outputs (default: a temporary one, removed)")
	flag.StringVar(&opts.spillDir, "spill-dir", "", "directory for spill files (default: under the session directory)")
	flag.BoolVar(&opts.materialize, "materialize", true, "also run pipeline A with every stage materialized")
	flag.BoolVar(&opts.json, "json", false, "print one JSON line per measurement (progress goes to stderr)")
	flag.Parse()
	if err := run(context.Background(), opts, os.Stdout, os.Stderr); err != nil {
		log.Fatal(err)
	}
}

// phase is one measured run: wall time, peak PSS of the process tree
// (driver and workers), bytes spilled and restored during it.
type phase struct {
	wall              time.Duration
	peak              uint64
	spilled, restored uint64
	verified          bool
}

func run(ctx context.Context, opts options, stdout, stderr io.Writer) error {
	mode, err := atoll.ParseWorkerMode(opts.mode)
	if err != nil {
		return fmt.Errorf("dataset: -mode: %w", err)
	}
	initOpts := []atoll.Option{atoll.WithWorkerMode(mode), atoll.WithNumCPUs(float64(opts.workers)),
		atoll.WithObjectStoreMemory(uint64(opts.store))}
	if opts.spillDir != "" {
		initOpts = append(initOpts, atoll.WithSpillDirs(opts.spillDir))
	}
	// Init first: in a worker process it serves tasks and never returns.
	if err := atoll.Init(ctx, initOpts...); err != nil {
		return err
	}
	defer atoll.Shutdown(ctx)
	if opts.genSize <= 0 || opts.files <= 0 || opts.rowsPerGroup <= 0 {
		return fmt.Errorf("dataset: -gen-size, -files and -rows-per-group must be positive")
	}
	dir := opts.dir
	if dir == "" {
		if dir, err = os.MkdirTemp("", "atoll-dataset-"); err != nil {
			return err
		}
		defer os.RemoveAll(dir)
	}
	in, out, baseOut := filepath.Join(dir, "input"), filepath.Join(dir, "sorted"), filepath.Join(dir, "baseline-sorted")
	for _, d := range []string{in, out, baseOut} {
		if err := os.RemoveAll(d); err != nil {
			return err
		}
	}
	progress := benchfmt.NewProgress(stderr, "dataset")

	progress.Phase(fmt.Sprintf("generate %s of Parquet in %d files under %s", benchfmt.FormatSize(int64(opts.genSize)), opts.files, in))
	genBytes, input, err := generate(in, int64(opts.genSize), opts.files, opts.rowsPerGroup, opts.seed, progress)
	if err != nil {
		return err
	}
	files, err := parquetFiles(in)
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "dataset: %d rows, %d bytes of Parquet\n", input.Rows, genBytes)

	// Pipeline A.
	progress.Phase("A baseline: read -> score -> filter -> per-key sums, one goroutine")
	var wantA map[int64]agg
	baseA, err := measure(ctx, func() error {
		var err error
		wantA, err = baselineA(ctx, files)
		return err
	})
	if err != nil {
		return err
	}
	progress.Phase("A atoll: ReadParquet -> WithColumn(score) -> Filter(score < 300) -> GroupBy(key).Aggregate -> IterBatches")
	var gotA map[int64]agg
	var dsA *data.Dataset
	atollA, err := measure(ctx, func() error {
		var err error
		gotA, dsA, err = pipelineA(ctx, in, false, false)
		return err
	})
	if err != nil {
		return err
	}
	atollA.verified = maps.Equal(gotA, wantA) && len(wantA) > 0
	fmt.Fprint(stderr, dsA.Stats())
	progress.Phase("A atoll without pushdown: every column of every row group read")
	var dsNoPush *data.Dataset
	noPushA, err := measure(ctx, func() error {
		var got map[int64]agg
		var err error
		got, dsNoPush, err = pipelineA(ctx, in, false, true)
		if err == nil && !maps.Equal(got, wantA) {
			err = fmt.Errorf("dataset: pipeline A without pushdown differs from the baseline")
		}
		return err
	})
	if err != nil {
		return err
	}
	var matA phase
	if opts.materialize {
		progress.Phase("A atoll, every stage materialized")
		var got map[int64]agg
		matA, err = measure(ctx, func() error {
			var err error
			got, _, err = pipelineA(ctx, in, true, false)
			return err
		})
		if err != nil {
			return err
		}
		matA.verified = maps.Equal(got, wantA)
	}

	// Pipeline B.
	var baseB phase
	if opts.genSize <= opts.baselineMax {
		progress.Phase("B baseline: read everything, sort by id, write, one goroutine")
		baseB, err = measure(ctx, func() error { return baselineB(ctx, files, baseOut) })
		if err != nil {
			return err
		}
		baseB.verified, err = checkSorted(ctx, baseOut, input)
		if err != nil {
			return err
		}
		if err := os.RemoveAll(baseOut); err != nil {
			return err
		}
	}
	progress.Phase("B atoll: ReadParquet -> Sort(id) -> WriteParquet")
	var statsB string
	atollB, err := measure(ctx, func() error {
		ds := data.ReadParquet(in).Sort("id")
		err := ds.WriteParquet(ctx, out)
		statsB = ds.Stats()
		return err
	})
	if err != nil {
		return err
	}
	fmt.Fprint(stderr, statsB)
	progress.Phase("B verify: read the sorted files back")
	atollB.verified, err = checkSorted(ctx, out, input)
	if err != nil {
		return err
	}

	config := map[string]any{
		"gen_size_bytes": int64(opts.genSize), "parquet_bytes": genBytes, "rows": input.Rows, "files": opts.files,
		"rows_per_group": opts.rowsPerGroup, "object_store_bytes": int64(opts.store), "workers": opts.workers,
		"worker_mode": mode.String(), "atoll_version": benchfmt.Version(), "cpus": runtime.NumCPU(), "go": runtime.Version(),
	}
	rec := func(metric string, value float64, unit, baseline string, baseValue float64) benchfmt.Record {
		return benchfmt.NewRecord("dataset", metric, value, unit, baseline, baseValue, config)
	}
	records := []benchfmt.Record{
		rec("a_wall_s", atollA.wall.Seconds(), "s", "single_goroutine_s", baseA.wall.Seconds()).WithVerified(atollA.verified),
		rec("a_peak_pss_bytes", float64(atollA.peak), "bytes", "single_goroutine_peak_pss_bytes", float64(baseA.peak)),
		rec("a_spilled_bytes", float64(atollA.spilled), "bytes", "", 0),
		rec("a_read_bytes", float64(dsA.BytesRead()), "bytes", "without_pushdown_read_bytes", float64(dsNoPush.BytesRead())),
		rec("a_no_pushdown_wall_s", noPushA.wall.Seconds(), "s", "pushdown_s", atollA.wall.Seconds()),
	}
	if opts.materialize {
		records = append(records,
			rec("a_materialized_wall_s", matA.wall.Seconds(), "s", "streaming_s", atollA.wall.Seconds()).WithVerified(matA.verified),
			rec("a_materialized_peak_pss_bytes", float64(matA.peak), "bytes", "streaming_peak_pss_bytes", float64(atollA.peak)),
			rec("a_materialized_spilled_bytes", float64(matA.spilled), "bytes", "streaming_spilled_bytes", float64(atollA.spilled)))
	}
	records = append(records,
		rec("b_wall_s", atollB.wall.Seconds(), "s", "single_goroutine_in_memory_s", baseB.wall.Seconds()).WithVerified(atollB.verified),
		rec("b_peak_pss_bytes", float64(atollB.peak), "bytes", "single_goroutine_peak_pss_bytes", float64(baseB.peak)),
		rec("b_spilled_bytes", float64(atollB.spilled), "bytes", "", 0),
		rec("b_restored_bytes", float64(atollB.restored), "bytes", "", 0))
	if opts.json {
		if err := benchfmt.WriteAll(stdout, records); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(stdout, "%s of Parquet (%d rows, %d files) under a %s object store (%s workers)\n",
			benchfmt.FormatSize(genBytes), input.Rows, opts.files, benchfmt.FormatSize(int64(opts.store)), mode)
		line := func(name string, p phase, base string, b phase) {
			fmt.Fprintf(stdout, "  %-22s %7.2fs, peak PSS %s, spilled %s, restored %s, verified %v", name, p.wall.Seconds(),
				benchfmt.HumanSize(p.peak), benchfmt.HumanSize(p.spilled), benchfmt.HumanSize(p.restored), p.verified)
			if b.wall > 0 {
				fmt.Fprintf(stdout, "; %s %.2fs, peak PSS %s", base, b.wall.Seconds(), benchfmt.HumanSize(b.peak))
			}
			fmt.Fprintln(stdout)
		}
		line("A (streaming):", atollA, "baseline", baseA)
		fmt.Fprintf(stdout, "  A read %s of Parquet column chunks (%s without pushdown, in %.2fs)\n", benchfmt.HumanSize(uint64(dsA.BytesRead())),
			benchfmt.HumanSize(uint64(dsNoPush.BytesRead())), noPushA.wall.Seconds())
		if opts.materialize {
			line("A (materialized):", matA, "", phase{})
		}
		line("B (sort, write):", atollB, "baseline", baseB)
	}
	switch {
	case !atollA.verified:
		return fmt.Errorf("dataset: pipeline A's per-key totals differ from the baseline's")
	case opts.materialize && !matA.verified:
		return fmt.Errorf("dataset: materialized pipeline A's per-key totals differ from the baseline's")
	case !atollB.verified:
		return fmt.Errorf("dataset: pipeline B's output is not the sorted input")
	case opts.genSize <= opts.baselineMax && !baseB.verified:
		return fmt.Errorf("dataset: the baseline sort's output is not the sorted input")
	}
	return nil
}

// measure runs fn and returns its wall time, the process tree's peak PSS
// (driver and workers, sampled every 250 ms) and the bytes the store
// spilled and restored meanwhile.
func measure(ctx context.Context, fn func() error) (phase, error) {
	debug.FreeOSMemory() // the phase before's garbage counts in no phase's PSS
	before, err := atolltest.Memory(ctx)
	if err != nil {
		return phase{}, err
	}
	sampler := pss.NewSampler(250*time.Millisecond, func() []int {
		tree, _ := pss.Tree(os.Getpid())
		return tree
	})
	sampler.Start()
	start := time.Now()
	err = fn()
	p := phase{wall: time.Since(start), peak: sampler.Stop()}
	if err != nil {
		return p, err
	}
	after, err := atolltest.Memory(ctx)
	if err != nil {
		return p, err
	}
	p.spilled = after.SpilledBytesTotal - before.SpilledBytesTotal
	p.restored = after.RestoredBytesTotal - before.RestoredBytesTotal
	return p, nil
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
		c, err := array.Concatenate(parts, memory.DefaultAllocator)
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
	fw, err := pqarrow.NewFileWriter(inputSchema, struct{ io.Writer }{f},
		parquet.NewWriterProperties(parquet.WithCompression(compress.Codecs.Snappy)), pqarrow.DefaultWriterProps())
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
