package data

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// A sort by one int64 column without nulls (a Sort by an id, a GroupBy's
// output by its integer key) orders its rows with an LSD radix sort on
// 16-bit digits of the key instead of Arrow's comparison sort: the rows'
// order is the same (stable: equal keys keep their input order), in a
// few linear passes. Radix passes whose digit every key shares are
// skipped.

// radixMinRows: fewer rows sort by comparison (the radix sort's counting
// tables cost more than they save).
const radixMinRows = 4096

const orderDigitBits = 16

// int64Order returns the order of col's rows sorted by value (desc:
// descending), as an Int64 array of row indices, or nil when the radix
// sort does not apply (another type, nulls, few rows).
func int64Order(col arrow.Array, desc bool, mem memory.Allocator) arrow.Array {
	c, ok := col.(*array.Int64)
	if !ok || c.NullN() > 0 || c.Len() < radixMinRows {
		return nil
	}
	vs := c.Int64Values()
	n := len(vs)
	flip := uint64(1) << 63 // signed order as unsigned
	if desc {
		flip = ^uint64(0) >> 1 // and every other bit: largest first
	}
	type row struct {
		key uint64
		idx int64
	}
	src, dst := make([]row, n), make([]row, n)
	for i, v := range vs {
		src[i] = row{uint64(v) ^ flip, int64(i)}
	}
	var counts [1 << orderDigitBits]int
	for shift := uint(0); shift < 64; shift += orderDigitBits {
		clear(counts[:])
		for _, r := range src {
			counts[(r.key>>shift)&(1<<orderDigitBits-1)]++
		}
		if counts[(src[0].key>>shift)&(1<<orderDigitBits-1)] == n {
			continue // every key shares this digit
		}
		sum := 0
		for i, k := range counts {
			counts[i] = sum
			sum += k
		}
		for _, r := range src {
			d := (r.key >> shift) & (1<<orderDigitBits - 1)
			dst[counts[d]] = r
			counts[d]++
		}
		src, dst = dst, src
	}
	b := array.NewInt64Builder(mem)
	defer b.Release()
	b.Resize(n)
	for _, r := range src {
		b.UnsafeAppend(r.idx)
	}
	return b.NewArray()
}
