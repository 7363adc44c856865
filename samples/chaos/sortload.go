package main

import (
	"context"
	"fmt"
	"slices"

	"github.com/atoll-runtime/atoll/internal/sortcheck"

	"github.com/atoll-runtime/atoll"
)

// The sort workload: samples/sort's distributed sample sort, reshaped
// for failures. Every intermediate object is a task's return passed as a
// task argument (never a ref inside a value), so that an object lost
// with a killed node is rebuilt from its lineage when a task needs it;
// the driver reads only small summaries.
//
//	gen(i) -> chunk i          sample(chunk i) -> samples, sortcheck.Summary
//	partition(chunk i, splitters) -> P buckets
//	reduce(bucket 0..P-1 of partition j) -> sorted partition j
//	check(sorted j) -> sortcheck.Summary j
//
// Verified: every partition sorted, partitions in order across their
// boundaries, and the count and multiset checksum of the output equal
// the input's.

const samplesPerChunk = 64

// maxInlineSum is the most inline bytes the sort lets one task's results
// or arguments carry (runSort).
const maxInlineSum = 512 << 10

var (
	sortGen = atoll.NewFunc1("chaos.sortGen", func(ctx context.Context, a sortcheck.GenArgs) ([]int64, error) {
		if err := noteRerun(ctx, "chaos.sortGen"); err != nil {
			return nil, err
		}
		return sortcheck.Generate(a), nil
	})
	sortSample = atoll.NewFunc1("chaos.sortSample", func(ctx context.Context, chunk []int64) (sortcheck.SampleResult, error) {
		if err := noteRerun(ctx, "chaos.sortSample"); err != nil {
			return sortcheck.SampleResult{}, err
		}
		out := sortcheck.Sample(chunk, samplesPerChunk)
		out.Samples = out.Samples[:min(len(out.Samples), len(chunk))] // no more samples than values
		return out, nil
	})
	sortPartition = atoll.NewMultiFunc2("chaos.sortPartition", func(ctx context.Context, chunk, splitters []int64) ([][]int64, error) {
		if err := noteRerun(ctx, "chaos.sortPartition"); err != nil {
			return nil, err
		}
		buckets := make([][]int64, len(splitters)+1)
		for _, x := range chunk {
			j, _ := slices.BinarySearch(splitters, x)
			buckets[j] = append(buckets[j], x)
		}
		return buckets, nil
	})
	sortReduce = atoll.NewFuncN("chaos.sortReduce", func(ctx context.Context, parts [][]int64) ([]int64, error) {
		if err := noteRerun(ctx, "chaos.sortReduce"); err != nil {
			return nil, err
		}
		n := 0
		for _, p := range parts {
			n += len(p)
		}
		xs := make([]int64, 0, n)
		for _, p := range parts {
			xs = append(xs, p...)
		}
		slices.Sort(xs)
		return xs, nil
	})
	sortCheck = atoll.NewFunc1("chaos.sortCheck", func(ctx context.Context, xs []int64) (sortcheck.Summary, error) {
		if err := noteRerun(ctx, "chaos.sortCheck"); err != nil {
			return sortcheck.Summary{}, err
		}
		return sortcheck.Summarize(xs), nil
	})
)

// sortReport is what the sort workload found.
type sortReport struct {
	Bytes      int64
	Partitions int
	Count      int64
	Checksum   uint64
	Verified   error // nil: sorted, in order, count and checksum equal the input's
}

// runSort sorts size bytes of random int64s in p partitions; every task
// goes through k (retries allowed, killable).
func runSort(ctx context.Context, k *killer, size int64, p int, progress func(string, ...any)) (sortReport, error) {
	n := int(size / 8)
	rep := sortReport{Bytes: size, Partitions: p}
	if p < 1 || n < p {
		return rep, fmt.Errorf("sort: %d bytes in %d partitions: want at least one int64 per partition", size, p)
	}
	// Values up to the inline threshold travel inside task results and
	// specs, with no bound on their sum: a partition task's P small
	// buckets, or a reduce task's P small arguments, can pass NATS's
	// 1 MiB max payload and fail (a known limit; see CHAOS.md).
	if bucket := size / int64(p*p); bucket < 2*atoll.DefaultInlineThreshold && int64(p)*bucket > maxInlineSum {
		return rep, fmt.Errorf("sort: %d partitions of %d bytes make buckets of about %d bytes, inline values whose %d add up past %d bytes: use fewer partitions",
			p, size, bucket, p, maxInlineSum)
	}
	opts := k.taskOptions()
	chunks := make([]atoll.ObjectRef[[]int64], p)
	samples := make([]atoll.ObjectRef[sortcheck.SampleResult], p)
	for i := range chunks {
		chunks[i] = sortGen.Remote(ctx, atoll.Value(sortcheck.GenArgs{Seed: uint64(i) + 1, N: n/p + boolInt(i < n%p)}), opts...)
		samples[i] = sortSample.Remote(ctx, chunks[i], opts...)
		k.track(chunks[i], samples[i])
	}
	got, err := atoll.GetAll(ctx, samples)
	if err != nil {
		return rep, fmt.Errorf("sort: sample: %w", err)
	}
	input, splitters := sortcheck.Splitters(got, p)
	progress("sort: %d chunks generated and sampled; partitioning", p)
	buckets := make([][]atoll.ObjectRef[[]int64], p)
	for i, chunk := range chunks {
		buckets[i] = sortPartition.Remote(ctx, p, chunk, atoll.Value(splitters), opts...)
		for _, b := range buckets[i] {
			k.track(b)
		}
		chunk.Release() // the partition task holds it now
	}
	checks := make([]atoll.ObjectRef[sortcheck.Summary], p)
	for j := range checks {
		col := make([]atoll.Arg[[]int64], p)
		for i := range buckets {
			col[i] = buckets[i][j]
		}
		sorted := sortReduce.Remote(ctx, col, opts...)
		checks[j] = sortCheck.Remote(ctx, sorted, opts...)
		k.track(sorted, checks[j])
		for i := range buckets {
			buckets[i][j].Release() // the reduce task holds them now
		}
		sorted.Release() // the check task holds it now
	}
	sums, err := atoll.GetAll(ctx, checks)
	if err != nil {
		return rep, fmt.Errorf("sort: reduce and check: %w", err)
	}
	progress("sort: %d partitions sorted and checked", p)
	var prev *sortcheck.Summary
	for j, s := range sums {
		rep.Count += s.Count
		rep.Checksum += s.Checksum
		switch {
		case rep.Verified != nil:
		case !s.Sorted:
			rep.Verified = fmt.Errorf("partition %d is not sorted", j)
		case prev != nil && s.Count > 0 && prev.Max > s.Min:
			rep.Verified = fmt.Errorf("partition %d starts at %d, below partition %d's end %d", j, s.Min, j-1, prev.Max)
		}
		if s.Count > 0 {
			prev = &sums[j]
		}
	}
	switch {
	case rep.Verified != nil:
	case rep.Count != input.Count || rep.Count != int64(n):
		rep.Verified = fmt.Errorf("output holds %d values, input %d (want %d)", rep.Count, input.Count, n)
	case rep.Checksum != input.Checksum:
		rep.Verified = fmt.Errorf("output checksum %x differs from the input's %x", rep.Checksum, input.Checksum)
	}
	return rep, nil
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
