package data

import (
	"math/rand/v2"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// TestRangePartitionerSpreadsTies: over keys with a few very common
// values and nulls, against bounds that repeat them, every row's part p
// lies between bounds p-1 and p (so the parts concatenated are in order),
// and the rows equal to a repeated bound are shared evenly by its parts.
func TestRangePartitionerSpreadsTies(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	schema := arrow.NewSchema([]arrow.Field{{Name: "k", Type: arrow.PrimitiveTypes.Int64, Nullable: true}}, nil)
	column := func(vs []int64, null func(int) bool) arrow.RecordBatch {
		b := array.NewInt64Builder(memory.DefaultAllocator)
		defer b.Release()
		for i, v := range vs {
			if null(i) {
				b.AppendNull()
			} else {
				b.Append(v)
			}
		}
		a := b.NewArray()
		defer a.Release()
		return array.NewRecordBatch(schema, []arrow.Array{a}, int64(len(vs)))
	}
	// bounds: 3 once, 7 four times, 20 once, then null twice (nulls last)
	bv := []int64{3, 7, 7, 7, 7, 20, 0, 0}
	bounds := column(bv, func(i int) bool { return i >= 6 })
	defer bounds.Release()
	const n = 12_000
	vs := make([]int64, n)
	nulls := make([]bool, n)
	for i := range vs {
		switch x := r.IntN(10); {
		case x < 5:
			vs[i] = 7
		case x < 7:
			nulls[i] = true
		default:
			vs[i] = int64(r.IntN(30))
		}
	}
	rec := column(vs, func(i int) bool { return nulls[i] })
	defer rec.Release()
	part, err := rangePartitioner(rec, bounds, []SortKey{{Column: "k"}}, 5)
	if err != nil {
		t.Fatal(err)
	}
	// order compares a row with bound b: nulls last
	order := func(i, b int) int {
		rn, bn := nulls[i], b >= 6
		switch {
		case rn && bn:
			return 0
		case rn:
			return 1
		case bn:
			return -1
		case vs[i] < bv[b]:
			return -1
		case vs[i] > bv[b]:
			return 1
		}
		return 0
	}
	sevens := map[int]int{}
	nullParts := map[int]int{}
	for i := range n {
		p := part(i)
		if p < 0 || p > len(bv) || (p > 0 && order(i, p-1) < 0) || (p < len(bv) && order(i, p) > 0) {
			t.Fatalf("row %d (%d, null %v) in part %d", i, vs[i], nulls[i], p)
		}
		switch {
		case nulls[i]:
			nullParts[p]++
		case vs[i] == 7:
			sevens[p]++
		}
	}
	// 7 equals bounds 1 to 4: parts 2 to 5; null equals bounds 6 and 7:
	// parts 7 and 8
	for _, c := range []struct {
		counts map[int]int
		parts  []int
	}{{sevens, []int{2, 3, 4, 5}}, {nullParts, []int{7, 8}}} {
		total := 0
		for _, k := range c.counts {
			total += k
		}
		for _, p := range c.parts {
			if share := c.counts[p] * len(c.parts); share < total*9/10 || share > total*11/10 {
				t.Fatalf("part %d holds %d of %d tied rows (parts %v): %v", p, c.counts[p], total, c.parts, c.counts)
			}
		}
		if len(c.counts) != len(c.parts) {
			t.Fatalf("tied rows in parts %v, want %v", c.counts, c.parts)
		}
	}
}
