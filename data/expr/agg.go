package expr

import (
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
)

// Agg is an aggregation of rows (a group's, with data's GroupBy): a
// function of an expression's values. Build one with Count, or with an
// expression's Count, Sum, Mean, Min, Max or Std; then, if need be,
// compute with aggregations' values as with columns' (Add, Sub, Mul,
// Div, Round, Cast, FillNull, Then):
//
//	col("price").Mul(col("qty")).Sum().Div(col("qty").Sum()).Round(2).As("avg_price")
type Agg struct {
	fn    string // count, sum, mean, min, max, std; empty for a function of aggregations
	in    Expr   // the zero Expr: Count(), the rows
	alias string
	// A function of aggregations: post is an expression of the leaves'
	// values, each a column named by the leaf's Name.
	post   Expr
	leaves []Agg
}

// Count counts rows (nulls included): named count().
func Count() Agg { return Agg{fn: "count"} }

// Count counts e's values that are not null: count(name).
func (e Expr) Count() Agg { return Agg{fn: "count", in: e} }

// Sum adds e's values (numbers or durations), skipping nulls: sum(name);
// null for no value.
func (e Expr) Sum() Agg { return Agg{fn: "sum", in: e} }

// Mean averages e's values (numbers, or durations: a duration rounded
// to their unit), skipping nulls: mean(name).
func (e Expr) Mean() Agg { return Agg{fn: "mean", in: e} }

// Min is e's smallest value (a number or a string), skipping nulls and
// NaN: min(name).
func (e Expr) Min() Agg { return Agg{fn: "min", in: e} }

// Max is e's largest value, as Min: max(name).
func (e Expr) Max() Agg { return Agg{fn: "max", in: e} }

// Std is the sample standard deviation of e's values (numbers, or
// durations: a duration rounded to their unit; ddof 1), skipping nulls:
// std(name); null for fewer than two values.
func (e Expr) Std() Agg { return Agg{fn: "std", in: e} }

// Add is a + x, x an Agg or a literal (Expr.Add's types).
func (a Agg) Add(x any) Agg { return a.combine(x, Expr.Add) }

// Sub is a - x, as Add.
func (a Agg) Sub(x any) Agg { return a.combine(x, Expr.Sub) }

// Mul is a * x, as Add.
func (a Agg) Mul(x any) Agg { return a.combine(x, Expr.Mul) }

// Div is a / x, a floating-point division as Expr.Div.
func (a Agg) Div(x any) Agg { return a.combine(x, Expr.Div) }

// Round is a rounded to digits decimal places, as Expr.Round.
func (a Agg) Round(digits int) Agg {
	return a.Then(func(e Expr) Expr { return e.Round(digits) })
}

// Cast is a converted to type t, as Expr.Cast.
func (a Agg) Cast(t arrow.DataType) Agg { return a.Then(func(e Expr) Expr { return e.Cast(t) }) }

// FillNull is a, or x where a is null (a Sum or Mean of no value), as
// Expr.FillNull.
func (a Agg) FillNull(x any) Agg { return a.Then(func(e Expr) Expr { return e.FillNull(x) }) }

// Then is f of a's value: any expression of one value, computed once per
// group after the aggregation.
//
//	col("x").Std().Then(func(s expr.Expr) expr.Expr { return s.Pow(2) }).As("variance")
func (a Agg) Then(f func(Expr) Expr) Agg {
	leaves, v := a.value()
	return Agg{post: f(v), leaves: leaves}
}

// combine is op of a's value and x's (an Agg's, or a literal).
func (a Agg) combine(x any, op func(Expr, any) Expr) Agg {
	leaves, v := a.value()
	if b, ok := x.(Agg); ok {
		bl, bv := b.value()
		return Agg{post: op(v, bv), leaves: append(slices.Clip(leaves), bl...)}
	}
	return Agg{post: op(v, x), leaves: leaves}
}

// value is a's leaves and the expression of its value over their columns.
func (a Agg) value() ([]Agg, Expr) {
	if a.leaves != nil { // its name, if any, is its own column's
		return a.leaves, a.post
	}
	return []Agg{a}, Col(a.Name())
}

// Leaves is the aggregations a function of aggregations computes from
// (each named by its Name, a column of the expression Post); nil for an
// aggregation of rows.
func (a Agg) Leaves() []Agg { return a.leaves }

// Post is the expression of a function of aggregations, over its leaves'
// columns; false for an aggregation of rows.
func (a Agg) Post() (Expr, bool) { return a.post, a.leaves != nil }

// As names the aggregation's column.
func (a Agg) As(name string) Agg {
	a.alias = name
	return a
}

// Func is the aggregation's function: count, sum, mean, min, max, std;
// empty for a function of aggregations (Leaves).
func (a Agg) Func() string { return a.fn }

// Input is the expression aggregated; false for Count().
func (a Agg) Input() (Expr, bool) { return a.in, a.in.n != nil }

// Name is the aggregation's column: its alias (As), else the function
// and its input's name, as Ray names them: count(), sum(x), mean(x * 2).
func (a Agg) Name() string {
	if a.alias != "" {
		return a.alias
	}
	if a.leaves != nil {
		return a.post.String()
	}
	return a.fn + "(" + a.in.Name() + ")"
}

// NewAgg is an aggregation of function fn over in (the zero Expr for a
// count of rows) named name (empty: the default name): what travels in
// a task spec. The function is not checked here.
func NewAgg(fn string, in Expr, name string) Agg {
	a := Agg{fn: fn, in: in}
	if name != a.Name() {
		a.alias = name
	}
	return a
}

// String writes the aggregation as its constructors read.
func (a Agg) String() string {
	s := "count()"
	if a.leaves != nil {
		s = a.post.String()
	} else if a.in.n != nil {
		s = a.in.String() + "." + a.fn + "()"
	}
	if a.alias != "" {
		s += ".as(" + a.alias + ")"
	}
	return s
}
