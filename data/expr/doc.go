// Package expr is the expression language of package data (Polars' and
// Ray Data's col/lit expressions): conditions, computed columns and
// aggregations written as values, checked against a schema before
// anything runs, evaluated over whole Arrow batches with compute
// kernels, and sent to worker processes inside a task's spec with
// nothing registered.
//
//	price := expr.Col("price").Mul(expr.Col("qty"))
//	ds.Filter(price.Gt(100).And(expr.Col("country").IsIn("FR", "DE")))
//	ds.WithColumn("band", expr.When(price.Lt(10)).Then("low").Otherwise("high"))
//	ds.GroupBy("country").Aggregate(expr.Count(), price.Sum().As("revenue"))
//
// An operand is an Expr or a Go literal (Lit): Gt(100) is Gt(Lit(100)).
//
// # Types
//
// Expressions compute with the integer types, float32 and float64, bool
// and string (Arrow utf8); a column of another type can be selected,
// renamed and tested for null. Bind types every operation against a
// schema: arithmetic and comparison operands are converted to a common
// type (the wider integer; int64 for a signed and an unsigned one mixed;
// float64 beside a float, float32 only with float32 or integers of up to
// 16 bits); a Go int literal takes its operand's integer type when it
// fits, a float64 literal a float operand's type. Div is a float
// division; Mod keeps the sign of the dividend, and an integer remainder
// by zero is null. Integers wrap on overflow (Go's arithmetic). A column
// that does not exist, or an operand of a type an operation does not
// take, is an *Error naming the expression, the part at fault and the
// column or type; it matches atoll.ErrInvalidArgument.
//
// # Functions
//
// Abs, Round(digits), Floor and Ceil keep a number's type (Round halves
// away from zero, as Go's math.Round; an integer's Round, Floor and Ceil
// are itself); Sqrt, Log (natural) and Pow are float64, float32 of
// float32s, with Go's math results (NaN for the square root or the
// logarithm of a negative number, -Inf for the logarithm of 0). Lower,
// Upper, Trim (white space at both ends) and Replace (every occurrence)
// are Go's strings functions of a string; Slice(start, length) takes
// characters (a negative start counts from the end, a negative length
// takes the rest), Len counts them (an int64), and Concat joins strings
// (null where one is null):
//
//	ds.WithColumn("tax", expr.Col("price").Mul(0.2).Round(2))
//	ds.Filter(expr.Col("email").Trim().Lower().EndsWith("@example.com"))
//	ds.WithColumn("key", expr.Col("country").Concat("-", expr.Col("zip").Slice(0, 2)))
//
// ParseTime reads strings in a Go layout ("01/02/2006") as timestamps.
// Timestamps and dates compare with each other and with a time.Time
// literal, and go through FillNull, conditionals, Cast, IsIn, Min and
// Max; Truncate cuts them to the start of their year, quarter, month,
// week, day, hour, minute or second (in a timestamp's zone), and Part
// reads one part of them as an int32: the Year, Quarter, Month, ISO Week,
// Day, Weekday (Monday 1 to Sunday 7), YearDay, Hour, Minute or Second;
// AddMonths(n) moves them n calendar months, the day clamped to the new
// month's last (January 31 plus a month is February's last day), on a
// timestamp's zone's wall clock.
// A time less a time is a duration (two dates' in seconds), a timestamp
// plus or less a duration a timestamp (in the finer of their units, in
// the timestamp's zone), a date plus or less a duration a timestamp in
// no zone (from the date's midnight: Col("day").Add(36*time.Hour) is the
// next day's noon), and durations add, subtract and compare with each
// other and with a time.Duration literal (which takes its operand's unit
// when it is a whole number of them). Sum, Mean and Std do not take
// times; of durations they are durations (Mean and Std rounded to the
// durations' unit), and Total(unit) makes a duration a float64 count of
// weeks, days, hours, minutes or seconds.
//
// A time.Time takes its operand's type (its UTC instant in a timestamp's
// unit, its UTC day in a date), else timestamp[us, UTC]; a date and a
// timestamp compare as timestamps, two timestamps in the finer unit, and
// a timestamp with a zone and one without do not compare (Cast one):
//
//	ds.Filter(expr.Col("at").Ge(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)))
//	ds.WithColumn("month", expr.Col("at").Truncate(expr.Month)).GroupBy("month").Count()
//	ds.Filter(expr.Col("at").Part(expr.Weekday).Ge(6)) // weekends
//
// # Aggregations
//
// Count, Sum, Mean, Min, Max and Std of an expression make an Agg, for
// data's GroupBy(...).Aggregate. An Agg's value computes as a column's
// does: Add, Sub, Mul and Div (of another Agg or a literal), Round, Cast,
// FillNull, and Then for any other expression of it. Such a function of
// aggregations is computed per group after its aggregations, each once
// however many functions name it; its name is its expression's, over
// columns named as its aggregations (set one with As). An Agg inside an
// expression of a row (Col("x").Sub(Col("x").Mean())) is an error: a
// group's value is not a row's.
//
//	expr.Col("price").Mul(expr.Col("qty")).Sum().Div(expr.Col("qty").Sum()).Round(2).As("avg_price")
//	expr.Col("x").Std().Then(func(s expr.Expr) expr.Expr { return s.Pow(2) }).As("variance")
//
// # Nulls
//
// Arithmetic, comparisons, casts, string predicates and IsIn are null
// where an operand is; And and Or follow three-valued logic (false AND
// null is false, true OR null is true); IsNull and IsNotNull are never
// null; FillNull replaces nulls; a conditional's null condition counts
// as false. A filter keeps the rows its condition is true for.
//
// # Evaluation
//
// Bound.Eval runs one Arrow compute kernel per operation over the whole
// batch (add_unchecked, multiply_unchecked, less, and_kleene, is_in,
// cast...) or, where arrow-go has none, a loop of this package over the
// arrays' buffers (mod, fill_null, conditionals, contains, starts_with,
// ends_with, round, len, concat, and the case of ASCII text eight bytes
// at a time): no Go call per row but Go's strings functions per value
// for the case of text beyond ASCII, Trim, Replace and Slice. A cast that does not convert exactly (a
// fraction into an integer, an overflow, a string that is no number)
// fails the evaluation.
//
// # Statistics
//
// MayMatch judges a condition against a chunk's column statistics
// (minimum, maximum, null count): package data skips the Parquet row
// groups whose statistics rule out a filter's condition.
//
// # Wire
//
// Proto and FromProto turn an expression into an atollpb.DataExpr and
// back; FromProto checks the message's shape and bounds (nesting, size)
// and fails with a MalformedError.
package expr
