package data

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// TestSampleKeepsEachRowIndependently: at fractions drawn row by row and
// by skips, every row is kept with probability fraction, whatever its
// place (the first and last of a block too) and whether the row before
// it was kept: each share within 5 standard deviations.
func TestSampleKeepsEachRowIndependently(t *testing.T) {
	const rows, blocks = 64, 4096
	b := array.NewInt64Builder(memory.DefaultAllocator)
	for i := range rows {
		b.Append(int64(i))
	}
	ids := b.NewArray()
	defer ids.Release()
	rec := array.NewRecordBatch(arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}}, nil), []arrow.Array{ids}, rows)
	defer rec.Release()
	for _, f := range []float64{0.9, 0.5, skipBelow, 0.1, 0.01} {
		var kept, first, last, afterKept, prevKept int
		for blk := range blocks {
			out, err := sampleRecord(context.Background(), rec, f, rand.NewPCG(uint64(blk), 7))
			if err != nil {
				t.Fatal(err)
			}
			col := out.Column(0).(*array.Int64)
			prev := int64(-2)
			for i := range col.Len() {
				id := col.Value(i)
				if id <= prev || id >= rows {
					t.Fatalf("fraction %v: ids out of order or range: %d after %d", f, id, prev)
				}
				switch {
				case id == 0:
					first++
				case id == rows-1:
					last++
				}
				if id < rows-1 {
					prevKept++ // a kept row with a row after it
				}
				if id == prev+1 {
					afterKept++
				}
				prev = id
			}
			kept += col.Len()
			out.Release()
		}
		within := func(what string, got, trials int) {
			t.Helper()
			sd := math.Sqrt(float64(trials) * f * (1 - f))
			if d := math.Abs(float64(got) - f*float64(trials)); d > 5*sd+1 {
				t.Errorf("fraction %v: %s: %d of %d, want %.0f ± %.0f", f, what, got, trials, f*float64(trials), 5*sd)
			}
		}
		within("rows kept", kept, rows*blocks)
		within("first rows kept", first, blocks)
		within("last rows kept", last, blocks)
		within("rows kept after a kept row", afterKept, prevKept)
	}
}

// BenchmarkRandomSample: a sample task keeping a half, a tenth and a
// hundredth of a million rows (int64, float64, string), against the loop
// a program without atoll writes: draw for each row and append the rows
// kept to new Arrow builders.
func BenchmarkRandomSample(b *testing.B) {
	s := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}, {Name: "price", Type: arrow.PrimitiveTypes.Float64},
		{Name: "name", Type: arrow.BinaryTypes.String}}, nil)
	bld := array.NewRecordBuilder(memory.DefaultAllocator, s)
	defer bld.Release()
	const n = 1 << 20
	for i := range n {
		bld.Field(0).(*array.Int64Builder).Append(int64(i))
		bld.Field(1).(*array.Float64Builder).Append(float64(i) / 100)
		bld.Field(2).(*array.StringBuilder).Append(fmt.Sprintf("item %d", i%5000))
	}
	rec := bld.NewRecordBatch()
	defer rec.Release()
	ctx := context.Background()
	for _, fraction := range []float64{0.5, 0.1, 0.01} {
		b.Run(fmt.Sprint(fraction), func(b *testing.B) {
			start := time.Now()
			for i := range b.N {
				out, err := sampleRecord(ctx, rec, fraction, rand.NewPCG(uint64(i), 1))
				if err != nil {
					b.Fatal(err)
				}
				out.Release()
			}
			ours := time.Since(start)
			b.StopTimer()
			ids, prices, names := rec.Column(0).(*array.Int64), rec.Column(1).(*array.Float64), rec.Column(2).(*array.String)
			start = time.Now()
			for i := range b.N {
				rng := rand.New(rand.NewPCG(uint64(i), 1))
				out := array.NewRecordBuilder(memory.DefaultAllocator, s)
				ib, fb, sb := out.Field(0).(*array.Int64Builder), out.Field(1).(*array.Float64Builder), out.Field(2).(*array.StringBuilder)
				for j := range n {
					if rng.Float64() < fraction {
						ib.Append(ids.Value(j))
						fb.Append(prices.Value(j))
						sb.Append(names.Value(j))
					}
				}
				out.NewRecordBatch().Release()
				out.Release()
			}
			loop := time.Since(start)
			b.ReportMetric(float64(ours.Nanoseconds())/float64(b.N*n), "ns/row")
			b.ReportMetric(float64(loop.Nanoseconds())/float64(b.N*n), "go_loop_ns/row")
			b.ReportMetric(float64(ours)/float64(loop), "ratio")
		})
	}
}
