package atoll_test

import (
	"context"
	"testing"

	"github.com/atoll-runtime/atoll"
)

// benchStream yields n small items (inline values).
var benchStream = atoll.NewGenFunc1("bench.stream", func(_ context.Context, n int, yield func(int) error) error {
	for i := range n {
		if err := yield(i); err != nil {
			return err
		}
	}
	return nil
})

// benchItems returns n small values as one task's return: the baseline
// a stream of the same values is compared with.
var benchItems = atoll.NewFunc1("bench.items", func(_ context.Context, n int) ([]int, error) {
	xs := make([]int, n)
	for i := range xs {
		xs[i] = i
	}
	return xs, nil
})

// BenchmarkProcessGenerator reads a stream of 8 small items from a
// generator in a worker process, each with Get, one stream per op
// (stream), and, as its baseline in the same process, one task returning
// the 8 values at once (task).
func BenchmarkProcessGenerator(b *testing.B) {
	ctx := startBenchProcesses(b)
	const n = 8
	b.Run("stream", func(b *testing.B) {
		for b.Loop() {
			gen := benchStream.Remote(ctx, atoll.Value(n))
			got := 0
			for ref, err := range gen.All(ctx) {
				if err != nil {
					b.Fatal(err)
				}
				v, err := atoll.Get(ctx, ref)
				if err != nil || v != got {
					b.Fatal(v, err)
				}
				ref.Release()
				got++
			}
			gen.Release()
			if got != n {
				b.Fatalf("%d items", got)
			}
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "streams/s")
	})
	b.Run("task", func(b *testing.B) {
		for b.Loop() {
			xs, err := atoll.Get(ctx, benchItems.Remote(ctx, atoll.Value(n)))
			if err != nil || len(xs) != n {
				b.Fatal(len(xs), err)
			}
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "tasks/s")
	})
}
