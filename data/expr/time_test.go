package expr_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"strconv"
	"strings"
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
			out := evalOn(t, e, rec)
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

	out := evalOn(t, expr.When(expr.Col("at").IsNull()).Then(day(9)).Otherwise(expr.Col("at")), rec)
	ts := out.(*array.Timestamp)
	if ts.NullN() != 0 || !ts.Value(2).ToTime(arrow.Nanosecond).Equal(day(9)) || !ts.Value(3).ToTime(arrow.Nanosecond).Equal(ats[3]) {
		t.Fatalf("conditional: %v", ts)
	}
	out.Release()
	out = evalOn(t, expr.Col("day").FillNull(day(7)), rec)
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

// TestTruncate: timestamps (in their zone) and dates cut to the start of
// their year, quarter, month, week (from Monday), day and hour, each
// against Go's own calendar arithmetic, also through the wire; a
// Truncate of a number, or to a unit that is not one, is a bind error.
func TestTruncate(t *testing.T) {
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Skip("no time zone data:", err)
	}
	ats := []time.Time{time.Date(2025, 12, 31, 23, 0, 0, 0, time.UTC), time.Date(2026, 2, 15, 10, 30, 0, 0, time.UTC),
		time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 11, 27, 7, 5, 9, 0, time.UTC)}
	s := arrow.NewSchema([]arrow.Field{
		{Name: "utc", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, Nullable: true},
		{Name: "ny", Type: &arrow.TimestampType{Unit: arrow.Second, TimeZone: "America/New_York"}, Nullable: true},
		{Name: "day", Type: arrow.FixedWidthTypes.Date32, Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, s)
	for _, at := range ats {
		us, _ := arrow.TimestampFromTime(at, arrow.Microsecond)
		b.Field(0).(*array.TimestampBuilder).Append(us)
		b.Field(1).(*array.TimestampBuilder).Append(arrow.Timestamp(at.Unix()))
		b.Field(2).(*array.Date32Builder).Append(arrow.Date32FromTime(at))
	}
	for j := range 3 {
		b.Field(j).AppendNull()
	}
	rec := b.NewRecordBatch()
	b.Release()
	defer rec.Release()

	// the reference: t's unit's start in t's location
	start := func(at time.Time, u expr.TimeUnit) time.Time {
		y, m, d := at.Date()
		switch u {
		case expr.Year:
			return time.Date(y, 1, 1, 0, 0, 0, 0, at.Location())
		case expr.Quarter:
			return time.Date(y, (m-1)/3*3+1, 1, 0, 0, 0, 0, at.Location())
		case expr.Month:
			return time.Date(y, m, 1, 0, 0, 0, 0, at.Location())
		case expr.Week:
			back := (int(at.Weekday()) + 6) % 7 // days since Monday
			return time.Date(y, m, d-back, 0, 0, 0, 0, at.Location())
		case expr.Day:
			return time.Date(y, m, d, 0, 0, 0, 0, at.Location())
		}
		return time.Date(y, m, d, at.Hour(), 0, 0, 0, at.Location())
	}
	for _, u := range []expr.TimeUnit{expr.Year, expr.Quarter, expr.Month, expr.Week, expr.Day, expr.Hour} {
		for _, c := range []struct {
			col string
			loc *time.Location
			get func(arrow.Array, int) time.Time
		}{
			{"utc", time.UTC, func(a arrow.Array, i int) time.Time {
				return a.(*array.Timestamp).Value(i).ToTime(arrow.Microsecond)
			}},
			{"ny", ny, func(a arrow.Array, i int) time.Time { return a.(*array.Timestamp).Value(i).ToTime(arrow.Second) }},
			{"day", time.UTC, func(a arrow.Array, i int) time.Time { return a.(*array.Date32).Value(i).ToTime() }},
		} {
			if c.col == "day" && u == expr.Hour {
				continue
			}
			e := expr.Col(c.col).Truncate(u)
			for _, e := range []expr.Expr{e, viaWire(t, e)} {
				out := evalOn(t, e, rec)
				for i, at := range ats {
					src := at.In(c.loc)
					if c.col == "day" {
						src = at.Truncate(24 * time.Hour)
					}
					if want := start(src, u); out.IsNull(i) || !c.get(out, i).Equal(want) {
						t.Errorf("%s row %d (%v): %v, want %v", e, i, src, c.get(out, i), want)
					}
				}
				if !out.IsNull(len(ats)) {
					t.Errorf("%s of a null is not null", e)
				}
				out.Release()
			}
		}
	}
	for _, e := range []expr.Expr{expr.Col("utc").Truncate("fortnight"), expr.Lit(3).Truncate(expr.Day)} {
		if _, err := e.Bind(s); !errors.Is(err, atoll.ErrInvalidArgument) {
			t.Errorf("%s: %v, want an invalid argument", e, err)
		}
	}
}

// evalOn binds e to rec's schema and evaluates it over rec.
func evalOn(t *testing.T, e expr.Expr, rec arrow.RecordBatch) arrow.Array {
	t.Helper()
	bd, err := e.Bind(rec.Schema())
	if err != nil {
		t.Fatalf("%s: %v", e, err)
	}
	out, err := bd.Eval(context.Background(), rec)
	if err != nil {
		t.Fatalf("%s: %v", e, err)
	}
	return out
}

// TestParts: every part of timestamps of each unit (in UTC, with no zone,
// in zones with daylight saving and half-hour offsets) and of dates, over
// random times from year 1700 to 2250 and around the changes of daylight
// saving time, agrees with Go's calendar; nulls stay null; through the
// wire too. A part of a non-time, or one there is not, is a bind error.
func TestParts(t *testing.T) {
	var locs []*time.Location
	for _, name := range []string{"America/New_York", "Asia/Kolkata", "Australia/Lord_Howe"} {
		loc, err := time.LoadLocation(name)
		if err != nil {
			t.Skip("no time zone data:", err)
		}
		locs = append(locs, loc)
	}
	r := rand.New(rand.NewPCG(3, 9))
	lo := time.Date(1700, 1, 1, 0, 0, 0, 0, time.UTC).Unix()
	hi := time.Date(2250, 1, 1, 0, 0, 0, 0, time.UTC).Unix()
	var ats []time.Time
	for range 3000 {
		ats = append(ats, time.Unix(lo+r.Int64N(hi-lo), r.Int64N(1e9)))
	}
	for _, c := range []string{"2026-03-08T06:59:59Z", "2026-03-08T07:00:00Z", "2026-11-01T05:59:59Z", "2026-11-01T06:00:00Z",
		"2026-04-04T14:59:59Z", "2026-04-04T15:00:00Z", "2026-12-31T23:59:59Z", "2027-01-01T00:00:00Z", "1969-12-31T23:59:59.5Z"} {
		at, err := time.Parse(time.RFC3339Nano, c)
		if err != nil {
			t.Fatal(err)
		}
		ats = append(ats, at)
	}

	type column struct {
		field arrow.Field
		loc   *time.Location // where Go reads the reference
		day   bool           // a date: the reference is the UTC day's midnight
	}
	cols := []column{
		{arrow.Field{Name: "naive_ns", Type: &arrow.TimestampType{Unit: arrow.Nanosecond}}, time.UTC, false},
		{arrow.Field{Name: "utc_s", Type: &arrow.TimestampType{Unit: arrow.Second, TimeZone: "UTC"}}, time.UTC, false},
		{arrow.Field{Name: "day32", Type: arrow.FixedWidthTypes.Date32}, time.UTC, true},
		{arrow.Field{Name: "day64", Type: arrow.FixedWidthTypes.Date64}, time.UTC, true},
	}
	for i, loc := range locs {
		unit := []arrow.TimeUnit{arrow.Millisecond, arrow.Microsecond, arrow.Second}[i]
		cols = append(cols, column{arrow.Field{Name: "zoned" + strconv.Itoa(i), Type: &arrow.TimestampType{Unit: unit, TimeZone: loc.String()}}, loc, false})
	}
	fields := make([]arrow.Field, len(cols))
	for i, c := range cols {
		fields[i] = c.field
		fields[i].Nullable = true
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, arrow.NewSchema(fields, nil))
	defer b.Release()
	for row, at := range ats {
		for j, c := range cols {
			if row%97 == 5 {
				b.Field(j).AppendNull()
				continue
			}
			switch fb := b.Field(j).(type) {
			case *array.TimestampBuilder:
				v, err := arrow.TimestampFromTime(at, c.field.Type.(*arrow.TimestampType).Unit)
				if err != nil {
					t.Fatal(err)
				}
				fb.Append(v)
			case *array.Date32Builder:
				fb.Append(arrow.Date32FromTime(at))
			case *array.Date64Builder:
				fb.Append(arrow.Date64FromTime(at))
			}
		}
	}
	rec := b.NewRecordBatch()
	defer rec.Release()

	want := func(at time.Time, c column, part expr.TimeUnit) int {
		unit := arrow.Nanosecond
		if ts, ok := c.field.Type.(*arrow.TimestampType); ok {
			unit = ts.Unit
		}
		at = at.Truncate(unit.Multiplier()).In(c.loc) // down, as the column stores it
		if c.day {
			y, m, d := at.UTC().Date()
			at = time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
		}
		_, week := at.ISOWeek()
		return map[expr.TimeUnit]int{
			expr.Year: at.Year(), expr.Quarter: (int(at.Month())-1)/3 + 1, expr.Month: int(at.Month()), expr.Week: week,
			expr.Day: at.Day(), expr.Weekday: (int(at.Weekday())+6)%7 + 1, expr.YearDay: at.YearDay(),
			expr.Hour: at.Hour(), expr.Minute: at.Minute(), expr.Second: at.Second(),
		}[part]
	}
	for _, part := range []expr.TimeUnit{expr.Year, expr.Quarter, expr.Month, expr.Week, expr.Day, expr.Weekday,
		expr.YearDay, expr.Hour, expr.Minute, expr.Second} {
		for j, c := range cols {
			e := expr.Col(c.field.Name).Part(part)
			for _, e := range []expr.Expr{e, viaWire(t, e)} {
				out := evalOn(t, e, rec).(*array.Int32)
				bad := 0
				for row, at := range ats {
					if rec.Column(j).IsNull(row) {
						if out.IsValid(row) {
							t.Fatalf("%s, row %d: %d, want null", e, row, out.Value(row))
						}
						continue
					}
					if got, w := int(out.Value(row)), want(at, c, part); got != w && bad < 3 {
						bad++
						t.Errorf("%s of %s: %d, want %d", e, at.In(c.loc).Format(time.RFC3339Nano), got, w)
					}
				}
				out.Release()
			}
		}
	}

	// A column of seconds spanning 400,000 years in a zone with daylight
	// saving: the zone's spans are walked only so far, the rest looked up
	// one by one, all in agreement with Go.
	ny := locs[0]
	farType := &arrow.TimestampType{Unit: arrow.Second, TimeZone: ny.String()}
	fb := array.NewTimestampBuilder(memory.DefaultAllocator, farType)
	var fars []int64
	for range 2000 {
		v := r.Int64N(2*200_000*365*86400) - 200_000*365*86400
		fars = append(fars, v)
		fb.Append(arrow.Timestamp(v))
	}
	farCol := fb.NewArray()
	fb.Release()
	far := array.NewRecordBatch(arrow.NewSchema([]arrow.Field{{Name: "far", Type: farType}}, nil), []arrow.Array{farCol}, int64(len(fars)))
	farCol.Release()
	defer far.Release()
	for _, part := range []expr.TimeUnit{expr.Year, expr.Hour, expr.Weekday} {
		out := evalOn(t, expr.Col("far").Part(part), far).(*array.Int32)
		for i, v := range fars {
			at := time.Unix(v, 0).In(ny)
			w := map[expr.TimeUnit]int{expr.Year: at.Year(), expr.Hour: at.Hour(), expr.Weekday: (int(at.Weekday())+6)%7 + 1}[part]
			if int(out.Value(i)) != w {
				t.Fatalf("%s of %d (%s): %d, want %d", part, v, at, out.Value(i), w)
			}
		}
		out.Release()
	}

	s := rec.Schema()
	for _, c := range []struct {
		e    expr.Expr
		want string
	}{
		{expr.Col("day32").Part("fortnight"), `part "fortnight"`},
		{expr.Lit(3).Part(expr.Year), "a timestamp or a date"},
		{expr.Col("day32").Truncate(expr.Weekday), `truncate to "weekday"`},
	} {
		_, err := c.e.Bind(s)
		var xe *expr.Error
		if !errors.As(err, &xe) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an *expr.Error saying %q", c.e, err, c.want)
		}
	}
}

// BenchmarkPart is Part(Weekday) and Part(Year) over a batch of a
// million New York timestamps against the loop a Go user would write
// (time.Time's In and its accessors per value), and Truncate(Month)
// (Arrow's floor_temporal) for scale.
func BenchmarkPart(b *testing.B) {
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		b.Skip("no time zone data:", err)
	}
	const n = 1 << 20
	typ := &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "America/New_York"}
	tb := array.NewTimestampBuilder(memory.DefaultAllocator, typ)
	r := rand.New(rand.NewPCG(1, 2))
	base := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC).UnixMicro()
	for range n {
		tb.Append(arrow.Timestamp(base + r.Int64N(10*365*86400e6)))
	}
	col := tb.NewArray()
	tb.Release()
	rec := array.NewRecordBatch(arrow.NewSchema([]arrow.Field{{Name: "at", Type: typ}}, nil), []arrow.Array{col}, n)
	col.Release()
	defer rec.Release()
	benchEval(b, rec, namedExpr{"weekday", expr.Col("at").Part(expr.Weekday)}, namedExpr{"year", expr.Col("at").Part(expr.Year)},
		namedExpr{"truncate_month", expr.Col("at").Truncate(expr.Month)})
	vals := rec.Column(0).(*array.Timestamp).Values()
	out := make([]int32, n)
	b.Run("go_loop_weekday", func(b *testing.B) {
		for b.Loop() {
			for i, v := range vals {
				out[i] = int32((time.UnixMicro(int64(v)).In(ny).Weekday()+6)%7 + 1)
			}
		}
		perValue(b, n)
	})
	b.Run("go_loop_year", func(b *testing.B) {
		for b.Loop() {
			for i, v := range vals {
				out[i] = int32(time.UnixMicro(int64(v)).In(ny).Year())
			}
		}
		perValue(b, n)
	})
}

// TestDurations: a timestamp less a timestamp is a duration, a timestamp
// plus or less a duration a timestamp, durations add, subtract, compare
// with each other and with a time.Duration, go through IsIn, Cast to
// int64 and Total; each row agrees with Go's time arithmetic, nulls stay null,
// through the wire too; a date plus or less a duration is a timestamp in
// no zone. A zoned timestamp less a naive one and a product of durations
// are bind errors.
func TestDurations(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 8))
	s := arrow.NewSchema([]arrow.Field{
		{Name: "start", Type: &arrow.TimestampType{Unit: arrow.Millisecond, TimeZone: "UTC"}, Nullable: true},
		{Name: "end", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, Nullable: true},
		{Name: "naive", Type: &arrow.TimestampType{Unit: arrow.Microsecond}, Nullable: true},
		{Name: "day", Type: arrow.FixedWidthTypes.Date32, Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, s)
	defer b.Release()
	const n = 2000
	starts, ends := make([]time.Time, n), make([]time.Time, n)
	valid := make([]bool, n)
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range n {
		starts[i] = base.Add(time.Duration(r.Int64N(int64(90*24*time.Hour))) / time.Millisecond * time.Millisecond)
		ends[i] = starts[i].Add(time.Duration(r.Int64N(int64(3*time.Hour))-int64(time.Hour)) / time.Microsecond * time.Microsecond)
		valid[i] = i%13 != 4
		if !valid[i] {
			for j := range 4 {
				b.Field(j).AppendNull()
			}
			continue
		}
		b.Field(0).(*array.TimestampBuilder).Append(arrow.Timestamp(starts[i].UnixMilli()))
		b.Field(1).(*array.TimestampBuilder).Append(arrow.Timestamp(ends[i].UnixMicro()))
		b.Field(2).(*array.TimestampBuilder).Append(arrow.Timestamp(ends[i].UnixMicro()))
		b.Field(3).(*array.Date32Builder).Append(arrow.Date32FromTime(starts[i]))
	}
	rec := b.NewRecordBatch()
	defer rec.Release()

	took := expr.Col("end").Sub(expr.Col("start"))
	day := func(at time.Time) time.Time { y, m, d := at.Date(); return time.Date(y, m, d, 0, 0, 0, 0, time.UTC) }
	for _, c := range []struct {
		e    expr.Expr
		typ  string
		want func(i int) any
	}{
		{took, "duration[us]", func(i int) any { return ends[i].Sub(starts[i]) }},
		{expr.Col("start").Add(90 * time.Minute), "timestamp[ms, tz=UTC]", func(i int) any { return starts[i].Add(90 * time.Minute) }},
		{expr.Col("start").Sub(time.Nanosecond), "timestamp[ns, tz=UTC]", func(i int) any { return starts[i].Add(-time.Nanosecond) }},
		{expr.Lit(time.Second).Add(expr.Col("end")), "timestamp[us, tz=UTC]", func(i int) any { return ends[i].Add(time.Second) }},
		{took.Add(took), "duration[us]", func(i int) any { return 2 * ends[i].Sub(starts[i]) }},
		{took.Gt(30 * time.Minute), "bool", func(i int) any { return ends[i].Sub(starts[i]) > 30*time.Minute }},
		{took.Lt(expr.Lit(time.Duration(0))), "bool", func(i int) any { return ends[i].Sub(starts[i]) < 0 }},
		{expr.Col("end").Sub(base), "duration[us]", func(i int) any { return ends[i].Sub(base) }},
		{expr.Col("day").Sub(expr.Col("day").Cast(arrow.FixedWidthTypes.Date64)), "duration[ms]", func(i int) any { return time.Duration(0) }},
		{expr.Col("end").Sub(expr.Col("day")), "duration[us]", func(i int) any { return ends[i].Sub(day(starts[i])) }},
		{took.Cast(arrow.PrimitiveTypes.Int64), "int64", func(i int) any { return int64(ends[i].Sub(starts[i]) / time.Microsecond) }},
		{took.Total(expr.Minute), "float64", func(i int) any { return ends[i].Sub(starts[i]).Minutes() }},
		{expr.Col("day").Sub(expr.Col("day")).Add(48 * time.Hour).Total(expr.Day), "float64", func(i int) any { return 2.0 }},
		{expr.Col("day").Add(36 * time.Hour), "timestamp[s]", func(i int) any { return day(starts[i]).Add(36 * time.Hour) }},
		{expr.Lit(time.Millisecond).Add(expr.Col("day").Cast(arrow.FixedWidthTypes.Date64)), "timestamp[ms]",
			func(i int) any { return day(starts[i]).Add(time.Millisecond) }},
		{expr.Col("day").Sub(took), "timestamp[us]", func(i int) any { return day(starts[i]).Add(-ends[i].Sub(starts[i])) }},
		{took.IsIn(ends[0].Sub(starts[0]), ends[1].Sub(starts[1])), "bool", func(i int) any {
			d := ends[i].Sub(starts[i])
			return d == ends[0].Sub(starts[0]) || d == ends[1].Sub(starts[1])
		}},
	} {
		for _, e := range []expr.Expr{c.e, viaWire(t, c.e)} {
			out := evalOn(t, e, rec)
			if got := out.DataType().String(); got != c.typ {
				t.Fatalf("%s: %s, want %s", e, got, c.typ)
			}
			for i := range n {
				if !valid[i] {
					if out.IsValid(i) {
						t.Fatalf("%s, row %d: a value, want null", e, i)
					}
					continue
				}
				var got any
				switch a := out.(type) {
				case *array.Duration:
					got = time.Duration(a.Value(i)) * a.DataType().(*arrow.DurationType).Unit.Multiplier()
				case *array.Timestamp:
					got = a.Value(i).ToTime(a.DataType().(*arrow.TimestampType).Unit)
				case *array.Boolean:
					got = a.Value(i)
				case *array.Int64:
					got = a.Value(i)
				case *array.Float64:
					got = a.Value(i)
				}
				w := c.want(i)
				if wt, ok := w.(time.Time); ok {
					if gt, ok := got.(time.Time); !ok || !gt.Equal(wt) {
						t.Fatalf("%s, row %d: %v, want %v", e, i, got, wt)
					}
				} else if got != w {
					t.Fatalf("%s, row %d: %v, want %v", e, i, got, w)
				}
			}
			out.Release()
		}
	}

	for _, c := range []struct {
		e    expr.Expr
		want string
	}{
		{expr.Lit(time.Hour).Sub(expr.Col("day")), "takes a time and a duration"},
		{expr.Col("end").Sub(expr.Col("naive")), "takes a time and a duration"},
		{took.Mul(2), "numbers"},
		{took.Neg(), "a signed number"},
		{expr.Lit(time.Hour).Sub(expr.Col("end")), "takes a time and a duration"},
		{took.Total(expr.Month), `total in "month"`},
		{expr.Col("end").Total(expr.Hour), "a duration"},
	} {
		_, err := c.e.Bind(s)
		var xe *expr.Error
		if !errors.As(err, &xe) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an *expr.Error saying %q", c.e, err, c.want)
		}
	}
}

// TestParseTime: strings in a Go layout become timestamp[us, UTC] (a
// layout with an offset keeps the instant), runs of one string and nulls
// included, through the wire too; a value not in the layout fails the
// evaluation naming the value and its row; a non-string is a bind error.
func TestParseTime(t *testing.T) {
	for _, c := range []struct {
		layout string
		in     []string // "" is a null
	}{
		{"01/02/2006", []string{"11/27/2026", "11/27/2026", "", "02/29/2024", "12/31/1899"}},
		{"2006-01-02 15:04:05 -0700", []string{"2026-11-27 10:00:00 +0100", "", "2026-11-27 10:00:00 -0530"}},
		{time.RFC3339Nano, []string{"2026-11-27T10:00:00.123456Z", "1970-01-01T00:00:00Z"}},
	} {
		b := array.NewStringBuilder(memory.DefaultAllocator)
		for _, v := range c.in {
			if v == "" {
				b.AppendNull()
			} else {
				b.Append(v)
			}
		}
		col := b.NewArray()
		b.Release()
		rec := array.NewRecordBatch(arrow.NewSchema([]arrow.Field{{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true}}, nil), []arrow.Array{col}, int64(col.Len()))
		col.Release()
		e := expr.Col("s").ParseTime(c.layout)
		for _, e := range []expr.Expr{e, viaWire(t, e)} {
			out := evalOn(t, e, rec).(*array.Timestamp)
			if got := out.DataType().String(); got != "timestamp[us, tz=UTC]" {
				t.Fatalf("%s: %s", e, got)
			}
			for i, v := range c.in {
				if v == "" {
					if out.IsValid(i) {
						t.Fatalf("%s, row %d: a value, want null", e, i)
					}
					continue
				}
				want, err := time.Parse(c.layout, v)
				if err != nil {
					t.Fatal(err)
				}
				if got := out.Value(i).ToTime(arrow.Microsecond); !got.Equal(want) {
					t.Fatalf("%s of %q: %v, want %v", e, v, got, want)
				}
			}
			out.Release()
		}
		rec.Release()
	}

	b := array.NewStringBuilder(memory.DefaultAllocator)
	b.AppendValues([]string{"11/27/2026", "2026-11-27"}, nil)
	col := b.NewArray()
	b.Release()
	s := arrow.NewSchema([]arrow.Field{{Name: "s", Type: arrow.BinaryTypes.String}, {Name: "n", Type: arrow.PrimitiveTypes.Int64}}, nil)
	nb := array.NewInt64Builder(memory.DefaultAllocator)
	nb.AppendValues([]int64{1, 2}, nil)
	ncol := nb.NewArray()
	nb.Release()
	rec := array.NewRecordBatch(s, []arrow.Array{col, ncol}, 2)
	col.Release()
	ncol.Release()
	defer rec.Release()
	bd, err := expr.Col("s").ParseTime("01/02/2006").Bind(s)
	if err != nil {
		t.Fatal(err)
	}
	if out, err := bd.Eval(context.Background(), rec); err == nil || !strings.Contains(err.Error(), `row 1: "2026-11-27" is not a time in the layout "01/02/2006"`) {
		if out != nil {
			out.Release()
		}
		t.Fatalf("a value not in the layout: %v", err)
	}
	for _, c := range []struct {
		e    expr.Expr
		want string
	}{
		{expr.Col("n").ParseTime("2006"), "a string"},
		{expr.Col("s").ParseTime(""), "empty layout"},
	} {
		_, err := c.e.Bind(s)
		var xe *expr.Error
		if !errors.As(err, &xe) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an *expr.Error saying %q", c.e, err, c.want)
		}
	}
}

// TestAddMonths: dates and timestamps (every unit; UTC, no zone, zones
// with daylight saving and a half-hour offset) from 1900 to 2100 plus
// months from -30 to 30, against Go's calendar with the day clamped to
// the month's last; month ends and leap days; nulls stay null; through
// the wire too.
func TestAddMonths(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	const n = 3000
	lo, hi := time.Date(1900, 1, 1, 0, 0, 0, 0, time.UTC).Unix(), time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC).Unix()
	times := make([]time.Time, n)
	for i := range times {
		times[i] = time.Unix(lo+r.Int64N(hi-lo), r.Int64N(1e9)).UTC()
		if i%7 == 0 { // a month's last day, a leap day
			y, m, _ := times[i].Date()
			times[i] = time.Date(y, m+1, 0, times[i].Hour(), 0, 0, 0, time.UTC)
		}
	}
	times[0] = time.Date(2024, 2, 29, 23, 59, 59, 0, time.UTC)
	times[1] = time.Date(1969, 12, 31, 12, 0, 0, 0, time.UTC) // before the epoch
	ref := func(at time.Time, months int) time.Time {
		y, m, d := at.Date()
		first := time.Date(y, m+time.Month(months), 1, 0, 0, 0, 0, at.Location())
		last := time.Date(first.Year(), first.Month()+1, 0, 0, 0, 0, 0, at.Location()).Day()
		return time.Date(first.Year(), first.Month(), min(d, last), at.Hour(), at.Minute(), at.Second(), at.Nanosecond(), at.Location())
	}
	for _, c := range []struct {
		typ arrow.DataType
		loc *time.Location
	}{
		{arrow.FixedWidthTypes.Date32, time.UTC},
		{arrow.FixedWidthTypes.Date64, time.UTC},
		{&arrow.TimestampType{Unit: arrow.Second}, time.UTC},
		{&arrow.TimestampType{Unit: arrow.Millisecond, TimeZone: "UTC"}, time.UTC},
		{&arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "America/New_York"}, mustZone(t, "America/New_York")},
		{&arrow.TimestampType{Unit: arrow.Nanosecond, TimeZone: "Asia/Kolkata"}, mustZone(t, "Asia/Kolkata")},
	} {
		s := arrow.NewSchema([]arrow.Field{{Name: "t", Type: c.typ, Nullable: true}}, nil)
		b := array.NewRecordBuilder(memory.DefaultAllocator, s)
		in := make([]time.Time, n)
		for i, at := range times {
			switch c.typ.ID() {
			case arrow.DATE32, arrow.DATE64:
				at = time.Date(at.Year(), at.Month(), at.Day(), 0, 0, 0, 0, time.UTC)
			case arrow.TIMESTAMP:
				u := c.typ.(*arrow.TimestampType).Unit
				at = at.Truncate(u.Multiplier())
				if c.loc != time.UTC { // the same wall time in the zone
					at = time.Date(at.Year(), at.Month(), at.Day(), at.Hour(), at.Minute(), at.Second(), at.Nanosecond(), c.loc)
				}
			}
			in[i] = at
			if i%11 == 5 {
				b.Field(0).AppendNull()
				continue
			}
			switch fb := b.Field(0).(type) {
			case *array.Date32Builder:
				fb.Append(arrow.Date32FromTime(at))
			case *array.Date64Builder:
				fb.Append(arrow.Date64FromTime(at))
			case *array.TimestampBuilder:
				ts, err := arrow.TimestampFromTime(at, c.typ.(*arrow.TimestampType).Unit)
				if err != nil {
					t.Fatal(err)
				}
				fb.Append(ts)
			}
		}
		rec := b.NewRecordBatch()
		b.Release()
		for _, months := range []int{0, 1, -1, 12, -13, 30, -30, r.IntN(61) - 30} {
			e := expr.Col("t").AddMonths(months)
			for _, e := range []expr.Expr{e, viaWire(t, e)} {
				out := evalOn(t, e, rec)
				if !arrow.TypeEqual(out.DataType(), c.typ) {
					t.Fatalf("%s of %s: %s", e, c.typ, out.DataType())
				}
				for i := range n {
					if i%11 == 5 {
						if out.IsValid(i) {
							t.Fatalf("%s of %s, row %d: a value, want null", e, c.typ, i)
						}
						continue
					}
					var got time.Time
					switch a := out.(type) {
					case *array.Date32:
						got = a.Value(i).ToTime()
					case *array.Date64:
						got = a.Value(i).ToTime()
					case *array.Timestamp:
						got = a.Value(i).ToTime(c.typ.(*arrow.TimestampType).Unit)
					}
					if want := ref(in[i], months); !got.Equal(want) {
						t.Fatalf("%s of %s, row %d (%s): %s, want %s", e, c.typ, i, in[i], got.In(c.loc), want)
					}
				}
				out.Release()
			}
		}
		rec.Release()
	}
	s := arrow.NewSchema([]arrow.Field{{Name: "n", Type: arrow.PrimitiveTypes.Int64}, {Name: "d", Type: arrow.FixedWidthTypes.Date32}}, nil)
	for _, c := range []struct {
		e    expr.Expr
		want string
	}{
		{expr.Col("n").AddMonths(1), "a timestamp or a date"},
		{expr.Col("d").AddMonths(120001), "from -120000 to 120000"},
	} {
		_, err := c.e.Bind(s)
		var xe *expr.Error
		if !errors.As(err, &xe) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an *expr.Error saying %q", c.e, err, c.want)
		}
	}
	if got := expr.Col("d").AddMonths(-3).String(); got != `col("d").add_months(-3)` {
		t.Errorf("String: %s", got)
	}
}

func mustZone(t *testing.T, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Fatal(err)
	}
	return loc
}
