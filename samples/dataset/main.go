// Command dataset runs pipelines of package data (Datasets on Arrow) over
// generated Parquet larger than the object store, and checks each
// against the best a program would do without atoll, measured in the
// same run:
//
//	go run ./samples/dataset -gen-size 2GiB -store 512MiB -turns 3 -json
//
// The input is -gen-size bytes of Parquet (-files files, -rows-per-group
// rows per row group, seeded; each file stops at the whole row group
// nearest its share, so the total is a few percent off), in -dir or a
// temporary directory. Its rows: a random int64 "id", a group "key" in
// [0, 1000), an int64 "value" in [0, 1e6) and a 200-letter string
// "payload"; the generator digests every row (count and an
// order-independent checksum). -pipelines picks among:
//
// A (pipeline_a.go): ReadParquet → WithColumn("score", (7·value + id mod
// 1000) mod 1000) → Filter(score < 300) → GroupBy("key").Aggregate(Count(),
// Sum("score"), Sum("value")) → IterBatches, written with expressions;
// against one goroutine reading the same columns and evaluating the same
// expressions (the same Arrow kernels), summing per key in a Go loop. A
// runs again without pushdown for the bytes read, and with -materialize
// with every stage materialized.
//
// J (pipeline_j.go): the input as a fact table joined with a generated
// dimension table (a row per value in [0, 1e6): dim_id, a category of
// 100, a weight; ~20 MiB) on value = dim_id, then grouped by category;
// against one goroutine's hash join (a Go map of the dimension, the fact
// table's row groups probed one at a time). The dimension is broadcast;
// with -join-shuffled both sides are cut into parts by the key instead.
//
// B (pipeline_b.go): ReadParquet → Sort("id") → WriteParquet; against an
// in-memory sort with the same Arrow kernels (up to -baseline-max).
//
// G (pipeline_g.go, not run by default): a GroupBy into about two
// million groups met in every row group (id mod 1e6), its parts cut for
// their reduce tasks while the maps run and again after the last map
// (Config.NoOverlap); against one goroutine adding into a Go map.
//
// A, J and G run -turns times, alternating with their baselines, and report
// the medians: the machine is shared, so only same-run ratios count.
// atoll's peak PSS is that of all its processes (driver and workers), a
// baseline's that of this process alone, where it runs; each phase
// starts with this process's garbage collected and the Arrow buffers
// the phase before left in its pool dropped.
// -worker-heap-floor sets the worker processes' heap floor (1B: Go's
// default collector).
package main

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/atoll-runtime/atoll"
	"github.com/atoll-runtime/atoll/atolltest"
	"github.com/atoll-runtime/atoll/data"
	"github.com/atoll-runtime/atoll/internal/benchfmt"
	"github.com/atoll-runtime/atoll/internal/pss"
)

type options struct {
	genSize       benchfmt.Size
	store         benchfmt.Size
	heapFloor     benchfmt.Size
	baselineMax   benchfmt.Size
	files         int
	rowsPerGroup  int
	seed          uint64
	workers       int
	mode          string
	dir           string
	spillDir      string
	materialize   bool
	pipelines     string
	turns         int
	cpuprofile    string
	aggPartitions int
	joinShuffled  bool
	json          bool
}

func main() {
	opts := options{genSize: 1 << 30, store: 256 << 20, baselineMax: 4 << 30, files: 8, rowsPerGroup: 1 << 18, seed: 1,
		workers: runtime.NumCPU(), pipelines: "a,j,b", turns: 1}
	flag.Var(&opts.genSize, "gen-size", "bytes of Parquet to generate (e.g. 1GiB, 4GiB), to the nearest whole row group per file")
	flag.Var(&opts.store, "store", "object store memory; smaller than -gen-size to run out of core")
	flag.Var(&opts.heapFloor, "worker-heap-floor", "heap a worker process lets grow before collecting (0: atoll's default, 8MiB; 1B: Go's default GC)")
	flag.Var(&opts.baselineMax, "baseline-max", "largest -gen-size also sorted in memory in this process as pipeline B's baseline")
	flag.IntVar(&opts.files, "files", opts.files, "Parquet files to generate")
	flag.IntVar(&opts.rowsPerGroup, "rows-per-group", opts.rowsPerGroup, "rows per Parquet row group (a read task each)")
	flag.Uint64Var(&opts.seed, "seed", opts.seed, "seed of the generated data")
	flag.IntVar(&opts.workers, "workers", opts.workers, "worker slots (CPUs)")
	flag.StringVar(&opts.mode, "mode", "process", "worker mode: process or inprocess")
	flag.StringVar(&opts.dir, "dir", "", "directory for the generated input and the outputs (default: a temporary one, removed)")
	flag.StringVar(&opts.spillDir, "spill-dir", "", "directory for spill files (default: under the session directory)")
	flag.BoolVar(&opts.materialize, "materialize", false, "also run pipeline A with every stage materialized")
	flag.StringVar(&opts.pipelines, "pipelines", opts.pipelines, "the pipelines to run, of a, j, b and g")
	flag.IntVar(&opts.turns, "turns", opts.turns, "run pipelines A, J and G and their baselines this many times, in turns, and report the medians")
	flag.IntVar(&opts.aggPartitions, "agg-partitions", 0, "pipeline A's GroupBy NumPartitions (0: the default, one per CPU, oversized parts cut again)")
	flag.StringVar(&opts.cpuprofile, "cpuprofile", "", "write a CPU profile of this process over the pipelines (the baselines, and the driver's side of atoll; ATOLL_WORKER_CPUPROFILE profiles the worker processes)")
	flag.BoolVar(&opts.joinShuffled, "join-shuffled", false, "run pipeline J's join shuffled (both sides cut into parts by the key) rather than broadcast")
	flag.BoolVar(&opts.json, "json", false, "print one JSON line per measurement (progress goes to stderr)")
	flag.Parse()
	if err := run(context.Background(), opts, os.Stdout, os.Stderr); err != nil {
		log.Fatal(err)
	}
}

// env is what every pipeline runs with.
type env struct {
	opts     options
	in       string   // the generated Parquet's directory
	files    []string // its files
	input    digest
	dir      string
	config   map[string]any
	progress *benchfmt.Progress
	stderr   io.Writer
}

func (e *env) record(metric string, value float64, unit, baseline string, baseValue float64) benchfmt.Record {
	return benchfmt.NewRecord("dataset", metric, value, unit, baseline, baseValue, e.config)
}

func run(ctx context.Context, opts options, stdout, stderr io.Writer) error {
	mode, err := atoll.ParseWorkerMode(opts.mode)
	if err != nil {
		return fmt.Errorf("dataset: -mode: %w", err)
	}
	initOpts := []atoll.Option{atoll.WithWorkerMode(mode), atoll.WithNumCPUs(float64(opts.workers)),
		atoll.WithObjectStoreMemory(uint64(opts.store)), atoll.WithWorkerHeapFloor(uint64(opts.heapFloor))}
	if opts.spillDir != "" {
		initOpts = append(initOpts, atoll.WithSpillDirs(opts.spillDir))
	}
	// Init first: in a worker process it serves tasks and never returns.
	if err := atoll.Init(ctx, initOpts...); err != nil {
		return err
	}
	defer atoll.Shutdown(ctx)
	if opts.genSize <= 0 || opts.files <= 0 || opts.rowsPerGroup <= 0 || opts.turns <= 0 {
		return fmt.Errorf("dataset: -gen-size, -files, -rows-per-group and -turns must be positive")
	}
	pipes := strings.Split(opts.pipelines, ",")
	for _, p := range pipes {
		if p != "a" && p != "b" && p != "j" && p != "g" {
			return fmt.Errorf("dataset: -pipelines: %q is not a, b, g or j", p)
		}
	}
	dir := opts.dir
	if dir == "" {
		if dir, err = os.MkdirTemp("", "atoll-dataset-"); err != nil {
			return err
		}
		defer os.RemoveAll(dir)
	}
	e := &env{opts: opts, in: filepath.Join(dir, "input"), dir: dir, progress: benchfmt.NewProgress(stderr, "dataset"), stderr: stderr}
	if err := os.RemoveAll(e.in); err != nil {
		return err
	}
	e.progress.Phase(fmt.Sprintf("generate %s of Parquet in %d files under %s", benchfmt.FormatSize(int64(opts.genSize)), opts.files, e.in))
	genBytes, input, err := generate(e.in, int64(opts.genSize), opts.files, opts.rowsPerGroup, opts.seed, e.progress)
	if err != nil {
		return err
	}
	e.input = input
	if e.files, err = parquetFiles(e.in); err != nil {
		return err
	}
	fmt.Fprintf(stderr, "dataset: %d rows, %d bytes of Parquet\n", input.Rows, genBytes)
	e.config = map[string]any{
		"gen_size_bytes": int64(opts.genSize), "parquet_bytes": genBytes, "rows": input.Rows, "files": opts.files,
		"rows_per_group": opts.rowsPerGroup, "object_store_bytes": int64(opts.store), "worker_heap_floor_bytes": int64(opts.heapFloor), "workers": opts.workers, "turns": opts.turns, "join_shuffled": opts.joinShuffled,
		"worker_mode": mode.String(), "atoll_version": benchfmt.Version(), "cpus": runtime.NumCPU(), "go": runtime.Version(),
		"agg_partitions": opts.aggPartitions,
	}
	if opts.cpuprofile != "" {
		stop, err := benchfmt.StartCPUProfile(opts.cpuprofile)
		if err != nil {
			return err
		}
		defer stop()
	}
	var records []benchfmt.Record
	var failed []string
	for _, p := range pipes {
		var rs []benchfmt.Record
		var err error
		switch p {
		case "a":
			rs, err = runA(ctx, e)
		case "j":
			rs, err = runJ(ctx, e)
		case "b":
			rs, err = runB(ctx, e)
		case "g":
			rs, err = runG(ctx, e)
		}
		if err != nil {
			return err
		}
		for _, r := range rs {
			if r.Verified != nil && !*r.Verified {
				failed = append(failed, r.Metric)
			}
		}
		records = append(records, rs...)
	}
	if opts.json {
		if err := benchfmt.WriteAll(stdout, records); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(stdout, "%s of Parquet (%d rows, %d files) under a %s object store (%s workers)\n",
			benchfmt.FormatSize(genBytes), input.Rows, opts.files, benchfmt.FormatSize(int64(opts.store)), mode)
		for _, r := range records {
			fmt.Fprintf(stdout, "  %-30s %14.4g %-5s", r.Metric, r.Value, r.Unit)
			if r.BaselineValue != 0 {
				fmt.Fprintf(stdout, "  %s %.4g (ratio %.2f)", r.Baseline, r.BaselineValue, r.Ratio)
			}
			if r.Verified != nil {
				fmt.Fprintf(stdout, "  verified %v", *r.Verified)
			}
			fmt.Fprintln(stdout)
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("dataset: not verified: %s", strings.Join(failed, ", "))
	}
	return nil
}

// contender is one of the programs a pipeline's turns measure.
type contender struct {
	label string // "baseline", "atoll", ...
	run   func() (phase, error)
}

// turns runs the contenders one after another, n times (turns), and
// returns the phase of each one's median wall, in order; a contender's
// phase is verified only if every turn of it was.
func turns(e *env, name string, cs ...contender) ([]phase, error) {
	runs := make([][]phase, len(cs))
	for turn := range e.opts.turns {
		var line []string
		for i, c := range cs {
			e.progress.Phase(fmt.Sprintf("%s %s, turn %d", name, c.label, turn+1))
			p, err := c.run()
			if err != nil {
				return nil, fmt.Errorf("%s %s: %w", name, c.label, err)
			}
			runs[i] = append(runs[i], p)
			line = append(line, fmt.Sprintf("%s %.2fs", c.label, p.wall.Seconds()))
		}
		fmt.Fprintf(e.stderr, "dataset: %s turn %d: %s\n", name, turn+1, strings.Join(line, ", "))
	}
	out := make([]phase, len(cs))
	for i, ps := range runs {
		out[i] = median(ps)
		out[i].verified = !slices.ContainsFunc(ps, func(p phase) bool { return !p.verified })
	}
	return out, nil
}

// phase is one measured run: wall time, peak PSS of the process tree
// (driver and workers), bytes spilled and restored during it.
type phase struct {
	wall              time.Duration
	peak              uint64
	spilled, restored uint64
	verified          bool
}

// median is the phase of the median wall time.
func median(ps []phase) phase {
	s := slices.Clone(ps)
	slices.SortFunc(s, func(a, b phase) int { return cmp.Compare(a.wall, b.wall) })
	return s[len(s)/2]
}

// measure runs atoll's fn and returns its wall time, the process tree's
// peak PSS (driver and workers, sampled every 250 ms) and the bytes the
// store spilled and restored meanwhile.
func measure(ctx context.Context, fn func() error) (phase, error) {
	return measureIn(ctx, func() []int {
		tree, _ := pss.Tree(os.Getpid())
		return tree
	}, fn)
}

// measureBaseline is measure for a baseline, which runs in this process
// only: its peak PSS leaves out the worker processes, atoll's, idle
// meanwhile (they may still hold what atoll's turn left).
func measureBaseline(ctx context.Context, fn func() error) (phase, error) {
	return measureIn(ctx, func() []int { return []int{os.Getpid()} }, fn)
}

func measureIn(ctx context.Context, procs func() []int, fn func() error) (phase, error) {
	// The phase before's garbage counts in no phase's PSS; nor do the
	// Arrow buffers the baselines freed into this process's pool
	// (data.Allocator keeps up to 64 MiB of them for reuse), which
	// atoll's phase, whose kernels run in the workers, never uses.
	data.ReleaseBuffers()
	debug.FreeOSMemory()
	before, err := atolltest.Memory(ctx)
	if err != nil {
		return phase{}, err
	}
	sampler := pss.NewSampler(250*time.Millisecond, procs)
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
