package expr

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/scalar"
)

// The types expressions compute with: the integers, the floats, bool,
// string (Arrow utf8), timestamps and dates, which compare (with each
// other and with a time.Time), and durations (with a time.Duration); a
// timestamp less a timestamp is a duration, a timestamp plus a duration
// a timestamp. A column of another type can be selected, renamed and
// tested for null, not computed with.

// types are the types by the names expressions use (String, the wire).
var types = map[string]arrow.DataType{
	"bool": arrow.FixedWidthTypes.Boolean, "string": arrow.BinaryTypes.String,
	"int8": arrow.PrimitiveTypes.Int8, "int16": arrow.PrimitiveTypes.Int16, "int32": arrow.PrimitiveTypes.Int32, "int64": arrow.PrimitiveTypes.Int64,
	"uint8": arrow.PrimitiveTypes.Uint8, "uint16": arrow.PrimitiveTypes.Uint16, "uint32": arrow.PrimitiveTypes.Uint32, "uint64": arrow.PrimitiveTypes.Uint64,
	"float32": arrow.PrimitiveTypes.Float32, "float64": arrow.PrimitiveTypes.Float64,
	"date32": arrow.FixedWidthTypes.Date32, "date64": arrow.FixedWidthTypes.Date64,
}

// typeName is t's name in expressions: its Arrow name, "string" for utf8.
func typeName(t arrow.DataType) string {
	switch {
	case t == nil:
		return "<no type>"
	case t.ID() == arrow.STRING:
		return "string"
	case t.ID() == arrow.NULL:
		return "null"
	}
	return t.String()
}

// parseType is the type of a name typeName gives, among the types
// expressions compute with: a timestamp as Arrow names it
// (timestamp[us], timestamp[ns, tz=UTC]), with a zone Go knows.
func parseType(name string) (arrow.DataType, bool) {
	if t, ok := types[name]; ok {
		return t, ok
	}
	if rest, ok := strings.CutPrefix(name, "duration["); ok {
		for _, u := range []arrow.TimeUnit{arrow.Second, arrow.Millisecond, arrow.Microsecond, arrow.Nanosecond} {
			if rest == u.String()+"]" {
				return &arrow.DurationType{Unit: u}, true
			}
		}
		return nil, false
	}
	rest, ok := strings.CutPrefix(name, "timestamp[")
	if !ok || !strings.HasSuffix(rest, "]") {
		return nil, false
	}
	unit, zone, zoned := strings.Cut(strings.TrimSuffix(rest, "]"), ", tz=")
	for _, u := range []arrow.TimeUnit{arrow.Second, arrow.Millisecond, arrow.Microsecond, arrow.Nanosecond} {
		if u.String() != unit {
			continue
		}
		t := &arrow.TimestampType{Unit: u, TimeZone: zone}
		if zoned && (zone == "" || len(zone) > 64) {
			return nil, false
		}
		if _, err := t.GetZone(); err != nil {
			return nil, false
		}
		return t, true
	}
	return nil, false
}

// isTemporal says whether t is a timestamp or a date.
func isTemporal(t arrow.DataType) bool {
	switch t.ID() {
	case arrow.TIMESTAMP, arrow.DATE32, arrow.DATE64:
		return true
	}
	return false
}

// isDate says whether t is a date.
func isDate(t arrow.DataType) bool { return t.ID() == arrow.DATE32 || t.ID() == arrow.DATE64 }

// dateUnit is the unit a date is a timestamp in: seconds, milliseconds
// for a date64 (its own unit).
func dateUnit(t arrow.DataType) arrow.TimeUnit {
	if t.ID() == arrow.DATE64 {
		return arrow.Millisecond
	}
	return arrow.Second
}

// isDuration says whether t is a duration.
func isDuration(t arrow.DataType) bool { return t.ID() == arrow.DURATION }

// timeUnitOf is a timestamp's or a duration's unit.
func timeUnitOf(t arrow.DataType) arrow.TimeUnit {
	switch t := t.(type) {
	case *arrow.TimestampType:
		return t.Unit
	case *arrow.DurationType:
		return t.Unit
	}
	return arrow.Nanosecond
}

// commonTemporal is the type two temporal operands compare in: a date's
// and a timestamp's the timestamp's, two dates' date64 (unless both are
// date32), two timestamps' the finer unit; false for timestamps with a
// zone and without (an instant and a wall time: Cast one).
func commonTemporal(a, b arrow.DataType) (arrow.DataType, bool) {
	ta, aTS := a.(*arrow.TimestampType)
	tb, bTS := b.(*arrow.TimestampType)
	switch {
	case arrow.TypeEqual(a, b):
		return a, true
	case !aTS && !bTS:
		return arrow.FixedWidthTypes.Date64, true
	case !aTS:
		return b, true
	case !bTS:
		return a, true
	case (ta.TimeZone == "") != (tb.TimeZone == ""):
		return nil, false
	}
	return &arrow.TimestampType{Unit: max(ta.Unit, tb.Unit), TimeZone: ta.TimeZone}, true
}

func isInteger(t arrow.DataType) bool {
	switch t.ID() {
	case arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64, arrow.UINT8, arrow.UINT16, arrow.UINT32, arrow.UINT64:
		return true
	}
	return false
}

func isSigned(t arrow.DataType) bool {
	switch t.ID() {
	case arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64, arrow.FLOAT32, arrow.FLOAT64:
		return true
	}
	return false
}

func isFloat(t arrow.DataType) bool { return t.ID() == arrow.FLOAT32 || t.ID() == arrow.FLOAT64 }

func isNumeric(t arrow.DataType) bool { return isInteger(t) || isFloat(t) }

func isString(t arrow.DataType) bool { return t.ID() == arrow.STRING }

func isBool(t arrow.DataType) bool { return t.ID() == arrow.BOOL }

func isNull(t arrow.DataType) bool { return t.ID() == arrow.NULL }

// computable says whether expressions compute with t.
func computable(t arrow.DataType) bool {
	return isNumeric(t) || isString(t) || isBool(t) || isNull(t) || isTemporal(t) || isDuration(t)
}

func bits(t arrow.DataType) int { return t.(arrow.FixedWidthDataType).BitWidth() }

// intType is the integer type of a width and signedness.
func intType(width int, signed bool) arrow.DataType {
	switch {
	case width <= 8 && signed:
		return arrow.PrimitiveTypes.Int8
	case width <= 8:
		return arrow.PrimitiveTypes.Uint8
	case width <= 16 && signed:
		return arrow.PrimitiveTypes.Int16
	case width <= 16:
		return arrow.PrimitiveTypes.Uint16
	case width <= 32 && signed:
		return arrow.PrimitiveTypes.Int32
	case width <= 32:
		return arrow.PrimitiveTypes.Uint32
	case signed:
		return arrow.PrimitiveTypes.Int64
	}
	return arrow.PrimitiveTypes.Uint64
}

// commonNumeric is the type two numbers are computed in: the wider of
// two integers of a signedness; a signed integer wider than an unsigned
// one when they mix (int64 for uint64 and a signed type); a float when
// either is one (float32 only with float32 or integers of 16 bits or
// less, else float64).
func commonNumeric(a, b arrow.DataType) arrow.DataType {
	switch {
	case arrow.TypeEqual(a, b):
		return a
	case isFloat(a) || isFloat(b):
		f32 := func(t arrow.DataType) bool { return t.ID() == arrow.FLOAT32 || isInteger(t) && bits(t) <= 16 }
		if f32(a) && f32(b) {
			return arrow.PrimitiveTypes.Float32
		}
		return arrow.PrimitiveTypes.Float64
	case isSigned(a) == isSigned(b):
		return intType(max(bits(a), bits(b)), isSigned(a))
	}
	s, u := a, b
	if !isSigned(a) {
		s, u = b, a
	}
	return intType(max(bits(s), 2*bits(u)), true)
}

// litKind says how a literal is typed.
type litKind uint8

const (
	litNull     litKind = iota
	litInt              // a Go int: takes its operand's numeric type
	litFloat            // a float64: takes its operand's float type
	litTyped            // typed (typ)
	litTime             // a time.Time: takes its operand's timestamp or date type
	litDuration         // a time.Duration (i): takes its operand's unit where it is a whole number of them
)

// timeLitType is a time.Time literal's type on its own (microseconds
// hold every time.Time from year 1 on).
var timeLitType = &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}

// literal is a value of an expression.
type literal struct {
	kind litKind
	typ  arrow.DataType // litTyped
	i    int64          // signed integers, litInt
	u    uint64         // unsigned integers
	f    float64        // floats, litFloat
	s    string
	b    bool
	t    time.Time // litTime
}

func literalOf(v any) (literal, error) {
	switch x := v.(type) {
	case nil:
		return literal{kind: litNull}, nil
	case int:
		return literal{kind: litInt, i: int64(x)}, nil
	case float64:
		return literal{kind: litFloat, f: x}, nil
	case int64:
		return literal{kind: litTyped, typ: arrow.PrimitiveTypes.Int64, i: x}, nil
	case int32:
		return literal{kind: litTyped, typ: arrow.PrimitiveTypes.Int32, i: int64(x)}, nil
	case int16:
		return literal{kind: litTyped, typ: arrow.PrimitiveTypes.Int16, i: int64(x)}, nil
	case int8:
		return literal{kind: litTyped, typ: arrow.PrimitiveTypes.Int8, i: int64(x)}, nil
	case uint:
		return literal{kind: litTyped, typ: arrow.PrimitiveTypes.Uint64, u: uint64(x)}, nil
	case uint64:
		return literal{kind: litTyped, typ: arrow.PrimitiveTypes.Uint64, u: x}, nil
	case uint32:
		return literal{kind: litTyped, typ: arrow.PrimitiveTypes.Uint32, u: uint64(x)}, nil
	case uint16:
		return literal{kind: litTyped, typ: arrow.PrimitiveTypes.Uint16, u: uint64(x)}, nil
	case uint8:
		return literal{kind: litTyped, typ: arrow.PrimitiveTypes.Uint8, u: uint64(x)}, nil
	case float32:
		return literal{kind: litTyped, typ: arrow.PrimitiveTypes.Float32, f: float64(x)}, nil
	case string:
		return literal{kind: litTyped, typ: arrow.BinaryTypes.String, s: x}, nil
	case bool:
		return literal{kind: litTyped, typ: arrow.FixedWidthTypes.Boolean, b: x}, nil
	case time.Duration:
		return literal{kind: litDuration, i: int64(x)}, nil
	case time.Time:
		if y := x.UTC().Year(); y < 0 || y > 9999 {
			return literal{}, fmt.Errorf("a time literal in year %d (years 0 to 9999 only)", y)
		}
		return literal{kind: litTime, t: x.UTC()}, nil
	}
	return literal{}, fmt.Errorf("a literal of Go type %T (use nil, bool, string, an integer, a float, a time.Time or a time.Duration)", v)
}

func (l literal) String() string {
	switch l.kind {
	case litNull:
		return "null"
	case litInt:
		return strconv.FormatInt(l.i, 10)
	case litFloat:
		return strconv.FormatFloat(l.f, 'g', -1, 64)
	case litTime:
		return "time(" + l.t.Format(time.RFC3339Nano) + ")"
	case litDuration:
		return "duration(" + time.Duration(l.i).String() + ")"
	}
	switch {
	case isString(l.typ):
		return strconv.Quote(l.s)
	case isBool(l.typ):
		return strconv.FormatBool(l.b)
	case isFloat(l.typ):
		return typeName(l.typ) + "(" + strconv.FormatFloat(l.f, 'g', -1, 64) + ")"
	case isSigned(l.typ):
		return typeName(l.typ) + "(" + strconv.FormatInt(l.i, 10) + ")"
	}
	return typeName(l.typ) + "(" + strconv.FormatUint(l.u, 10) + ")"
}

// natural is the type of a literal on its own: int64 for a Go int,
// float64 for a float64, null for nil.
func (l literal) natural() arrow.DataType {
	switch l.kind {
	case litNull:
		return arrow.Null
	case litInt:
		return arrow.PrimitiveTypes.Int64
	case litFloat:
		return arrow.PrimitiveTypes.Float64
	case litTime:
		return timeLitType
	case litDuration:
		return arrow.FixedWidthTypes.Duration_ns
	}
	return l.typ
}

// adapt is the type a literal takes beside an operand of type t: an
// untyped int takes an integer type it fits in (else int64) or a float
// type; an untyped float a float type (else float64); others keep their
// own.
func (l literal) adapt(t arrow.DataType) arrow.DataType {
	switch l.kind {
	case litInt:
		switch {
		case isFloat(t):
			return t
		case isInteger(t) && fitsInt(l.i, t):
			return t
		case isInteger(t):
			return commonNumeric(t, arrow.PrimitiveTypes.Int64)
		}
	case litFloat:
		if isFloat(t) {
			return t
		}
	case litTime:
		if isTemporal(t) {
			return t
		}
	case litDuration:
		if isDuration(t) || t.ID() == arrow.TIMESTAMP || isDate(t) {
			u := timeUnitOf(t)
			if isDate(t) {
				u = dateUnit(t)
			}
			if l.i%int64(u.Multiplier()) == 0 {
				return &arrow.DurationType{Unit: u}
			}
		}
	}
	return l.natural()
}

// fitsInt says whether v is a value of the integer type t.
func fitsInt(v int64, t arrow.DataType) bool {
	if isSigned(t) {
		w := bits(t)
		return w == 64 || v >= -(1<<(w-1)) && v < 1<<(w-1)
	}
	w := bits(t)
	return v >= 0 && (w == 64 || v < 1<<w)
}

// scalarOf is the literal as a scalar of type t (after adapt, or a
// type the literal converts to exactly).
func (l literal) scalarOf(t arrow.DataType) (scalar.Scalar, error) {
	if l.kind == litNull {
		return scalar.MakeNullScalar(t), nil
	}
	bad := func() (scalar.Scalar, error) {
		return nil, fmt.Errorf("%s is not a %s", l, typeName(t))
	}
	if l.kind == litTime {
		switch t := t.(type) {
		case *arrow.TimestampType:
			ts, err := arrow.TimestampFromTime(l.t, t.Unit)
			if err != nil {
				return nil, fmt.Errorf("%s does not fit a %s", l, typeName(t))
			}
			return scalar.NewTimestampScalar(ts, t), nil
		case *arrow.Date32Type:
			return scalar.NewDate32Scalar(arrow.Date32FromTime(l.t)), nil
		case *arrow.Date64Type:
			return scalar.NewDate64Scalar(arrow.Date64FromTime(l.t)), nil
		}
		return bad()
	}
	if l.kind == litDuration {
		d, ok := t.(*arrow.DurationType)
		if !ok || l.i%int64(d.Unit.Multiplier()) != 0 {
			return bad()
		}
		return scalar.NewDurationScalar(arrow.Duration(l.i/int64(d.Unit.Multiplier())), d), nil
	}
	switch {
	case isString(t):
		if l.kind != litTyped || !isString(l.typ) {
			return bad()
		}
		return scalar.NewStringScalar(l.s), nil
	case isBool(t):
		if l.kind != litTyped || !isBool(l.typ) {
			return bad()
		}
		return scalar.NewBooleanScalar(l.b), nil
	case isFloat(t):
		var f float64
		switch {
		case l.kind == litInt:
			f = float64(l.i)
		case l.kind == litFloat:
			f = l.f
		case isFloat(l.typ):
			f = l.f
		case isInteger(l.typ) && isSigned(l.typ):
			f = float64(l.i)
		case isInteger(l.typ):
			f = float64(l.u)
		default:
			return bad()
		}
		if t.ID() == arrow.FLOAT32 {
			return scalar.NewFloat32Scalar(float32(f)), nil
		}
		return scalar.NewFloat64Scalar(f), nil
	case isInteger(t):
		var v int64
		var u uint64
		neg := false
		switch {
		case l.kind == litInt || l.kind == litTyped && isInteger(l.typ) && isSigned(l.typ):
			v, neg = l.i, l.i < 0
			u = uint64(l.i)
		case l.kind == litTyped && isInteger(l.typ):
			u = l.u
			if u > math.MaxInt64 {
				v = -1 // marks "too large for a signed type"
			} else {
				v = int64(u)
			}
		default:
			return bad()
		}
		if isSigned(t) {
			if v < 0 && !neg || !fitsInt(v, t) {
				return bad()
			}
		} else if neg || bits(t) < 64 && u >= 1<<bits(t) {
			return bad()
		}
		switch t.ID() {
		case arrow.INT8:
			return scalar.NewInt8Scalar(int8(v)), nil
		case arrow.INT16:
			return scalar.NewInt16Scalar(int16(v)), nil
		case arrow.INT32:
			return scalar.NewInt32Scalar(int32(v)), nil
		case arrow.INT64:
			return scalar.NewInt64Scalar(v), nil
		case arrow.UINT8:
			return scalar.NewUint8Scalar(uint8(u)), nil
		case arrow.UINT16:
			return scalar.NewUint16Scalar(uint16(u)), nil
		case arrow.UINT32:
			return scalar.NewUint32Scalar(uint32(u)), nil
		}
		return scalar.NewUint64Scalar(u), nil
	}
	return bad()
}
