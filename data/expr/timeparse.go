package expr

import (
	"fmt"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// parseTimes reads each string of a in layout (Go's reference-time
// layout) into a timestamp[us, UTC]; a value that is not a time in the
// layout fails the evaluation, naming the value and its row. A run of
// equal strings (a sorted column of dates) is parsed once.
func parseTimes(mem memory.Allocator, a arrow.Array, layout string) (arrow.Array, error) {
	s, ok := a.(*array.String)
	if !ok {
		return nil, fmt.Errorf("expr: parse_time of %s", typeName(a.DataType()))
	}
	n := s.Len()
	values, out := fixedBuffer[arrow.Timestamp](mem, n)
	var last string
	var lastV arrow.Timestamp
	parsed := false
	for i := range n {
		if s.IsNull(i) {
			out[i] = 0
			continue
		}
		v := s.Value(i)
		if parsed && v == last {
			out[i] = lastV
			continue
		}
		t, err := time.Parse(layout, v)
		if err != nil {
			values.Release()
			return nil, fmt.Errorf("row %d: %q is not a time in the layout %q", i, v, layout)
		}
		ts, err := arrow.TimestampFromTime(t, arrow.Microsecond)
		if err != nil {
			values.Release()
			return nil, fmt.Errorf("row %d: %q: %v", i, v, err)
		}
		out[i], last, lastV, parsed = ts, v, ts, true
	}
	return finish(timeLitType, n, validityOf(mem, a), values), nil
}

// totalUnits are the units Total counts in, by their length.
var totalUnits = map[TimeUnit]time.Duration{
	Week: 7 * 24 * time.Hour, Day: 24 * time.Hour, Hour: time.Hour, Minute: time.Minute, Second: time.Second,
}

// totals is each duration of a as a float64 count of unit.
func totals(mem memory.Allocator, a arrow.Array, unit time.Duration) (arrow.Array, error) {
	d, ok := a.(*array.Duration)
	if !ok {
		return nil, fmt.Errorf("expr: total of %s", typeName(a.DataType()))
	}
	n := d.Len()
	values, out := fixedBuffer[float64](mem, n)
	// whole units and the rest apart, as time.Duration's Minutes() does
	k := int64(unit / d.DataType().(*arrow.DurationType).Unit.Multiplier()) // the column's units in unit
	for i, v := range d.DurationValues() {
		out[i] = float64(int64(v)/k) + float64(int64(v)%k)/float64(k)
	}
	return finish(arrow.PrimitiveTypes.Float64, n, validityOf(mem, a), values), nil
}
