package main

import (
	"math/rand/v2"
	"slices"
	"testing"
)

func TestRadixSortMatchesSlicesSort(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{0, 1, 2, 3, 100, 65537, 200000} {
		xs := make([]int64, n)
		for i := range xs {
			switch i % 3 {
			case 0:
				xs[i] = r.Int64()
			case 1:
				xs[i] = -r.Int64()
			default:
				xs[i] = int64(r.IntN(10)) - 5
			}
		}
		want := slices.Clone(xs)
		slices.Sort(want)
		radixSort(xs, make([]int64, n))
		if !slices.Equal(xs, want) {
			t.Fatalf("n=%d: radix sort differs from slices.Sort", n)
		}
	}
	// keys in narrow ranges share their high bits (a split's bits all
	// shared, skipped); clustered keys make buckets of every size, past
	// a split's fan-out and under the insertion sort's; equal keys end
	// the recursion
	cases := map[string]func() int64{
		"within 1000":    func() int64 { return 12345 + r.Int64N(1000) },
		"within 2^20":    func() int64 { return 12345 + r.Int64N(1<<20) },
		"within 2^40":    func() int64 { return -12345 - r.Int64N(1<<40) },
		"equal":          func() int64 { return -7 },
		"two values":     func() int64 { return int64(r.IntN(2)) << 62 },
		"exponential":    func() int64 { return int64(r.ExpFloat64() * 1e6) },
		"powers of two":  func() int64 { return 1 << r.IntN(63) },
		"one bit apart":  func() int64 { return 1<<40 | int64(r.IntN(2)) },
		"sign and small": func() int64 { return int64(r.IntN(64)) - 32 },
	}
	for name, gen := range cases {
		for _, n := range []int{31, 32, 33, 1000, 100000} {
			xs := make([]int64, n)
			for i := range xs {
				xs[i] = gen()
			}
			if n > 32 {
				xs[n/2] = 1<<63 - 1 // alone in the first split's top bucket
			}
			want := slices.Clone(xs)
			slices.Sort(want)
			radixSort(xs, make([]int64, len(xs)))
			if !slices.Equal(xs, want) {
				t.Fatalf("%s, %d keys: radix sort differs from slices.Sort", name, n)
			}
		}
	}
}

func BenchmarkRadixSort(b *testing.B) {
	r := rand.New(rand.NewPCG(3, 4))
	src := make([]int64, 1<<22)
	for i := range src {
		src[i] = r.Int64()
	}
	xs, buf := make([]int64, len(src)), make([]int64, len(src))
	b.SetBytes(int64(len(src) * 8))
	for b.Loop() {
		copy(xs, src)
		radixSort(xs, buf)
	}
}

func BenchmarkSlicesSort(b *testing.B) {
	r := rand.New(rand.NewPCG(3, 4))
	src := make([]int64, 1<<22)
	for i := range src {
		src[i] = r.Int64()
	}
	xs := make([]int64, len(src))
	b.SetBytes(int64(len(src) * 8))
	for b.Loop() {
		copy(xs, src)
		slices.Sort(xs)
	}
}

func TestBucketIndexMatchesBinarySearch(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	splitters := make([]int64, 99)
	for i := range splitters {
		splitters[i] = r.Int64() - r.Int64()
	}
	splitters = append(splitters, splitters[3], -1<<63, 1<<63-1) // duplicates and extremes
	slices.Sort(splitters)
	idx := newBucketIndex(splitters)
	keys := []int64{-1 << 63, 1<<63 - 1, 0, -1, 1}
	keys = append(keys, splitters...)
	for range 100000 {
		keys = append(keys, r.Int64()-r.Int64())
	}
	for _, x := range keys {
		want, _ := slices.BinarySearch(splitters, x)
		if got := idx.bucket(x); got != want {
			t.Fatalf("bucket(%d) = %d, want %d", x, got, want)
		}
	}
}

// TestPartitionChunk: every key lands in the bucket between its
// splitters, in the chunk's order, and none is lost.
func TestPartitionChunk(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	chunk := make([]int64, 50000)
	for i := range chunk {
		chunk[i] = r.Int64() - r.Int64()
	}
	splitters := []int64{-1 << 62, -5, -5, 0, 1 << 40}
	buckets := partitionChunk(chunk, splitters)
	if len(buckets) != len(splitters)+1 {
		t.Fatalf("%d buckets, want %d", len(buckets), len(splitters)+1)
	}
	var want [][]int64 = make([][]int64, len(buckets))
	for _, x := range chunk {
		j, _ := slices.BinarySearch(splitters, x)
		want[j] = append(want[j], x)
	}
	for j := range buckets {
		if !slices.Equal(buckets[j], want[j]) {
			t.Fatalf("bucket %d: %d keys, want %d in the chunk's order", j, len(buckets[j]), len(want[j]))
		}
	}
}

func BenchmarkPartitionChunk(b *testing.B) {
	r := rand.New(rand.NewPCG(3, 4))
	chunk := make([]int64, 1<<22)
	for i := range chunk {
		chunk[i] = r.Int64()
	}
	splitters := make([]int64, 99)
	for j := range splitters {
		splitters[j] = int64(uint64(j+1)*(1<<64/100) ^ 1<<63)
	}
	b.SetBytes(int64(len(chunk) * 8))
	for b.Loop() {
		partitionChunk(chunk, splitters)
	}
}

// BenchmarkRadixSortPartition sorts what one of the sort's reduce tasks
// sorts: 8M keys from a hundredth of the key range.
func BenchmarkRadixSortPartition(b *testing.B) {
	r := rand.New(rand.NewPCG(3, 4))
	src := make([]int64, 1<<23)
	for i := range src {
		src[i] = 1<<60 + r.Int64N(1<<63/50)
	}
	xs, buf := make([]int64, len(src)), make([]int64, len(src))
	b.SetBytes(int64(len(src) * 8))
	for b.Loop() {
		copy(xs, src)
		radixSort(xs, buf)
	}
}
