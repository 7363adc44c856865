package expr_test

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/atoll-runtime/atoll/data/expr"
)

// statsOf computes what a Parquet row group records of each column of
// vals: the smallest and largest values other than nulls and NaN, and
// the null count.
func statsOf(s *arrow.Schema, vals [][]any) map[string]expr.ColumnStats {
	out := map[string]expr.ColumnStats{}
	for j, f := range s.Fields() {
		st := expr.ColumnStats{Rows: int64(len(vals[j])), Type: f.Type}
		for _, v := range vals[j] {
			if v == nil {
				st.Nulls++
				continue
			}
			w := statValue(v)
			if f, ok := w.(float64); ok && math.IsNaN(f) {
				continue
			}
			if st.Min == nil || less(w, st.Min) {
				st.Min = w
			}
			if st.Max == nil || less(st.Max, w) {
				st.Max = w
			}
		}
		out[f.Name] = st
	}
	return out
}

func statValue(v any) any {
	switch x := v.(type) {
	case int32:
		return int64(x)
	case uint8:
		return uint64(x)
	case float32:
		return float64(x)
	}
	return v
}

func less(a, b any) bool {
	switch x := a.(type) {
	case int64:
		return x < b.(int64)
	case uint64:
		return x < b.(uint64)
	case float64:
		return x < b.(float64)
	case string:
		return x < b.(string)
	case bool:
		return !x && b.(bool)
	}
	panic(a)
}

// MayMatch is sound: when it says no row of a chunk can make a
// condition true, none does (random conditions over small random
// batches, whose statistics are narrow enough to rule many out).
func TestMayMatchIsSound(t *testing.T) {
	ctx := context.Background()
	pruned, kept := 0, 0
	for seed := range uint64(400) {
		r := rand.New(rand.NewPCG(seed, 0x9e))
		rec, vals := randomBatch(r, 1+r.IntN(6))
		g := &gen{r: r, vals: vals, s: rec.Schema()}
		st := statsOf(rec.Schema(), vals)
		lookup := func(c string) (expr.ColumnStats, bool) { s, ok := st[c]; return s, ok }
		for range 30 {
			tm := g.term("bool", 1+r.IntN(3))
			may := tm.e.MayMatch(lookup)
			b, err := tm.e.Bind(rec.Schema())
			if err != nil {
				t.Fatal(err)
			}
			out, err := b.Eval(ctx, rec)
			if err != nil {
				t.Fatal(err)
			}
			bs := out.(*array.Boolean)
			for i := range bs.Len() {
				if bs.IsValid(i) && bs.Value(i) && !may {
					t.Fatalf("seed %d: %s is true at row %d, but MayMatch ruled the chunk out (stats %v)", seed, tm.e, i, st)
				}
			}
			out.Release()
			if may {
				kept++
			} else {
				pruned++
			}
		}
		rec.Release()
	}
	if pruned < 100 {
		t.Errorf("only %d of %d conditions ruled their chunk out: the test checks too little", pruned, pruned+kept)
	}
	t.Logf("%d conditions ruled their chunk out, %d did not", pruned, kept)
}

func TestMayMatchRulesOut(t *testing.T) {
	st := map[string]expr.ColumnStats{
		"x": {Min: int64(10), Max: int64(20), Nulls: 0, Rows: 100, Type: arrow.PrimitiveTypes.Int64},
		"f": {Min: 0.5, Max: 0.5, Nulls: 0, Rows: 100, Type: arrow.PrimitiveTypes.Float32},
		"s": {Min: "b", Max: "d", Nulls: 100, Rows: 100, Type: arrow.BinaryTypes.String},
	}
	lookup := func(c string) (expr.ColumnStats, bool) { s, ok := st[c]; return s, ok }
	x, f := expr.Col("x"), expr.Col("f")
	for _, c := range []struct {
		e    expr.Expr
		want bool
	}{
		{x.Lt(10), false},
		{x.Le(10), true},
		{x.Gt(20), false},
		{x.Eq(25).Or(x.Eq(5)), false},
		{x.Eq(25).Or(x.Eq(15)), true},
		{x.Gt(5).And(x.Lt(8)), false},
		{x.Gt(5).Not(), false},
		{x.IsIn(1, 2, 30), false},
		{x.IsIn(1, 12), true},
		{x.IsNull(), false},
		{expr.Col("s").IsNotNull(), false}, // every row null
		{expr.Col("s").Eq("c"), false},
		{f.Eq(0.5), true},
		{f.Ne(0.5), true}, // a NaN may hide
		{f.Gt(0.7).Not(), true},
		{x.Mul(2).Lt(0), true}, // not judged: may
		{expr.Col("missing").Lt(0), true},
	} {
		if got := c.e.MayMatch(lookup); got != c.want {
			t.Errorf("%s: MayMatch %v, want %v", c.e, got, c.want)
		}
	}
}
