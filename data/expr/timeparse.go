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
	values := memory.NewResizableBuffer(mem)
	values.Resize(arrow.TimestampTraits.BytesRequired(n))
	out := arrow.TimestampTraits.CastFromBytes(values.Bytes())
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
