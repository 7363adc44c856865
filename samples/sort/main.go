// Command sort is the out-of-core benchmark (after Ray's and Dask's
// memory comparison): a distributed sample sort
// of a random int64 column larger than the object store, which spills to
// disk and restores what tasks need.
//
//	go run ./samples/sort -size 8GiB -store 1GiB -partitions 100 -json
//
// The column is P chunks, each made from its own seed: a source read
// twice, as a sort of files reads them twice (Dask's set_index reads its
// input once for the divisions and again for the shuffle). First each
// chunk is read and sampled (with a checksum of its multiset), P-1
// splitters are chosen, then each chunk is read again and partitioned
// into P buckets (one task, P returns), and for each output partition its
// P buckets are concatenated and radix-sorted. With -input store the
// column is generated into the object store first, by P root tasks, and
// sampled and partitioned from there (the whole input exists in the store
// before the sort starts, and spills with it). Every sorted partition is read back by a
// separate task that checks it is sorted and recomputes its count and
// checksum (at most twice as many partitions as workers are sorted or
// checked at once, each released once checked); "verified" is reported
// only when the partitions are in order across boundaries, every one is
// sorted, and the counts and multiset checksums equal the input's.
//
// Up to -baseline-max (4 GiB) the same column is also sorted in this
// process, in memory, twice: by the same sample sort with one goroutine
// per worker slot (wall_s's baseline: the best this machine does without
// atoll, with all the memory it needs), and by one goroutine generating
// it into one slice and radix-sorting that (wall_s_vs_one_goroutine's).
package main

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/atoll-runtime/atoll/internal/sortcheck"

	"github.com/atoll-runtime/atoll"
	"github.com/atoll-runtime/atoll/atolltest"
	"github.com/atoll-runtime/atoll/internal/benchfmt"
	"github.com/atoll-runtime/atoll/internal/pss"
)

// samplesPerChunk: 64 per chunk gives 64·P samples for P-1 splitters,
// enough to keep partitions within a few percent of each other.
const samplesPerChunk = 64

var (
	// readSample reads one chunk from the source and samples it, keeping
	// nothing: the chunk is read again when it is partitioned.
	readSample = atoll.NewFunc2("sort.readSample", func(_ context.Context, a sortcheck.GenArgs, k int) (sortcheck.SampleResult, error) {
		buf := scratch.get(a.N)
		defer scratch.put(buf)
		sortcheck.GenerateInto(a, buf)
		out := sortcheck.Sample(buf, k)
		out.Input.Sorted = false
		return out, nil
	})
	// readPartition reads one chunk from the source again and splits it
	// into one bucket per output partition.
	readPartition = atoll.NewMultiFunc2("sort.readPartition", func(_ context.Context, a sortcheck.GenArgs, splitters []int64) ([][]int64, error) {
		buf := scratch.get(a.N)
		defer scratch.put(buf)
		sortcheck.GenerateInto(a, buf)
		return partitionChunk(buf, splitters), nil
	})
	// gen makes one chunk of the column in the store (-input store).
	gen = atoll.NewFunc1("sort.gen", func(_ context.Context, a sortcheck.GenArgs) ([]int64, error) {
		return sortcheck.Generate(a), nil
	})
	// sample picks k values of a chunk at random, and summarises the
	// chunk (count and multiset checksum) for the final check.
	sample = atoll.NewFunc2("sort.sample", func(_ context.Context, chunk []int64, k int) (sortcheck.SampleResult, error) {
		out := sortcheck.Sample(chunk, k)
		out.Input.Sorted = false
		return out, nil
	})
	// partition splits a chunk into one bucket per output partition.
	partition = atoll.NewMultiFunc2("sort.partition", func(_ context.Context, chunk []int64, splitters []int64) ([][]int64, error) {
		return partitionChunk(chunk, splitters), nil
	})
	// reduce concatenates one partition's buckets and sorts them.
	reduce = atoll.NewFunc1("sort.reduce", func(ctx context.Context, parts []atoll.ObjectRef[[]int64]) ([]int64, error) {
		// Zero-copy views (one fetch restores spilled buckets together),
		// copied once into the partition.
		views, err := atoll.GetViews(ctx, parts)
		if err != nil {
			return nil, err
		}
		total := 0
		for _, v := range views {
			total += v.Len()
		}
		xs := make([]int64, 0, total)
		for _, v := range views {
			xs = append(xs, v.Slice()...)
			v.Release()
		}
		for _, ref := range parts {
			ref.Release() // the buckets are copied: let them go
		}
		buf := scratch.get(total)
		radixSort(xs, buf)
		scratch.put(buf)
		return xs, nil
	})
	// verify reads a sorted partition back and summarises it.
	verify = atoll.NewFunc1("sort.verify", func(_ context.Context, xs []int64) (sortcheck.Summary, error) {
		return sortcheck.Summarize(xs), nil
	})
)

// partitionChunk splits chunk into one bucket per output partition:
// bucket j holds the values between splitters j-1 and j.
func partitionChunk(chunk []int64, splitters []int64) [][]int64 {
	p := len(splitters) + 1
	counts := make([]int, p)
	dest := make([]int32, len(chunk))
	lookup := newBucketIndex(splitters)
	for i, x := range chunk {
		j := lookup.bucket(x)
		dest[i] = int32(j)
		counts[j]++
	}
	buckets := make([][]int64, p)
	for j := range buckets {
		buckets[j] = make([]int64, 0, counts[j])
	}
	for i, x := range chunk {
		buckets[dest[i]] = append(buckets[dest[i]], x)
	}
	return buckets
}

// bucketIndex finds a key's bucket — the number of splitters below it,
// the index slices.BinarySearch returns — from a table
// indexed by the key's top 16 bits, then a short forward scan: a binary
// search per key was a quarter of the sort's CPU time.
type bucketIndex struct {
	splitters []int64
	first     [1 << 16]int32 // first bucket a key with this prefix can fall in
}

func newBucketIndex(splitters []int64) *bucketIndex {
	b := &bucketIndex{splitters: splitters}
	j := 0
	for prefix := range b.first {
		// The smallest key with this prefix.
		lo := int64(uint64(prefix)<<48 ^ 1<<63)
		for j < len(splitters) && splitters[j] < lo {
			j++
		}
		b.first[prefix] = int32(j)
	}
	return b
}

func (b *bucketIndex) bucket(x int64) int {
	j := int(b.first[(uint64(x)^1<<63)>>48])
	for j < len(b.splitters) && b.splitters[j] < x {
		j++
	}
	return j
}

// scratch reuses radix-sort buffers across the tasks a worker runs.
var scratch = &bufPool{}

type bufPool struct {
	mu  sync.Mutex
	buf []int64
}

func (p *bufPool) get(n int) []int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	if cap(p.buf) < n {
		p.buf = make([]int64, n)
	}
	b := p.buf[:n]
	p.buf = nil
	return b
}

func (p *bufPool) put(b []int64) {
	p.mu.Lock()
	p.buf = b
	p.mu.Unlock()
}

type options struct {
	size       benchfmt.Size
	store      benchfmt.Size
	partitions int
	workers    int
	mode       string
	spillDir   string
	baseline   benchfmt.Size
	cpuprofile string
	input      string
	json       bool
}

// The -input values.
const (
	inputSource = "source" // read each chunk twice from its seed
	inputStore  = "store"  // generate the column into the store, then sort it
)

func main() {
	opts := options{size: 1 << 30, store: 1 << 30, partitions: 100, workers: runtime.NumCPU(), baseline: 4 << 30, input: inputSource}
	flag.Var(&opts.size, "size", "bytes of int64 data to sort (e.g. 1GiB, 8GiB)")
	flag.Var(&opts.store, "store", "object store memory; smaller than -size to sort out of core")
	flag.IntVar(&opts.partitions, "partitions", opts.partitions, "input chunks and output partitions")
	flag.IntVar(&opts.workers, "workers", opts.workers, "worker slots (CPUs)")
	flag.StringVar(&opts.mode, "mode", "process", "worker mode: process or inprocess")
	flag.StringVar(&opts.spillDir, "spill-dir", "", "directory for spill files (default: under the session directory)")
	flag.Var(&opts.baseline, "baseline-max", "largest size also sorted in this process, in memory, as the baselines (in parallel and by one goroutine)")
	flag.StringVar(&opts.cpuprofile, "cpuprofile", "", "write a CPU profile of this process (with -mode inprocess it covers the tasks too)")
	flag.StringVar(&opts.input, "input", opts.input, "source: read each chunk from its seed twice, to sample it and to partition it; store: generate the column into the object store first and sort it from there")
	flag.BoolVar(&opts.json, "json", false, "print one JSON line per measurement (progress goes to stderr)")
	flag.Parse()
	if err := run(context.Background(), opts, os.Stdout, os.Stderr); err != nil {
		log.Fatal(err)
	}
}

func run(ctx context.Context, opts options, stdout, stderr io.Writer) error {
	mode, err := atoll.ParseWorkerMode(opts.mode)
	if err != nil {
		return fmt.Errorf("sort: -mode: %w", err)
	}
	if opts.input != inputSource && opts.input != inputStore {
		return fmt.Errorf("sort: -input %q: want %q or %q", opts.input, inputSource, inputStore)
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
	n := int(opts.size / 8)
	if n <= 0 || opts.partitions <= 0 || n < opts.partitions {
		return fmt.Errorf("sort: -size must hold at least one int64 per partition")
	}
	progress := benchfmt.NewProgress(stderr, "sort")
	if opts.cpuprofile != "" {
		stop, err := benchfmt.StartCPUProfile(opts.cpuprofile)
		if err != nil {
			return err
		}
		defer stop()
	}

	sampler := pss.NewSampler(time.Second, func() []int {
		tree, _ := pss.Tree(os.Getpid())
		return tree
	})
	sampler.Start()
	start := time.Now()
	res, err := sortColumn(ctx, opts, n, progress)
	wall := time.Since(start)
	peak := sampler.Stop()
	if err != nil {
		return err
	}
	// Every object is released by now: the spill files must go with them
	// (they are removed asynchronously, so wait for it, briefly).
	mem, err := atolltest.Memory(ctx)
	for deadline := time.Now().Add(10 * time.Second); err == nil && mem.SpillFiles > 0 && time.Now().Before(deadline); {
		<-time.After(10 * time.Millisecond)
		mem, err = atolltest.Memory(ctx)
	}
	if err != nil {
		return err
	}
	var base, par time.Duration
	var parErr error
	if opts.size <= opts.baseline {
		progress.Phase(fmt.Sprintf("baselines: the same data sorted in this process, in memory, by %d goroutines, then by one", max(opts.workers, 1)))
		par, parErr = parallelBaseline(opts, n)
		base = baseline(opts, n)
	}
	config := map[string]any{
		"size_bytes": int64(opts.size), "partitions": opts.partitions, "object_store_bytes": int64(opts.store),
		"workers": opts.workers, "worker_mode": mode.String(), "atoll_version": benchfmt.Version(), "cpus": runtime.NumCPU(),
		"go": runtime.Version(), "sort": "sample sort, radix sort per partition", "input": opts.input,
	}
	verified := res.verified == nil
	records := []benchfmt.Record{
		benchfmt.NewRecord("sort", "wall_s", wall.Seconds(), "s", "in_memory_parallel_s", par.Seconds(), config).WithVerified(verified),
		benchfmt.NewRecord("sort", "wall_s_vs_one_goroutine", wall.Seconds(), "s", "in_memory_single_process_s", base.Seconds(), config).WithVerified(verified),
		benchfmt.NewRecord("sort", "throughput_bytes_per_s", float64(opts.size)/wall.Seconds(), "bytes/s", "", 0, config),
		benchfmt.NewRecord("sort", "spilled_bytes", float64(mem.SpilledBytesTotal), "bytes", "", 0, config),
		benchfmt.NewRecord("sort", "restored_bytes", float64(mem.RestoredBytesTotal), "bytes", "", 0, config),
		benchfmt.NewRecord("sort", "peak_pss_bytes", float64(peak), "bytes", "object_store_bytes", float64(opts.store), config),
		benchfmt.NewRecord("sort", "spill_files_left", float64(mem.SpillFiles), "files", "", 0, config),
	}
	if opts.json {
		if err := benchfmt.WriteAll(stdout, records); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(stdout, "sorted %s in %d partitions under a %s object store (%s workers): %.2fs, %.0f MB/s\n",
			benchfmt.FormatSize(int64(opts.size)), opts.partitions, benchfmt.FormatSize(int64(opts.store)), mode, wall.Seconds(),
			float64(opts.size)/wall.Seconds()/1e6)
		if base > 0 {
			fmt.Fprintf(stdout, "  in this process, in memory: %.2fs by %d goroutines (%.2fx), %.2fs by one (%.2fx)\n", par.Seconds(), max(opts.workers, 1),
				wall.Seconds()/par.Seconds(), base.Seconds(), wall.Seconds()/base.Seconds())
		}
		fmt.Fprintf(stdout, "  spilled %s, restored %s; peak PSS %s; spill files left: %d\n", benchfmt.HumanSize(mem.SpilledBytesTotal),
			benchfmt.HumanSize(mem.RestoredBytesTotal), benchfmt.HumanSize(peak), mem.SpillFiles)
		if verified {
			fmt.Fprintf(stdout, "  verified: globally sorted, %d values, multiset checksum %016x\n", res.count, res.checksum)
		}
	}
	if !verified {
		return fmt.Errorf("sort: output NOT verified: %w", res.verified)
	}
	return parErr
}

type sortResult struct {
	count    int64
	checksum uint64
	verified error // nil when every check passed
}

func sortColumn(ctx context.Context, opts options, n int, progress *benchfmt.Progress) (sortResult, error) {
	p := opts.partitions
	args := make([]sortcheck.GenArgs, p)
	for i := range args {
		args[i] = sortcheck.GenArgs{Seed: uint64(i) + 1, N: n/p + boolInt(i < n%p)}
	}
	var chunks []atoll.ObjectRef[[]int64] // -input store: the column in the store
	samples := make([]atoll.ObjectRef[sortcheck.SampleResult], p)
	if opts.input == inputStore {
		progress.Phase(fmt.Sprintf("generate and sample %d chunks", p))
		chunks = make([]atoll.ObjectRef[[]int64], p)
		for i, a := range args {
			chunks[i] = gen.Remote(ctx, atoll.Value(a))
			samples[i] = sample.Remote(ctx, chunks[i], atoll.Value(samplesPerChunk))
		}
	} else {
		progress.Phase(fmt.Sprintf("read and sample %d chunks", p))
		for i, a := range args {
			samples[i] = readSample.Remote(ctx, atoll.Value(a), atoll.Value(samplesPerChunk))
		}
	}
	got := make([]sortcheck.SampleResult, p)
	for i, ref := range samples {
		s, err := atoll.Get(ctx, ref)
		if err != nil {
			return sortResult{}, err
		}
		got[i] = s
		ref.Release()
		progress.Step(i+1, p)
	}
	input, splitters := sortcheck.Splitters(got, p)

	progress.Phase(fmt.Sprintf("partition %d chunks into %d buckets each", p, p))
	buckets := make([][]atoll.ObjectRef[[]int64], p)
	firsts := make([]atoll.ObjectRef[[]int64], p)
	for i := range buckets {
		if chunks != nil {
			buckets[i] = partition.Remote(ctx, p, chunks[i], atoll.Value(splitters))
			chunks[i].Release() // the partition task holds it now
		} else {
			buckets[i] = readPartition.Remote(ctx, p, atoll.Value(args[i]), atoll.Value(splitters))
		}
		firsts[i] = buckets[i][0]
	}
	// Every sort task needs a bucket of every chunk: waiting for the
	// partition tasks (to show their progress) delays none of them.
	for left := firsts; len(left) > 0; {
		_, rest, err := atoll.Wait(ctx, left, atoll.FetchLocal(false))
		if err != nil {
			return sortResult{}, err
		}
		left = rest
		progress.Step(p-len(left), p)
	}
	// Each partition is sorted and then read back by its own check; at
	// most `window` partitions are in flight, so each sorted partition is
	// checked and released while it is still in memory instead of all of
	// them waiting, spilled, for the last sort to end (the output would
	// otherwise be spilled once more: about a third of the bytes written).
	progress.Phase(fmt.Sprintf("sort and verify %d partitions", p))
	window := 2 * opts.workers
	summaries := make([]sortcheck.Summary, p)
	inflight := map[string]int{} // check -> partition
	var checks []atoll.ObjectRef[sortcheck.Summary]
	var sorted []atoll.ObjectRef[[]int64]
	next, done := 0, 0
	for done < p {
		for ; next < p && len(inflight) < window; next++ {
			col := make([]atoll.ObjectRef[[]int64], p)
			for i := range buckets {
				col[i] = buckets[i][next]
			}
			ref := reduce.Remote(ctx, atoll.Value(col))
			for _, b := range col {
				b.Release() // the reduce task holds them now
			}
			check := verify.Remote(ctx, ref)
			inflight[check.ID()] = next
			checks = append(checks, check)
			sorted = append(sorted, ref)
		}
		ready, _, err := atoll.Wait(ctx, checks, atoll.FetchLocal(false))
		if err != nil {
			return sortResult{}, err
		}
		for _, check := range ready {
			j := inflight[check.ID()]
			s, err := atoll.Get(ctx, check)
			if err != nil {
				return sortResult{}, err
			}
			summaries[j] = s
			delete(inflight, check.ID())
			i := slices.IndexFunc(checks, func(c atoll.ObjectRef[sortcheck.Summary]) bool { return c.ID() == check.ID() })
			check.Release()
			sorted[i].Release() // checked: the partition's bytes are not needed any more
			checks, sorted = slices.Delete(checks, i, i+1), slices.Delete(sorted, i, i+1)
			done++
			progress.Step(done, p)
		}
	}
	res := sortResult{}
	var prev *sortcheck.Summary
	for j, s := range summaries {
		res.count += s.Count
		res.checksum += s.Checksum
		switch {
		case !s.Sorted:
			res.verified = fmt.Errorf("partition %d is not sorted", j)
		case prev != nil && s.Count > 0 && prev.Count > 0 && prev.Max > s.Min:
			res.verified = fmt.Errorf("partition %d starts at %d, below partition %d's end %d", j, s.Min, j-1, prev.Max)
		}
		if s.Count > 0 {
			prev = &summaries[j]
		}
	}
	switch {
	case res.verified != nil:
	case res.count != input.Count || res.count != int64(n):
		res.verified = fmt.Errorf("output holds %d values, input %d (want %d)", res.count, input.Count, n)
	case res.checksum != input.Checksum:
		res.verified = fmt.Errorf("output checksum %x differs from the input's %x", res.checksum, input.Checksum)
	}
	return res, nil
}

// baseline generates the same column in one slice and radix-sorts it.
func baseline(opts options, n int) time.Duration {
	p := opts.partitions
	start := time.Now()
	xs := make([]int64, 0, n)
	for i := range p {
		r := rand.New(rand.NewPCG(uint64(i)+1, 0x5eed))
		for range n/p + boolInt(i < n%p) {
			xs = append(xs, int64(r.Uint64()))
		}
	}
	radixSort(xs, make([]int64, n))
	elapsed := time.Since(start)
	if !slices.IsSortedFunc(xs, cmp.Compare[int64]) {
		panic("baseline sort failed")
	}
	return elapsed
}

// parallelBaseline sorts the same column in this process, in memory,
// the way a program without atoll would use this machine: the same
// sample sort (generate and sample the chunks, partition each into
// buckets, concatenate and radix-sort each partition's buckets) with one
// goroutine per worker slot, each step's chunks shared among them. It
// returns the wall time, and an error if the result is not the sorted
// input (in order within and across partitions, the input's count and
// multiset checksum).
func parallelBaseline(opts options, n int) (time.Duration, error) {
	p, w := opts.partitions, max(opts.workers, 1)
	start := time.Now()
	chunks := make([][]int64, p)
	samples := make([]sortcheck.SampleResult, p)
	benchfmt.ParallelFor(w, p, func(i int) {
		chunks[i] = sortcheck.Generate(sortcheck.GenArgs{Seed: uint64(i) + 1, N: n/p + boolInt(i < n%p)})
		samples[i] = sortcheck.Sample(chunks[i], samplesPerChunk)
	})
	input, splitters := sortcheck.Splitters(samples, p)
	buckets := make([][][]int64, p)
	benchfmt.ParallelFor(w, p, func(i int) {
		buckets[i] = partitionChunk(chunks[i], splitters)
		chunks[i] = nil // let the chunk go, as the partition task does
	})
	sums := make([]sortcheck.Summary, p)
	benchfmt.ParallelFor(w, p, func(j int) {
		total := 0
		for i := range buckets {
			total += len(buckets[i][j])
		}
		xs := make([]int64, 0, total)
		for i := range buckets {
			xs = append(xs, buckets[i][j]...)
			buckets[i][j] = nil
		}
		buf := scratch.get(total)
		radixSort(xs, buf)
		scratch.put(buf)
		sums[j] = sortcheck.Summarize(xs)
	})
	elapsed := time.Since(start)
	var out sortcheck.Summary
	for j, s := range sums {
		switch {
		case !s.Sorted:
			return elapsed, fmt.Errorf("parallel baseline: partition %d not sorted", j)
		case j > 0 && s.Count > 0 && out.Count > 0 && out.Max > s.Min:
			return elapsed, fmt.Errorf("parallel baseline: partition %d starts below partition %d's end", j, j-1)
		}
		out.Count += s.Count
		out.Checksum += s.Checksum
		if s.Count > 0 {
			out.Max = s.Max
		}
	}
	if out.Count != input.Count || out.Checksum != input.Checksum {
		return elapsed, fmt.Errorf("parallel baseline: %d values, checksum %x; the input has %d, %x", out.Count, out.Checksum, input.Count, input.Checksum)
	}
	return elapsed, nil
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
