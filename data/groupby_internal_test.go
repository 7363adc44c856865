package data

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/atoll-runtime/atoll/data/expr"
)

// TestKeyHasherSpreads: group keys spread over every one of 8 hash
// parts: integers sharing their low bits (multiples of 8, of 1024), and
// strings whose letters all share their low three bits ("aiqy": FNV-1a
// alone keeps a string's low bits in the hash's, and would put all of
// them in one part); -0 and 0 hash alike.
func TestKeyHasherSpreads(t *testing.T) {
	for _, step := range []int64{1, 8, 1024} {
		b := array.NewInt64Builder(memory.DefaultAllocator)
		for k := range int64(1000) {
			b.Append(k * step)
		}
		col := b.NewArray()
		b.Release()
		hash := keyHasher([]arrow.Array{col})
		var parts [8]int
		for i := range col.Len() {
			parts[hash(i)%8]++
		}
		col.Release()
		for p, n := range parts {
			if n < 80 || n > 170 {
				t.Fatalf("keys k*%d: part %d holds %d of 1000 (%v)", step, p, n, parts)
			}
		}
	}
	sb := array.NewStringBuilder(memory.DefaultAllocator)
	for k := range 1024 {
		var s []byte
		for d := k; len(s) < 5; d /= 4 {
			s = append(s, "aiqy"[d%4])
		}
		sb.Append(string(s))
	}
	strs := sb.NewArray()
	sb.Release()
	defer strs.Release()
	hash := keyHasher([]arrow.Array{strs})
	var parts [8]int
	for i := range strs.Len() {
		parts[hash(i)%8]++
	}
	for p, n := range parts {
		if n < 80 || n > 180 {
			t.Fatalf("strings of aiqy: part %d holds %d of 1024 (%v)", p, n, parts)
		}
	}
	fb := array.NewFloat64Builder(memory.DefaultAllocator)
	defer fb.Release()
	zero := 0.0
	fb.AppendValues([]float64{zero, -zero}, nil)
	fs := fb.NewArray()
	defer fs.Release()
	if h := keyHasher([]arrow.Array{fs}); h(0) != h(1) {
		t.Fatalf("-0 and 0 hash differently")
	}
}

// TestDenseIDs: both ways of numbering values (an array over a small
// range, a hash table otherwise) give every row the id a map gives, in
// order of first appearance, with nulls one value of their own; values
// at both ends of int64 do not overflow the range check.
func TestDenseIDs(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 1))
	cases := []struct {
		name   string
		values func(i int) int64
	}{
		{"small range", func(int) int64 { return rng.Int64N(1000) - 500 }},
		{"one value", func(int) int64 { return 42 }},
		{"wide", func(int) int64 { return rng.Int64() }},
		{"many keys", func(i int) int64 { return int64(i) * 7919 }},
		{"new, then repeated", func(i int) int64 { return int64(i%2000) * 7919 }}, // sized at once, then found
		{"both ends", func(int) int64 { return []int64{math.MinInt64, math.MaxInt64, 0}[rng.IntN(3)] }},
	}
	for _, c := range cases {
		for _, withNulls := range []bool{false, true} {
			n := 5000
			vs := make([]int64, n)
			b := array.NewInt64Builder(memory.DefaultAllocator)
			for i := range vs {
				vs[i] = c.values(i)
				if withNulls && i%7 == 3 {
					b.AppendNull()
				} else {
					b.Append(vs[i])
				}
			}
			col := b.NewArray()
			b.Release()
			var nulls arrow.Array
			if withNulls {
				nulls = col
			}
			ids, count := denseIDs(vs, nulls)
			want := map[any]int32{}
			for i, v := range vs {
				var key any = v
				if withNulls && col.IsNull(i) {
					key = "null"
				}
				id, ok := want[key]
				if !ok {
					id = int32(len(want))
					want[key] = id
				}
				if ids[i] != id {
					t.Fatalf("%s (nulls %v): row %d (%d) has id %d, want %d", c.name, withNulls, i, v, ids[i], id)
				}
			}
			if count != len(want) {
				t.Fatalf("%s (nulls %v): %d ids, want %d", c.name, withNulls, count, len(want))
			}
			col.Release()
		}
	}
}

// TestRemixSpreadsOnePart: the keys of one first-level part (hash mod 4
// equal) spread over every one of 8 sub-parts by the second cut; without
// the remix, hash mod 8 of them would take only two values.
func TestRemixSpreadsOnePart(t *testing.T) {
	b := array.NewInt64Builder(memory.DefaultAllocator)
	for k := range int64(8000) {
		b.Append(k)
	}
	col := b.NewArray()
	b.Release()
	defer col.Release()
	hash := keyHasher([]arrow.Array{col})
	var sub, plain [8]int
	n := 0
	for i := range col.Len() {
		h := hash(i)
		if h%4 != 1 {
			continue
		}
		n++
		sub[remix(h)%8]++
		plain[h%8]++
	}
	for p, c := range sub {
		if c < n/8*7/10 || c > n/8*13/10 {
			t.Fatalf("part 1 of 4 (%d keys): sub-part %d holds %d (%v)", n, p, c, sub)
		}
	}
	if used := len(slices.DeleteFunc(plain[:], func(c int) bool { return c == 0 })); used != 2 {
		t.Fatalf("without the remix %d sub-parts used, want 2: the test no longer shows the remix matters", used)
	}
}

// distinctRecord builds n rows whose key k takes d distinct values,
// equally often (row i the i mod d-th; a null now and then), with random
// int64, float64 and string values.
func distinctRecord(n, d int, seed uint64) arrow.RecordBatch {
	r := rand.New(rand.NewPCG(seed, 7))
	s := arrow.NewSchema([]arrow.Field{
		{Name: "k", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "x", Type: arrow.PrimitiveTypes.Int64},
		{Name: "y", Type: arrow.PrimitiveTypes.Float64},
		{Name: "name", Type: arrow.BinaryTypes.String},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, s)
	defer b.Release()
	for i := range n {
		if i%997 == 0 {
			b.Field(0).AppendNull()
		} else {
			b.Field(0).(*array.Int64Builder).Append(int64(i%d) * 7919)
		}
		b.Field(1).(*array.Int64Builder).Append(int64(r.IntN(1000)) - 500)
		b.Field(2).(*array.Float64Builder).Append(float64(r.IntN(10000)) / 8)
		b.Field(3).(*array.StringBuilder).Append(fmt.Sprintf("n%05d", r.IntN(20000)))
	}
	return b.NewRecordBatch()
}

// TestMostlyDistinct: batches of nearly all distinct keys are found so,
// batches whose keys repeat (half as many as rows, or fewer) and small
// batches are not.
func TestMostlyDistinct(t *testing.T) {
	for _, c := range []struct {
		n, d int
		want bool
	}{
		{65536, 65536, true},
		{262144, 262144, true},
		{65536, 65536 * 19 / 20, true}, // 95% distinct
		{65536, 65536 * 7 / 10, false}, // 70%
		{65536, 32768, false},
		{262144, 131072, false},
		{65536, 1000, false},
		{4*distinctSample - 1, 1 << 20, false}, // too few rows to judge
	} {
		rec := distinctRecord(c.n, c.d, 1)
		if got := mostlyDistinct(rec, []int{0}); got != c.want {
			t.Errorf("%d rows, keys of %d values: mostly distinct %v, want %v", c.n, c.d, got, c.want)
		}
		if got := mostlyDistinct(rec, []int{0, 3}); got != c.want && c.d >= c.n {
			t.Errorf("%d rows, two key columns: mostly distinct %v, want %v", c.n, got, c.want)
		}
		rec.Release()
	}
}

// TestDistinctRowsPassUngrouped: a map task's partials of nearly
// distinct keys, each row passed as a group of its own, reduce to the
// same groups and aggregates as partials grouped by hashing.
func TestDistinctRowsPassUngrouped(t *testing.T) {
	ctx := context.Background()
	aggs := []Agg{expr.Count(), expr.Col("x").Sum(), expr.Col("y").Mean(), expr.Col("y").Std(),
		expr.Col("name").Min(), expr.Col("x").Max()}
	keys := []string{"k"}
	// two map tasks' batches: the second repeats some of the first's keys
	a, b := distinctRecord(50000, 50000, 1), distinctRecord(50000, 50000, 2)
	defer a.Release()
	defer b.Release()
	var reduced [2]arrow.RecordBatch
	for i, pass := range []bool{true, false} {
		var partials []arrow.RecordBatch
		for _, rec := range []arrow.RecordBatch{a, b} {
			p, err := aggregateRecord(ctx, rec, keys, aggs, false, false, pass)
			if err != nil {
				t.Fatal(err)
			}
			if pass && p.NumRows() != rec.NumRows() || !pass && p.NumRows() >= rec.NumRows() {
				t.Fatalf("pass %v: %d partial rows of %d", pass, p.NumRows(), rec.NumRows())
			}
			partials = append(partials, p)
		}
		all, err := concatRecords(memory.DefaultAllocator, partials[0].Schema(), partials)
		releaseAll(partials)
		if err != nil {
			t.Fatal(err)
		}
		final, err := aggregateRecord(ctx, all, keys, aggs, true, true, false)
		all.Release()
		if err != nil {
			t.Fatal(err)
		}
		defer final.Release()
		if reduced[i], err = sortRecords(ctx, final.Schema(), []arrow.RecordBatch{final}, []SortKey{{Column: "k"}}); err != nil {
			t.Fatal(err)
		}
		defer reduced[i].Release()
	}
	// the null group's rows are combined in another order: its mean and
	// deviation may differ in the last bits
	if !array.RecordApproxEqual(reduced[0], reduced[1], array.WithAbsTolerance(1e-6)) {
		t.Fatalf("passed rows reduce to %d groups, hashed ones to %d, not the same", reduced[0].NumRows(), reduced[1].NumRows())
	}
}
