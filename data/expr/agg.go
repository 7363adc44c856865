package expr

// Agg is an aggregation of rows (a group's, with data's GroupBy): a
// function of an expression's values. Build one with Count, or with an
// expression's Count, Sum, Mean, Min, Max or Std.
type Agg struct {
	fn    string // count, sum, mean, min, max, std
	in    Expr   // the zero Expr: Count(), the rows
	alias string
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

// As names the aggregation's column.
func (a Agg) As(name string) Agg {
	a.alias = name
	return a
}

// Func is the aggregation's function: count, sum, mean, min, max, std.
func (a Agg) Func() string { return a.fn }

// Input is the expression aggregated; false for Count().
func (a Agg) Input() (Expr, bool) { return a.in, a.in.n != nil }

// Name is the aggregation's column: its alias (As), else the function
// and its input's name, as Ray names them: count(), sum(x), mean(x * 2).
func (a Agg) Name() string {
	if a.alias != "" {
		return a.alias
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
	if a.in.n != nil {
		s = a.in.String() + "." + a.fn + "()"
	}
	if a.alias != "" {
		s += ".as(" + a.alias + ")"
	}
	return s
}
