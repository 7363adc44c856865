package expr

import (
	"fmt"
	"strconv"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// maxMonths bounds AddMonths' count: ten thousand years either way.
const maxMonths = 12 * 10000

// addMonths adds n (the text of an int) calendar months to each time of
// arr, a timestamp or a date array: the day clamped to the new month's
// last, the time of day kept. Dates and timestamps in UTC or in no zone
// go through integer calendar arithmetic; a zoned timestamp through its
// zone's wall clock (Go's time.Date, which moves a wall time in a
// daylight-saving gap forward).
func addMonths(mem memory.Allocator, arr arrow.Array, count string) (arrow.Array, error) {
	n, err := strconv.Atoi(count)
	if err != nil {
		return nil, fmt.Errorf("expr: add_months(%q)", count)
	}
	size := arr.Len()
	switch a := arr.(type) {
	case *array.Date32:
		buf, out := fixedBuffer[arrow.Date32](mem, size)
		for i, v := range a.Date32Values() {
			out[i] = arrow.Date32(addMonthsToDays(int64(v), n))
		}
		return finish(a.DataType(), size, nullsOf(mem, arr), buf), nil
	case *array.Date64:
		buf, out := fixedBuffer[arrow.Date64](mem, size)
		for i, v := range a.Date64Values() {
			out[i] = arrow.Date64(addMonthsInUnits(int64(v), 86400*1000, n))
		}
		return finish(a.DataType(), size, nullsOf(mem, arr), buf), nil
	case *array.Timestamp:
		typ := a.DataType().(*arrow.TimestampType)
		loc, err := typ.GetZone()
		if err != nil {
			return nil, fmt.Errorf("expr: %s: %w", typ, err)
		}
		buf, out := fixedBuffer[arrow.Timestamp](mem, size)
		perSec := int64(time.Second / typ.Unit.Multiplier())
		vals := a.TimestampValues()
		if loc == time.UTC {
			for i, v := range vals {
				out[i] = arrow.Timestamp(addMonthsInUnits(int64(v), 86400*perSec, n))
			}
		} else {
			for i, v := range vals {
				if a.IsNull(i) {
					continue
				}
				t := v.ToTime(typ.Unit).In(loc)
				y, m, d := t.Date()
				ny, nm := monthsAfter(int64(y), int64(m), n)
				d = min(d, int(daysInMonth(ny, nm)))
				at := time.Date(int(ny), time.Month(nm), d, t.Hour(), t.Minute(), t.Second(), t.Nanosecond(), loc)
				ts, err := arrow.TimestampFromTime(at, typ.Unit)
				if err != nil {
					return nil, fmt.Errorf("expr: add_months(%d) of %s: %w", n, t, err)
				}
				out[i] = ts
			}
		}
		return finish(typ, size, nullsOf(mem, arr), buf), nil
	}
	return nil, fmt.Errorf("expr: add_months of a %s", arr.DataType())
}

// addMonthsInUnits adds n months to v, a count of units since the epoch
// with perDay units a day, keeping its time of day.
func addMonthsInUnits(v, perDay int64, n int) int64 {
	days := floorDiv(v, perDay)
	return addMonthsToDays(days, n)*perDay + (v - days*perDay)
}

// addMonthsToDays adds n months to a day counted from 1970-01-01, its day
// of the month clamped to the new month's last.
func addMonthsToDays(days int64, n int) int64 {
	y, m, d := civil(days)
	ny, nm := monthsAfter(y, m, n)
	return daysFromCivil(ny, nm, min(d, daysInMonth(ny, nm)))
}

// monthsAfter is the year and month n months after month m of year y.
func monthsAfter(y, m int64, n int) (int64, int64) {
	total := y*12 + m - 1 + int64(n)
	ny := floorDiv(total, 12)
	return ny, total - ny*12 + 1
}

// daysInMonth is the number of days of month m of year y.
func daysInMonth(y, m int64) int64 {
	switch m {
	case 2:
		if y%4 == 0 && (y%100 != 0 || y%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}
