package data

import (
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
