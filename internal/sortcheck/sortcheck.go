// Package sortcheck is what the sort samples share: the input they
// generate (Generate, a chunk per seed), the splitter samples they draw
// (Sample), and the check of a sort of int64s: a Summary of each chunk or
// sorted partition (count, an order-independent checksum, min, max,
// sortedness) whose totals must match the input's.
package sortcheck

import (
	"math/rand/v2"
	"slices"
)

// Summary describes a chunk or a sorted partition.
type Summary struct {
	Count    int64
	Checksum uint64 // order-independent: sum of Mix(x)
	Min, Max int64
	Sorted   bool
}

// Mix is splitmix64's finaliser: summing Mix(x) over a multiset is a
// checksum that any lost, duplicated or altered value changes.
func Mix(x int64) uint64 {
	z := uint64(x) + 0x9e3779b97f4a7c15
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}

// Summarize describes xs.
func Summarize(xs []int64) Summary {
	s := Summary{Count: int64(len(xs)), Sorted: true}
	if len(xs) > 0 {
		s.Min, s.Max = xs[0], xs[0]
	}
	for i, x := range xs {
		s.Checksum += Mix(x)
		s.Min, s.Max = min(s.Min, x), max(s.Max, x)
		if i > 0 && xs[i-1] > x {
			s.Sorted = false
		}
	}
	return s
}

// GenArgs names one chunk of a generated column: N pseudo-random int64s
// from Seed.
type GenArgs struct {
	Seed uint64
	N    int
}

// Generate makes the chunk a names (PCG seeded (Seed, 0x5eed)): the same
// arguments give the same chunk, on any node and at any attempt.
func Generate(a GenArgs) []int64 {
	xs := make([]int64, a.N)
	GenerateInto(a, xs)
	return xs
}

// GenerateInto makes the chunk a names in xs, which must hold a.N values:
// a chunk read again into a reused buffer.
func GenerateInto(a GenArgs, xs []int64) {
	r := rand.New(rand.NewPCG(a.Seed, 0x5eed))
	for i := range xs[:a.N] {
		xs[i] = int64(r.Uint64())
	}
}

// SampleResult is what Sample returns: values of a chunk picked at
// random (for splitters) and the chunk's Summary (for the final check).
type SampleResult struct {
	Samples []int64
	Input   Summary
}

// Sample picks k values of chunk at random, with replacement (PCG seeded
// (len(chunk), k); none from an empty chunk), and summarises the chunk.
func Sample(chunk []int64, k int) SampleResult {
	r := rand.New(rand.NewPCG(uint64(len(chunk)), uint64(k)))
	out := SampleResult{Input: Summarize(chunk)}
	if len(chunk) > 0 {
		for range k {
			out.Samples = append(out.Samples, chunk[r.IntN(len(chunk))])
		}
	}
	return out
}

// Splitters combines the chunks' samples: the input's count and
// checksum, and the p-1 splitters of a sample sort into p partitions
// (the sorted samples' p-quantiles).
func Splitters(samples []SampleResult, p int) (input Summary, splitters []int64) {
	var all []int64
	for _, s := range samples {
		input.Count += s.Input.Count
		input.Checksum += s.Input.Checksum
		all = append(all, s.Samples...)
	}
	slices.Sort(all)
	splitters = make([]int64, max(p-1, 0))
	for j := range splitters {
		splitters[j] = all[(j+1)*len(all)/p]
	}
	return input, splitters
}
