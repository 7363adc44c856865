package expr_test

import (
	"context"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/atoll-runtime/atoll/data/expr"
)

// Lower, Upper and Len over every ASCII byte (the eight-at-a-time path:
// each byte lands at each position of a word) and over text beyond
// ASCII, with nulls and arrays at an offset, against Go's.
func TestStringFunctions(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for _, alphabet := range []string{asciiBytes(), "aBcÉéßz İ\u212a"} {
		chars := []rune(alphabet)
		b := array.NewStringBuilder(memory.DefaultAllocator)
		var vals []any
		for range 500 {
			if r.IntN(9) == 0 {
				b.AppendNull()
				vals = append(vals, nil)
				continue
			}
			var w strings.Builder
			for range r.IntN(20) {
				w.WriteRune(chars[r.IntN(len(chars))])
			}
			b.Append(w.String())
			vals = append(vals, w.String())
		}
		whole := b.NewArray()
		b.Release()
		for _, off := range []int{0, 1, 3, 7} {
			col := array.NewSlice(whole, int64(off), int64(whole.Len()))
			rec := array.NewRecordBatch(arrow.NewSchema([]arrow.Field{{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true}}, nil),
				[]arrow.Array{col}, int64(col.Len()))
			col.Release()
			for _, c := range []struct {
				e   expr.Expr
				ref func(string) any
			}{
				{expr.Col("s").Lower(), func(s string) any { return strings.ToLower(s) }},
				{expr.Col("s").Upper(), func(s string) any { return strings.ToUpper(s) }},
				{expr.Col("s").Trim(), func(s string) any { return strings.TrimSpace(s) }},
				{expr.Col("s").Len(), func(s string) any { return int64(utf8.RuneCountInString(s)) }},
				{expr.Col("s").Slice(2, 3), func(s string) any { return sliceRef(s, 2, 3) }},
				{expr.Col("s").Slice(-4, 2), func(s string) any { return sliceRef(s, -4, 2) }},
				{expr.Col("s").Slice(1, -1), func(s string) any { return sliceRef(s, 1, -1) }},
				{expr.Col("s").Replace("a", "ÉÉ"), func(s string) any { return strings.ReplaceAll(s, "a", "ÉÉ") }},
				{expr.Col("s").Concat("-", expr.Col("s")), func(s string) any { return s + "-" + s }},
			} {
				out := evalOn(t, c.e, rec)
				for i := range out.Len() {
					want := any(nil)
					if v := vals[off+i]; v != nil {
						want = c.ref(v.(string))
					}
					if got := cellAt(out, i); got != want {
						t.Fatalf("%s at offset %d, row %d (%q): got %q, want %q", c.e, off, i, vals[off+i], got, want)
					}
				}
				out.Release()
			}
			rec.Release()
		}
		whole.Release()
	}
}

// Each ASCII byte alone (shorter than a word: the byte-at-a-time path).
func TestStringCaseOfEachByte(t *testing.T) {
	for c := byte(1); c < 128; c++ {
		b := array.NewStringBuilder(memory.DefaultAllocator)
		b.Append(string(c))
		col := b.NewArray()
		b.Release()
		rec := array.NewRecordBatch(arrow.NewSchema([]arrow.Field{{Name: "s", Type: arrow.BinaryTypes.String}}, nil), []arrow.Array{col}, 1)
		col.Release()
		for _, e := range []expr.Expr{expr.Col("s").Lower(), expr.Col("s").Upper()} {
			out := evalOn(t, e, rec)
			want := strings.ToLower(string(c))
			if strings.Contains(e.String(), "upper") {
				want = strings.ToUpper(string(c))
			}
			if got := cellAt(out, 0); got != want {
				t.Errorf("%s of %q: %q", e, c, got)
			}
			out.Release()
		}
		rec.Release()
	}
}

// asciiBytes is every ASCII byte but NUL.
func asciiBytes() string {
	b := make([]byte, 0, 127)
	for c := byte(1); c < 128; c++ {
		b = append(b, c)
	}
	return string(b)
}

// BenchmarkFunctions times Lower of a million ASCII strings and Round of
// a million floats, each beside the Go loop a user writes for it
// (strings.ToLower into an Arrow string builder; math.Round into a
// slice kept from run to run, and into a new slice each run, as a new
// column is), reporting ns a value.
func BenchmarkFunctions(b *testing.B) {
	const n = 1 << 20
	r := rand.New(rand.NewPCG(1, 2))
	sb := array.NewStringBuilder(memory.DefaultAllocator)
	fb := array.NewFloat64Builder(memory.DefaultAllocator)
	var w strings.Builder
	for range n {
		w.Reset()
		for range 4 + r.IntN(16) {
			w.WriteByte("abcdEFGH xyz"[r.IntN(12)])
		}
		sb.Append(w.String())
		fb.Append(r.Float64() * 1000)
	}
	names, vals := sb.NewArray(), fb.NewArray()
	sb.Release()
	fb.Release()
	rec := array.NewRecordBatch(arrow.NewSchema([]arrow.Field{{Name: "name", Type: arrow.BinaryTypes.String},
		{Name: "v", Type: arrow.PrimitiveTypes.Float64}}, nil), []arrow.Array{names, vals}, n)
	names.Release()
	vals.Release()
	defer rec.Release()
	benchEval(b, rec, namedExpr{"lower", expr.Col("name").Lower()}, namedExpr{"round", expr.Col("v").Round(2)})
	strs := rec.Column(0).(*array.String)
	b.Run("go_loop_lower", func(b *testing.B) {
		for b.Loop() {
			out := array.NewStringBuilder(memory.DefaultAllocator)
			out.Reserve(n)
			for i := range n {
				out.Append(strings.ToLower(strs.Value(i)))
			}
			out.NewArray().Release()
			out.Release()
		}
		perValue(b, n)
	})
	fs := rec.Column(1).(*array.Float64).Float64Values()
	rounded := make([]float64, n)
	b.Run("go_loop_round", func(b *testing.B) {
		for b.Loop() {
			for i, v := range fs {
				rounded[i] = math.Round(v*100) / 100
			}
		}
		perValue(b, n)
	})
	b.Run("go_loop_round_new_slice", func(b *testing.B) {
		for b.Loop() {
			out := make([]float64, n)
			for i, v := range fs {
				out[i] = math.Round(v*100) / 100
			}
			rounded = out
		}
		perValue(b, n)
	})

	// a month later: dates from 1970 to 2070
	db := array.NewDate32Builder(memory.DefaultAllocator)
	for range n {
		db.Append(arrow.Date32(r.IntN(36525)))
	}
	days := db.NewArray()
	db.Release()
	drec := array.NewRecordBatch(arrow.NewSchema([]arrow.Field{{Name: "d", Type: arrow.FixedWidthTypes.Date32}}, nil), []arrow.Array{days}, n)
	days.Release()
	defer drec.Release()
	benchEval(b, drec, namedExpr{"add_months", expr.Col("d").AddMonths(1)})
	dvals := days.(*array.Date32).Date32Values()
	b.Run("go_loop_add_months", func(b *testing.B) {
		for b.Loop() {
			out := make([]arrow.Date32, n)
			for i, v := range dvals {
				y, m, d := v.ToTime().Date()
				last := time.Date(y, m+2, 0, 0, 0, 0, 0, time.UTC).Day()
				out[i] = arrow.Date32FromTime(time.Date(y, m+1, min(d, last), 0, 0, 0, 0, time.UTC))
			}
		}
		perValue(b, n)
	})
}

// namedExpr is an expression a benchmark times, and its sub-benchmark's
// name.
type namedExpr struct {
	name string
	e    expr.Expr
}

// benchEval times each expression evaluated over rec, a sub-benchmark
// each, reporting ns a value.
func benchEval(b *testing.B, rec arrow.RecordBatch, es ...namedExpr) {
	for _, c := range es {
		bd, err := c.e.Bind(rec.Schema())
		if err != nil {
			b.Fatal(err)
		}
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				out, err := bd.Eval(context.Background(), rec)
				if err != nil {
					b.Fatal(err)
				}
				out.Release()
			}
			perValue(b, int(rec.NumRows()))
		})
	}
}

// perValue reports a benchmark's time a value, n values a run.
func perValue(b *testing.B, n int) {
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/value")
}
