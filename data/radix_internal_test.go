package data

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// TestInt64OrderMatchesArrow: the radix order equals Arrow's stable sort
// of the same column, ascending and descending, over keys with many
// duplicates, the extremes, and keys sharing their high digits.
func TestInt64OrderMatchesArrow(t *testing.T) {
	ctx := context.Background()
	r := rand.New(rand.NewPCG(1, 2))
	gens := map[string]func() int64{
		"random":     func() int64 { return int64(r.Uint64()) },
		"duplicates": func() int64 { return int64(r.IntN(50)) - 25 },
		"extremes":   func() int64 { return []int64{math.MinInt64, math.MaxInt64, 0, -1, 1}[r.IntN(5)] },
		"small":      func() int64 { return int64(r.IntN(1 << 20)) },
	}
	for name, gen := range gens {
		for _, n := range []int{radixMinRows, radixMinRows + 1, 50_000} {
			b := array.NewInt64Builder(memory.DefaultAllocator)
			for range n {
				b.Append(gen())
			}
			col := b.NewArray()
			b.Release()
			for _, desc := range []bool{false, true} {
				got := int64Order(col, desc, memory.DefaultAllocator)
				if got == nil {
					t.Fatalf("%s, %d rows: no radix order", name, n)
				}
				rec := array.NewRecordBatch(arrow.NewSchema([]arrow.Field{{Name: "k", Type: arrow.PrimitiveTypes.Int64}}, nil), []arrow.Array{col}, int64(n))
				key := compute.DefaultSortKey()
				if desc {
					key.Order = compute.SortOrderDescending
				}
				want, err := compute.SortIndicesRecordBatch(ctx, rec, []compute.SortKey{key})
				if err != nil {
					t.Fatal(err)
				}
				g := got.(*array.Int64).Int64Values()
				if len(g) != want.Len() {
					t.Fatalf("%s, %d rows, desc %v: %d indices, want %d", name, n, desc, len(g), want.Len())
				}
				for i, x := range g {
					if w := indexAt(want, i); x != w {
						t.Fatalf("%s, %d rows, desc %v: index %d is row %d, want row %d", name, n, desc, i, x, w)
					}
				}
				got.Release()
				want.Release()
				rec.Release()
			}
			col.Release()
		}
	}
}

func indexAt(a arrow.Array, i int) int64 {
	switch a := a.(type) {
	case *array.Uint64:
		return int64(a.Value(i))
	case *array.Int64:
		return a.Value(i)
	}
	panic("indices of type " + a.DataType().String())
}

// TestInt64OrderDeclines: other types, nulls and short columns keep
// Arrow's sort.
func TestInt64OrderDeclines(t *testing.T) {
	b := array.NewInt64Builder(memory.DefaultAllocator)
	for i := range radixMinRows {
		if i == 7 {
			b.AppendNull()
		} else {
			b.Append(int64(i))
		}
	}
	withNull := b.NewArray()
	defer withNull.Release()
	for range radixMinRows - 1 {
		b.Append(1)
	}
	short := b.NewArray()
	defer short.Release()
	f := array.NewFloat64Builder(memory.DefaultAllocator)
	for range radixMinRows {
		f.Append(1)
	}
	floats := f.NewArray()
	defer floats.Release()
	for _, c := range []arrow.Array{withNull, short, floats} {
		if o := int64Order(c, false, memory.DefaultAllocator); o != nil {
			t.Fatalf("a radix order of %s (%d rows, %d nulls)", c.DataType(), c.Len(), c.NullN())
		}
	}
}
