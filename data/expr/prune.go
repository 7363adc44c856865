package expr

import (
	"cmp"
	"math"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/scalar"
)

// ColumnStats is what a chunk of rows (a Parquet row group) records of
// one column: its smallest and largest values, when known, and how many
// of its rows are null.
type ColumnStats struct {
	// Min and Max are int64, uint64, float64, string or bool values; nil
	// when the chunk does not record them. A timestamp's are int64 in its
	// type's unit, a date32's days and a date64's milliseconds, as int64.
	Min, Max any
	// Nulls is the count of null rows, -1 when unknown.
	Nulls int64
	// Rows is the count of rows.
	Rows int64
	// Type is the column's type: a literal compared with the column is
	// judged in that type, as it is computed (0.1 beside a float32
	// column is float32(0.1)).
	Type arrow.DataType
}

// MayMatch says whether a row of a chunk may make the condition e true,
// judging by the statistics of its columns (stats reports false for a
// column it has none of): false only when no row can. Comparisons of a
// column with a literal or another column, And, Or, Not, IsNull,
// IsNotNull and IsIn are judged; any other part may be anything.
func (e Expr) MayMatch(stats func(column string) (ColumnStats, bool)) bool {
	t, _ := truth(e.n, stats)
	return t
}

// truth says whether n may be true and whether it may be false for a row
// of the chunk (a null is neither).
func truth(n *node, stats func(string) (ColumnStats, bool)) (mayTrue, mayFalse bool) {
	if n == nil || n.err != nil {
		return true, true
	}
	switch n.op {
	case opAlias:
		return truth(n.args[0], stats)
	case opAnd:
		lt, lf := truth(n.args[0], stats)
		rt, rf := truth(n.args[1], stats)
		return lt && rt, lf || rf
	case opOr:
		lt, lf := truth(n.args[0], stats)
		rt, rf := truth(n.args[1], stats)
		return lt || rt, lf && rf
	case opNot:
		t, f := truth(n.args[0], stats)
		return f, t
	case opLit:
		if b, ok := litValue(n.lit).(bool); ok {
			return b, !b
		}
		if n.lit.kind == litNull {
			return false, false
		}
	case opIsNull, opIsNotNull:
		r := rangeOf(n.args[0], stats, nil)
		if !r.known || r.nulls < 0 {
			return true, true
		}
		someNull, someValue := r.nulls > 0, r.nulls < r.rows
		if n.op == opIsNull {
			return someNull, someValue
		}
		return someValue, someNull
	case opEq, opNe, opLt, opLe, opGt, opGe:
		a, b := rangeOf(n.args[0], stats, colType(n.args[1], stats)), rangeOf(n.args[1], stats, colType(n.args[0], stats))
		if !a.known || !b.known {
			return true, true
		}
		if a.allNull() || b.allNull() {
			return false, false
		}
		t, f := compareRanges(n.op, a, b)
		if a.mayNaN || b.mayNaN { // NaN != x is true, NaN < x false...
			t, f = t || n.op == opNe, f || n.op != opNe
		}
		return t, f
	case opIsIn:
		r := rangeOf(n.args[0], stats, nil)
		if !r.known {
			return true, true
		}
		if r.allNull() {
			return false, false
		}
		t := colType(n.args[0], stats)
		for _, l := range n.set {
			v := litValueIn(l, t)
			lo, ok1 := compareValues(v, r.lo)
			hi, ok2 := compareValues(v, r.hi)
			if !ok1 || !ok2 || lo >= 0 && hi <= 0 {
				return true, true
			}
		}
		return false, true
	}
	return true, true
}

// valueRange is what is known of an operand's values in a chunk.
type valueRange struct {
	known  bool
	lo, hi any   // known: every value is within [lo, hi] (or NaN, when mayNaN)
	nulls  int64 // -1: unknown
	rows   int64
	// mayNaN: floats, which statistics record without their NaNs
	// (Parquet's rule), and a NaN compares false with anything
	mayNaN bool
}

func (r valueRange) allNull() bool { return r.nulls >= 0 && r.nulls == r.rows && r.rows > 0 }

// colType is the type of n when it is a column with statistics.
func colType(n *node, stats func(string) (ColumnStats, bool)) arrow.DataType {
	for n.op == opAlias {
		n = n.args[0]
	}
	if n.op != opCol {
		return nil
	}
	s, ok := stats(n.name)
	if !ok {
		return nil
	}
	return s.Type
}

// rangeOf is what the statistics say of n's values; partner is the type
// of the column n is compared with, if it is one.
func rangeOf(n *node, stats func(string) (ColumnStats, bool), partner arrow.DataType) valueRange {
	switch n.op {
	case opAlias:
		return rangeOf(n.args[0], stats, partner)
	case opCol:
		s, ok := stats(n.name)
		if !ok {
			return valueRange{}
		}
		r := valueRange{nulls: s.Nulls, rows: s.Rows}
		_, f1 := s.Min.(float64)
		_, f2 := s.Max.(float64)
		r.mayNaN = f1 || f2
		if s.Min != nil && s.Max != nil && !isNaN(s.Min) && !isNaN(s.Max) {
			r.known, r.lo, r.hi = true, s.Min, s.Max
		} else if r.allNull() {
			r.known = true
		}
		return r
	case opLit:
		v := litValueIn(n.lit, partner)
		if v == nil {
			return valueRange{known: true, nulls: 1, rows: 1}
		}
		if isNaN(v) {
			return valueRange{}
		}
		return valueRange{known: true, lo: v, hi: v, nulls: 0, rows: 1}
	}
	return valueRange{}
}

// compareRanges judges a comparison of two operands whose values lie in
// ranges a and b.
func compareRanges(op string, a, b valueRange) (mayTrue, mayFalse bool) {
	// c(x, y) compares two bounds; an incomparable pair is unknown
	loHi, ok1 := compareValues(a.lo, b.hi) // a's smallest against b's largest
	hiLo, ok2 := compareValues(a.hi, b.lo)
	loLo, ok3 := compareValues(a.lo, b.lo)
	hiHi, ok4 := compareValues(a.hi, b.hi)
	if !ok1 || !ok2 || !ok3 || !ok4 {
		return true, true
	}
	single := loHi == 0 && hiLo == 0 && loLo == 0 && hiHi == 0 // both one same value
	switch op {
	case opLt:
		return loHi < 0, hiLo >= 0
	case opLe:
		return loHi <= 0, hiLo > 0
	case opGt:
		return hiLo > 0, loHi <= 0
	case opGe:
		return hiLo >= 0, loHi < 0
	case opEq:
		overlap := loHi <= 0 && hiLo >= 0
		return overlap, !single
	}
	overlap := loHi <= 0 && hiLo >= 0
	return !single, overlap // ne
}

// litValueIn is a literal's value as statistics hold them, converted to
// the type it takes beside a column of type t (nil: none).
func litValueIn(l literal, t arrow.DataType) any {
	if t == nil || l.kind == litNull {
		return litValue(l)
	}
	sc, err := l.scalarOf(l.adapt(t))
	if err != nil {
		return litValue(l)
	}
	switch s := sc.(type) {
	case *scalar.Float32:
		return float64(s.Value)
	case *scalar.Float64:
		return s.Value
	case *scalar.Timestamp:
		return int64(s.Value)
	case *scalar.Date32:
		return int64(s.Value)
	case *scalar.Date64:
		return int64(s.Value)
	}
	return litValue(l)
}

// litValue is a literal's value as statistics hold them.
func litValue(l literal) any {
	switch l.kind {
	case litNull:
		return nil
	case litInt:
		return l.i
	case litFloat:
		return l.f
	case litTime:
		return l.t // compares with no statistics value: beside a time column, litValueIn gives its number
	case litDuration:
		return time.Duration(l.i) // compares with no statistics value
	}
	switch {
	case isString(l.typ):
		return l.s
	case isBool(l.typ):
		return l.b
	case isFloat(l.typ):
		return l.f
	case isSigned(l.typ):
		return l.i
	}
	return l.u
}

func isNaN(v any) bool {
	f, ok := v.(float64)
	return ok && math.IsNaN(f)
}

// compareValues orders two statistics values: numbers of any kind among
// themselves, strings, bools; false when they do not compare.
func compareValues(a, b any) (int, bool) {
	switch x := a.(type) {
	case string:
		y, ok := b.(string)
		return cmp.Compare(x, y), ok
	case bool:
		y, ok := b.(bool)
		if !ok {
			return 0, false
		}
		switch {
		case x == y:
			return 0, true
		case !x:
			return -1, true
		}
		return 1, true
	}
	return compareNumbers(a, b)
}

func compareNumbers(a, b any) (int, bool) {
	switch x := a.(type) {
	case int64:
		switch y := b.(type) {
		case int64:
			return cmp.Compare(x, y), true
		case uint64:
			if x < 0 {
				return -1, true
			}
			return cmp.Compare(uint64(x), y), true
		case float64:
			return cmp.Compare(float64(x), y), true
		}
	case uint64:
		switch y := b.(type) {
		case uint64:
			return cmp.Compare(x, y), true
		case int64:
			c, ok := compareNumbers(y, x)
			return -c, ok
		case float64:
			return cmp.Compare(float64(x), y), true
		}
	case float64:
		switch y := b.(type) {
		case float64:
			return cmp.Compare(x, y), true
		case int64, uint64:
			c, ok := compareNumbers(y, x)
			return -c, ok
		}
	}
	return 0, false
}
