package expr_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/atoll-runtime/atoll"
	"github.com/atoll-runtime/atoll/data/expr"
)

// TestTimes: timestamps (of two units, with a zone and without) and
// dates compare with each other and with time.Time literals, go through
// FillNull, conditionals and Cast, and travel on the wire; every row
// agrees with Go's own comparison of the times. A timestamp with a zone
// and one without, or arithmetic on a time, is a bind error.
func TestTimes(t *testing.T) {
	ctx := context.Background()
	day := func(d int) time.Time { return time.Date(2026, 1, d, 0, 0, 0, 0, time.UTC) }
	ats := []time.Time{day(1).Add(90 * time.Minute), day(2), {}, day(3).Add(time.Nanosecond)}
	valid := []bool{true, true, false, true}
	s := arrow.NewSchema([]arrow.Field{
		{Name: "at", Type: &arrow.TimestampType{Unit: arrow.Nanosecond}, Nullable: true},
		{Name: "utc", Type: &arrow.TimestampType{Unit: arrow.Millisecond, TimeZone: "UTC"}, Nullable: true},
		{Name: "utc_us", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, Nullable: true},
		{Name: "day", Type: arrow.FixedWidthTypes.Date32, Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, s)
	for i, at := range ats {
		if !valid[i] {
			for j := range 4 {
				b.Field(j).AppendNull()
			}
			continue
		}
		ns, _ := arrow.TimestampFromTime(at, arrow.Nanosecond)
		ms, _ := arrow.TimestampFromTime(at, arrow.Millisecond)
		us, _ := arrow.TimestampFromTime(at, arrow.Microsecond)
		b.Field(0).(*array.TimestampBuilder).Append(ns)
		b.Field(1).(*array.TimestampBuilder).Append(ms)
		b.Field(2).(*array.TimestampBuilder).Append(us)
		b.Field(3).(*array.Date32Builder).Append(arrow.Date32FromTime(at))
	}
	rec := b.NewRecordBatch()
	b.Release()
	defer rec.Release()

	truncate := func(at time.Time, unit time.Duration) time.Time { return at.Truncate(unit) }
	for _, c := range []struct {
		e   expr.Expr
		ref func(at time.Time) bool
	}{
		{expr.Col("at").Ge(day(2)), func(at time.Time) bool { return !at.Before(day(2)) }},
		{expr.Col("at").Gt(day(3)), func(at time.Time) bool { return at.After(day(3)) }},
		{expr.Col("utc").Gt(day(3)), func(at time.Time) bool { return truncate(at, time.Millisecond).After(day(3)) }},
		{expr.Col("day").Eq(day(1)), func(at time.Time) bool { return truncate(at, 24*time.Hour).Equal(day(1)) }},
		{expr.Col("day").Lt(expr.Col("utc")), func(at time.Time) bool { return truncate(at, 24*time.Hour).Before(truncate(at, time.Millisecond)) }},
		{expr.Col("utc_us").Gt(expr.Col("utc")), func(at time.Time) bool { return false }}, // no row has a fraction of a millisecond above a microsecond
		{expr.Col("day").Cast(&arrow.TimestampType{Unit: arrow.Nanosecond}).Le(expr.Col("at")), func(time.Time) bool { return true }},
		{expr.Col("day").IsIn(day(2), day(3)), func(at time.Time) bool { return !at.Before(day(2)) }},
		{expr.Col("at").IsIn(day(2), day(3)), func(at time.Time) bool { return at.Equal(day(2)) }},
	} {
		for _, e := range []expr.Expr{c.e, viaWire(t, c.e)} {
			bd, err := e.Bind(s)
			if err != nil {
				t.Fatalf("%s: %v", e, err)
			}
			out, err := bd.Eval(ctx, rec)
			if err != nil {
				t.Fatalf("%s: %v", e, err)
			}
			got := out.(*array.Boolean)
			for i, at := range ats {
				want := c.ref(at)
				switch {
				case !valid[i] && got.IsValid(i):
					t.Errorf("%s row %d: %v, want null", e, i, got.Value(i))
				case valid[i] && (got.IsNull(i) || got.Value(i) != want):
					t.Errorf("%s row %d: %v, want %v", e, i, got.ValueStr(i), want)
				}
			}
			out.Release()
		}
	}

	filled, err := expr.When(expr.Col("at").IsNull()).Then(day(9)).Otherwise(expr.Col("at")).Bind(s)
	if err != nil {
		t.Fatal(err)
	}
	out, err := filled.Eval(ctx, rec)
	if err != nil {
		t.Fatal(err)
	}
	ts := out.(*array.Timestamp)
	if ts.NullN() != 0 || !ts.Value(2).ToTime(arrow.Nanosecond).Equal(day(9)) || !ts.Value(3).ToTime(arrow.Nanosecond).Equal(ats[3]) {
		t.Fatalf("conditional: %v", ts)
	}
	out.Release()
	fill, err := expr.Col("day").FillNull(day(7)).Bind(s)
	if err != nil {
		t.Fatal(err)
	}
	out, err = fill.Eval(ctx, rec)
	if err != nil {
		t.Fatal(err)
	}
	if d := out.(*array.Date32); d.NullN() != 0 || !d.Value(2).ToTime().Equal(day(7)) {
		t.Fatalf("fill_null: %v", d)
	}
	out.Release()

	for _, e := range []expr.Expr{
		expr.Col("at").Lt(expr.Col("utc")), // a zone and none
		expr.Col("at").Add(1),
		expr.Col("day").Gt(3),
		expr.Lit(time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)),
	} {
		if _, err := e.Bind(s); !errors.Is(err, atoll.ErrInvalidArgument) {
			t.Errorf("%s: %v, want an invalid argument", e, err)
		} else {
			t.Logf("%s: %v", e, err)
		}
	}
}

// TestTimeStatistics: a time literal is judged against a timestamp's or
// a date's statistics in the column's own unit.
func TestTimeStatistics(t *testing.T) {
	lo := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	hi := time.Date(2026, 1, 31, 0, 0, 0, 0, time.UTC)
	st := map[string]expr.ColumnStats{
		"at":  {Min: lo.UnixMicro(), Max: hi.UnixMicro(), Nulls: 0, Rows: 10, Type: &arrow.TimestampType{Unit: arrow.Microsecond}},
		"day": {Min: int64(arrow.Date32FromTime(lo)), Max: int64(arrow.Date32FromTime(hi)), Nulls: 0, Rows: 10, Type: arrow.FixedWidthTypes.Date32},
	}
	lookup := func(c string) (expr.ColumnStats, bool) { s, ok := st[c]; return s, ok }
	for _, c := range []struct {
		e    expr.Expr
		want bool
	}{
		{expr.Col("at").Gt(hi), false},
		{expr.Col("at").Ge(hi), true},
		{expr.Col("at").Lt(lo), false},
		{expr.Col("at").Lt(lo.Add(time.Microsecond)), true},
		{expr.Col("day").Gt(hi), false},
		{expr.Col("day").Eq(lo.AddDate(0, 0, 3)), true},
		{expr.Col("day").Lt(lo), false},
		{expr.Col("day").IsIn(hi.AddDate(0, 0, 1), lo.AddDate(0, 0, -1)), false},
		{expr.Col("at").IsIn(lo.AddDate(0, 0, 1)), true},
		{expr.Lit(lo).Lt(hi), true}, // not judged: may
	} {
		if got := c.e.MayMatch(lookup); got != c.want {
			t.Errorf("%s: MayMatch %v, want %v", c.e, got, c.want)
		}
	}
}
