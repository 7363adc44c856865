// Package sortcheck verifies sorts of int64s, as the sort samples do: a
// Summary of each chunk or sorted partition (count, an order-independent
// checksum, min, max, sortedness) whose totals must match the input's.
package sortcheck

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
