package data

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
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
