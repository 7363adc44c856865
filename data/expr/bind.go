package expr

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/arrow/scalar"
)

// Bound is an expression checked against a schema: every column found,
// every operation typed, every literal converted to the type it is
// computed in, and a cast inserted wherever operands' types differ.
// Eval runs it over batches of that schema. A Bound is read-only: one
// may run in several goroutines at once.
type Bound struct {
	expr   Expr
	root   *bnode
	schema *arrow.Schema
}

// bnode is a typed operation.
type bnode struct {
	op      string
	typ     arrow.DataType
	col     int           // col: its index in the schema
	sc      scalar.Scalar // lit
	args    []*bnode
	set     arrow.Array // is_in: the values, of args[0]'s type
	pattern string      // contains, starts_with, ends_with; truncate: the unit; part: the part; parse_time: the layout
	hasElse bool        // case
	exact   bool        // cast: the user's (Cast), which fails on a value that does not convert exactly
	with    string      // replace: what replaces pattern
	start   int         // slice: the first character (negative: from the end)
	length  int         // slice: how many (negative: the rest)
}

// Bind checks e against schema s: the columns it names exist, and the
// operations get the types they take. Its error is an *Error naming the
// expression, the part at fault and the column or type.
func (e Expr) Bind(s *arrow.Schema) (*Bound, error) {
	b := &binder{root: e, schema: s}
	root, err := b.bind(e.n, nil)
	if err != nil {
		return nil, err
	}
	return &Bound{expr: e, root: root, schema: s}, nil
}

// Type is the type of the values the expression makes.
func (b *Bound) Type() arrow.DataType { return b.root.typ }

// Expr is the expression bound.
func (b *Bound) Expr() Expr { return b.expr }

// Schema is the schema the expression was bound to.
func (b *Bound) Schema() *arrow.Schema { return b.schema }

// TypeOf is the type e makes over schema s (Bind's checks).
func (e Expr) TypeOf(s *arrow.Schema) (arrow.DataType, error) {
	b, err := e.Bind(s)
	if err != nil {
		return nil, err
	}
	return b.Type(), nil
}

type binder struct {
	root   Expr
	schema *arrow.Schema
}

// fail is an *Error about part n.
func (b *binder) fail(n *node, format string, args ...any) *Error {
	return &Error{Expr: b.root.String(), Part: Expr{n}.String(), Message: fmt.Sprintf(format, args...)}
}

// typeFail is an *Error about the type of operand a of n.
func (b *binder) typeFail(n *node, a *node, t arrow.DataType, want string) *Error {
	e := b.fail(n, "%s is %s; %s needs %s", Expr{a}.String(), typeName(t), n.op, want)
	e.Type = typeName(t)
	if name, ok := (Expr{a}).IsColumn(); ok {
		e.Column = name
	}
	return e
}

// bind types n; hint is the type a literal n takes (its operand's).
func (b *binder) bind(n *node, hint arrow.DataType) (*bnode, error) {
	if n == nil {
		return nil, &Error{Expr: b.root.String(), Part: "<empty>", Message: "an empty expression"}
	}
	if n.err != nil {
		return nil, b.fail(n, "%v", n.err)
	}
	switch n.op {
	case opCol:
		idx := b.schema.FieldIndices(n.name)
		if len(idx) == 0 {
			var have []string
			for _, f := range b.schema.Fields() {
				have = append(have, f.Name)
			}
			e := b.fail(n, "no column %q (columns: %s)", n.name, strings.Join(have, ", "))
			e.Column, e.Columns = n.name, have
			return nil, e
		}
		return &bnode{op: opCol, col: idx[0], typ: b.schema.Field(idx[0]).Type}, nil
	case opLit:
		t := n.lit.natural()
		if hint != nil && !isNull(hint) {
			t = n.lit.adapt(hint)
			if n.lit.kind == litNull {
				t = hint
			}
		}
		sc, err := n.lit.scalarOf(t)
		if err != nil {
			return nil, b.fail(n, "%v", err)
		}
		return &bnode{op: opLit, sc: sc, typ: t}, nil
	case opAlias:
		a, err := b.bind(n.args[0], hint)
		if err != nil {
			return nil, err
		}
		return a, nil
	case opAdd, opSub, opMul, opDiv, opMod, opPow:
		l, r, err := b.pair(n)
		if err != nil {
			return nil, err
		}
		if (n.op == opAdd || n.op == opSub) && (isTemporal(l.typ) || isDuration(l.typ) || isTemporal(r.typ) || isDuration(r.typ)) {
			return b.timeArithmetic(n, l, r)
		}
		for i, x := range []*bnode{l, r} {
			if !isNumeric(x.typ) && !isNull(x.typ) {
				return nil, b.typeFail(n, n.args[i], x.typ, "numbers")
			}
		}
		t, err := b.common(n, l, r)
		if err != nil {
			return nil, err
		}
		if (n.op == opDiv || n.op == opPow) && t.ID() != arrow.FLOAT32 {
			t = arrow.PrimitiveTypes.Float64
		}
		return &bnode{op: n.op, typ: t, args: []*bnode{castTo(l, t), castTo(r, t)}}, nil
	case opNeg:
		a, err := b.bind(n.args[0], nil)
		if err != nil {
			return nil, err
		}
		if !isNumeric(a.typ) || !isSigned(a.typ) {
			return nil, b.typeFail(n, n.args[0], a.typ, "a signed number")
		}
		return &bnode{op: opNeg, typ: a.typ, args: []*bnode{a}}, nil
	case opEq, opNe, opLt, opLe, opGt, opGe:
		l, r, err := b.pair(n)
		if err != nil {
			return nil, err
		}
		t, err := b.common(n, l, r)
		if err != nil {
			return nil, err
		}
		if isBool(t) {
			t = arrow.PrimitiveTypes.Uint8 // Arrow orders numbers, not bools: false 0, true 1
		}
		return &bnode{op: n.op, typ: arrow.FixedWidthTypes.Boolean, args: []*bnode{castTo(l, t), castTo(r, t)}}, nil
	case opAnd, opOr:
		l, err := b.bind(n.args[0], arrow.FixedWidthTypes.Boolean)
		if err != nil {
			return nil, err
		}
		r, err := b.bind(n.args[1], arrow.FixedWidthTypes.Boolean)
		if err != nil {
			return nil, err
		}
		for i, x := range []*bnode{l, r} {
			if !isBool(x.typ) {
				return nil, b.typeFail(n, n.args[i], x.typ, "bools")
			}
		}
		return &bnode{op: n.op, typ: arrow.FixedWidthTypes.Boolean, args: []*bnode{l, r}}, nil
	case opNot:
		a, err := b.bind(n.args[0], arrow.FixedWidthTypes.Boolean)
		if err != nil {
			return nil, err
		}
		if !isBool(a.typ) {
			return nil, b.typeFail(n, n.args[0], a.typ, "a bool")
		}
		return &bnode{op: opNot, typ: a.typ, args: []*bnode{a}}, nil
	case opIsNull, opIsNotNull:
		a, err := b.bind(n.args[0], nil)
		if err != nil {
			return nil, err
		}
		return &bnode{op: n.op, typ: arrow.FixedWidthTypes.Boolean, args: []*bnode{a}}, nil
	case opFillNull:
		l, r, err := b.pair(n)
		if err != nil {
			return nil, err
		}
		t, err := b.common(n, l, r)
		if err != nil {
			return nil, err
		}
		return &bnode{op: opFillNull, typ: t, args: []*bnode{castTo(l, t), castTo(r, t)}}, nil
	case opCast:
		a, err := b.bind(n.args[0], nil)
		if err != nil {
			return nil, err
		}
		if n.to == nil || !computable(n.to) || isNull(n.to) {
			return nil, b.fail(n, "cast to %s: expressions compute with numbers, bool and string", typeName(n.to))
		}
		if !computable(a.typ) || !isNull(a.typ) && !arrow.TypeEqual(a.typ, n.to) && !compute.CanCast(a.typ, n.to) {
			e := b.typeFail(n, n.args[0], a.typ, "a type that converts to "+typeName(n.to))
			return nil, e
		}
		c := castTo(a, n.to)
		if c.op == opCast {
			c.exact = true
		}
		return c, nil
	case opTruncate, opPart, opTotal:
		a, err := b.bind(n.args[0], nil)
		if err != nil {
			return nil, err
		}
		return b.bindTimeUnit(n, a)
	case opAddMonths:
		a, err := b.bind(n.args[0], nil)
		if err != nil {
			return nil, err
		}
		if !isTemporal(a.typ) {
			return nil, b.typeFail(n, n.args[0], a.typ, "a timestamp or a date")
		}
		if m, err := strconv.Atoi(n.name); err != nil || m < -maxMonths || m > maxMonths {
			return nil, b.fail(n, "add %q months: from %d to %d", n.name, -maxMonths, maxMonths)
		}
		return &bnode{op: opAddMonths, typ: a.typ, args: []*bnode{a}, pattern: n.name}, nil
	case opContains, opStartsWith, opEndsWith, opParseTime:
		a, err := b.bind(n.args[0], arrow.BinaryTypes.String)
		if err != nil {
			return nil, err
		}
		if !isString(a.typ) {
			return nil, b.typeFail(n, n.args[0], a.typ, "a string")
		}
		if n.op != opParseTime {
			return &bnode{op: n.op, typ: arrow.FixedWidthTypes.Boolean, args: []*bnode{a}, pattern: n.name}, nil
		}
		if n.name == "" {
			return nil, b.fail(n, "parse_time with an empty layout (Go's reference-time layout, such as \"2006-01-02\")")
		}
		return &bnode{op: opParseTime, typ: timeLitType, args: []*bnode{a}, pattern: n.name}, nil
	case opIsIn:
		a, err := b.bind(n.args[0], nil)
		if err != nil {
			return nil, err
		}
		if !isNumeric(a.typ) && !isString(a.typ) && !isBool(a.typ) && !isTemporal(a.typ) && !isDuration(a.typ) {
			return nil, b.typeFail(n, n.args[0], a.typ, "a number, string, bool, time or duration")
		}
		set, err := b.valueSet(n, a.typ)
		if err != nil {
			return nil, err
		}
		return &bnode{op: opIsIn, typ: arrow.FixedWidthTypes.Boolean, args: []*bnode{a}, set: set}, nil
	case opCase:
		return b.bindCase(n)
	case opAbs, opRound, opFloor, opCeil, opSqrt, opLog, opLower, opUpper, opTrim, opLen, opReplace, opSlice, opConcat:
		return b.bindFunction(n)
	}
	return nil, b.fail(n, "unknown operation %q", n.op)
}

// pair binds a binary operation's operands: a literal takes the type of
// the other side.
func (b *binder) pair(n *node) (*bnode, *bnode, error) {
	a, c := n.args[0], n.args[1]
	if a.op == opLit && c.op != opLit {
		r, err := b.bind(c, nil)
		if err != nil {
			return nil, nil, err
		}
		l, err := b.bind(a, r.typ)
		return l, r, err
	}
	l, err := b.bind(a, nil)
	if err != nil {
		return nil, nil, err
	}
	r, err := b.bind(c, l.typ)
	return l, r, err
}

// common is the type two operands are compared or combined in.
func (b *binder) common(n *node, l, r *bnode) (arrow.DataType, error) {
	lt, rt := l.typ, r.typ
	switch {
	case isNull(lt) && isNull(rt):
		return nil, b.fail(n, "both operands are null: cast one to give the operation a type")
	case isNull(lt):
		lt = rt
	case isNull(rt):
		rt = lt
	}
	for i, t := range []arrow.DataType{lt, rt} {
		if !computable(t) {
			return nil, b.typeFail(n, n.args[i], t, "numbers, strings, bools or times")
		}
	}
	switch {
	case isNumeric(lt) && isNumeric(rt):
		return commonNumeric(lt, rt), nil
	case arrow.TypeEqual(lt, rt):
		return lt, nil
	case isTemporal(lt) && isTemporal(rt):
		if t, ok := commonTemporal(lt, rt); ok {
			return t, nil
		}
	case isDuration(lt) && isDuration(rt):
		return &arrow.DurationType{Unit: max(timeUnitOf(lt), timeUnitOf(rt))}, nil
	}
	why := ""
	if isTemporal(lt) && isTemporal(rt) {
		why = " (a timestamp with a zone and one without do not compare: cast one)"
	}
	e := b.fail(n, "%s is %s and %s is %s: %s needs two numbers, two strings, two bools, two times or two durations%s",
		Expr{n.args[0]}, typeName(lt), Expr{n.args[1]}, typeName(rt), n.op, why)
	e.Type = typeName(lt) + ", " + typeName(rt)
	if name, ok := (Expr{n.args[0]}).IsColumn(); ok {
		e.Column = name
	} else if name, ok := (Expr{n.args[1]}).IsColumn(); ok {
		e.Column = name
	}
	return nil, e
}

// bindTimeUnit types the operations that take a time unit: Truncate and
// Part of a timestamp or a date, Total of a duration.
func (b *binder) bindTimeUnit(n *node, a *bnode) (*bnode, error) {
	unit := TimeUnit(n.name)
	switch n.op {
	case opTotal:
		if !isDuration(a.typ) {
			return nil, b.typeFail(n, n.args[0], a.typ, "a duration")
		}
		if _, ok := totalUnits[unit]; !ok {
			return nil, b.fail(n, "total in %q: the units are week, day, hour, minute and second", n.name)
		}
		return &bnode{op: opTotal, typ: arrow.PrimitiveTypes.Float64, args: []*bnode{a}, pattern: n.name}, nil
	}
	if !isTemporal(a.typ) {
		return nil, b.typeFail(n, n.args[0], a.typ, "a timestamp or a date")
	}
	if n.op == opPart {
		if !isPart(unit) {
			return nil, b.fail(n, "part %q: the parts are %s", n.name, partNames())
		}
		return &bnode{op: opPart, typ: arrow.PrimitiveTypes.Int32, args: []*bnode{a}, pattern: n.name}, nil
	}
	if _, ok := truncateUnits[unit]; !ok {
		return nil, b.fail(n, "truncate to %q: the units are year, quarter, month, week, day, hour, minute and second", n.name)
	}
	return &bnode{op: opTruncate, typ: a.typ, args: []*bnode{a}, pattern: n.name}, nil
}

// timeArithmetic types a sum or a difference with a time or a duration:
// a timestamp plus or less a duration is a timestamp (in the finer of
// their units, in the timestamp's zone), a date plus or less a duration
// a timestamp in no zone (the date's midnight, in the finer of the
// duration's unit and the date's: seconds, milliseconds for a date64), a
// time less a time is a duration (two dates' in seconds), and durations
// add and subtract.
func (b *binder) timeArithmetic(n *node, l, r *bnode) (*bnode, error) {
	lt, rt := l.typ, r.typ
	out := func(t, lt, rt arrow.DataType) (*bnode, error) {
		return &bnode{op: n.op, typ: t, args: []*bnode{castTo(l, lt), castTo(r, rt)}}, nil
	}
	stamp := func(t arrow.DataType, u arrow.TimeUnit) arrow.DataType {
		return &arrow.TimestampType{Unit: u, TimeZone: t.(*arrow.TimestampType).TimeZone}
	}
	switch {
	case isDuration(lt) && isDuration(rt):
		t := &arrow.DurationType{Unit: max(timeUnitOf(lt), timeUnitOf(rt))}
		return out(t, t, t)
	case lt.ID() == arrow.TIMESTAMP && isDuration(rt):
		u := max(timeUnitOf(lt), timeUnitOf(rt))
		return out(stamp(lt, u), stamp(lt, u), &arrow.DurationType{Unit: u})
	case isDuration(lt) && rt.ID() == arrow.TIMESTAMP && n.op == opAdd:
		u := max(timeUnitOf(lt), timeUnitOf(rt))
		return out(stamp(rt, u), &arrow.DurationType{Unit: u}, stamp(rt, u))
	case isDate(lt) && isDuration(rt):
		t := &arrow.TimestampType{Unit: max(dateUnit(lt), timeUnitOf(rt))}
		return out(t, t, &arrow.DurationType{Unit: t.Unit})
	case isDuration(lt) && isDate(rt) && n.op == opAdd:
		t := &arrow.TimestampType{Unit: max(dateUnit(rt), timeUnitOf(lt))}
		return out(t, &arrow.DurationType{Unit: t.Unit}, t)
	case isTemporal(lt) && isTemporal(rt) && n.op == opSub:
		t, ok := commonTemporal(lt, rt)
		if !ok {
			break
		}
		switch t.ID() {
		case arrow.DATE32:
			return out(arrow.FixedWidthTypes.Duration_s, t, t)
		case arrow.DATE64:
			return out(arrow.FixedWidthTypes.Duration_ms, t, t)
		}
		return out(&arrow.DurationType{Unit: timeUnitOf(t)}, t, t)
	}
	e := b.fail(n, "%s is %s and %s is %s: %s takes a time and a duration, two durations, or (to subtract) two times of one kind",
		Expr{n.args[0]}, typeName(lt), Expr{n.args[1]}, typeName(rt), n.op)
	e.Type = typeName(lt) + ", " + typeName(rt)
	return nil, e
}

// castTo converts a to t: a literal now, anything else when evaluated.
func castTo(a *bnode, t arrow.DataType) *bnode {
	if arrow.TypeEqual(a.typ, t) {
		return a
	}
	if a.op == opLit {
		if a.sc == nil || !a.sc.IsValid() {
			return &bnode{op: opLit, sc: scalar.MakeNullScalar(t), typ: t}
		}
		if sc, err := a.sc.CastTo(t); err == nil {
			return &bnode{op: opLit, sc: sc, typ: t}
		}
	}
	return &bnode{op: opCast, typ: t, args: []*bnode{a}}
}

// valueSet builds IsIn's values as an array of type t.
func (b *binder) valueSet(n *node, t arrow.DataType) (arrow.Array, error) {
	bld := array.NewBuilder(memory.DefaultAllocator, t)
	defer bld.Release()
	for _, l := range n.set {
		if l.kind == litNull {
			return nil, b.fail(n, "a null value: IsIn matches values (use IsNull for nulls)")
		}
		sc, err := l.scalarOf(l.adapt(t))
		if err == nil && !arrow.TypeEqual(sc.DataType(), t) {
			sc, err = l.scalarOf(t)
		}
		if err == nil {
			err = appendScalar(bld, sc)
		}
		if err != nil {
			return nil, b.fail(n, "the value %s: %v", l, err)
		}
	}
	return bld.NewArray(), nil
}

// appendScalar appends sc to a builder of its type.
func appendScalar(bld array.Builder, sc scalar.Scalar) error {
	if !sc.IsValid() {
		bld.AppendNull()
		return nil
	}
	switch s := sc.(type) {
	case *scalar.Int8:
		bld.(*array.Int8Builder).Append(s.Value)
	case *scalar.Int16:
		bld.(*array.Int16Builder).Append(s.Value)
	case *scalar.Int32:
		bld.(*array.Int32Builder).Append(s.Value)
	case *scalar.Int64:
		bld.(*array.Int64Builder).Append(s.Value)
	case *scalar.Uint8:
		bld.(*array.Uint8Builder).Append(s.Value)
	case *scalar.Uint16:
		bld.(*array.Uint16Builder).Append(s.Value)
	case *scalar.Uint32:
		bld.(*array.Uint32Builder).Append(s.Value)
	case *scalar.Uint64:
		bld.(*array.Uint64Builder).Append(s.Value)
	case *scalar.Float32:
		bld.(*array.Float32Builder).Append(s.Value)
	case *scalar.Float64:
		bld.(*array.Float64Builder).Append(s.Value)
	case *scalar.String:
		bld.(*array.StringBuilder).Append(string(s.Data()))
	case *scalar.Boolean:
		bld.(*array.BooleanBuilder).Append(s.Value)
	case *scalar.Timestamp:
		bld.(*array.TimestampBuilder).Append(s.Value)
	case *scalar.Date32:
		bld.(*array.Date32Builder).Append(s.Value)
	case *scalar.Date64:
		bld.(*array.Date64Builder).Append(s.Value)
	case *scalar.Duration:
		bld.(*array.DurationBuilder).Append(s.Value)
	default:
		return fmt.Errorf("a %s value", typeName(sc.DataType()))
	}
	return nil
}

// bindCase types a conditional: bool conditions, values of one type.
func (b *binder) bindCase(n *node) (*bnode, error) {
	out := &bnode{op: opCase, hasElse: n.hasElse}
	var valNodes []*node
	// values that are not literals decide the type literals take
	var t arrow.DataType
	for i, a := range n.args {
		isVal := i%2 == 1 || n.hasElse && i == len(n.args)-1
		if !isVal || a.op == opLit {
			continue
		}
		v, err := b.bind(a, nil)
		if err != nil {
			return nil, err
		}
		switch {
		case t == nil || isNull(t):
			t = v.typ
		case isNumeric(t) && isNumeric(v.typ):
			t = commonNumeric(t, v.typ)
		case isNull(v.typ):
		case !arrow.TypeEqual(t, v.typ):
			return nil, b.typeFail(n, a, v.typ, "values of one type ("+typeName(t)+")")
		}
	}
	for i, a := range n.args {
		isVal := i%2 == 1 || n.hasElse && i == len(n.args)-1
		if !isVal {
			c, err := b.bindAs(n, a, arrow.FixedWidthTypes.Boolean, "bool conditions")
			if err != nil {
				return nil, err
			}
			out.args = append(out.args, c)
			continue
		}
		v, err := b.bind(a, t)
		if err != nil {
			return nil, err
		}
		if t == nil || isNull(t) {
			t = v.typ
		} else if isNumeric(t) && isNumeric(v.typ) {
			t = commonNumeric(t, v.typ)
		} else if !isNull(v.typ) && !arrow.TypeEqual(t, v.typ) {
			return nil, b.typeFail(n, a, v.typ, "values of one type ("+typeName(t)+")")
		}
		valNodes = append(valNodes, a)
		out.args = append(out.args, v)
	}
	if t == nil || isNull(t) {
		return nil, b.fail(n, "every value is null: cast one to give the conditional a type")
	}
	if !computable(t) {
		return nil, b.typeFail(n, valNodes[0], t, "numbers, strings or bools")
	}
	for i, a := range out.args {
		isVal := i%2 == 1 || n.hasElse && i == len(out.args)-1
		if isVal {
			out.args[i] = castTo(a, t)
		}
	}
	out.typ = t
	return out, nil
}

// maxRoundDigits is the most decimal places Round takes: a float64
// holds about 15 significant digits.
const maxRoundDigits = 15

// bindFunction types the numeric functions (Abs, Round, Floor, Ceil of
// a number, of its type; Sqrt and Log as floats; Pow is arithmetic's,
// a float as Div is) and the string
// ones (Lower, Upper, Trim, Replace, Slice and Concat strings; Len an
// int64).
func (b *binder) bindFunction(n *node) (*bnode, error) {
	switch n.op {
	case opConcat:
		out := &bnode{op: opConcat, typ: arrow.BinaryTypes.String}
		for _, x := range n.args {
			a, err := b.bindAs(n, x, arrow.BinaryTypes.String, "strings (Cast the others)")
			if err != nil {
				return nil, err
			}
			out.args = append(out.args, a)
		}
		return out, nil
	case opReplace, opSlice, opLower, opUpper, opTrim, opLen:
		a, err := b.bind(n.args[0], arrow.BinaryTypes.String)
		if err != nil {
			return nil, err
		}
		if !isString(a.typ) {
			return nil, b.typeFail(n, n.args[0], a.typ, "a string")
		}
		out := &bnode{op: n.op, typ: a.typ, args: []*bnode{a}}
		switch n.op {
		case opLen:
			out.typ = arrow.PrimitiveTypes.Int64
		case opReplace:
			x, y := n.args[1], n.args[2]
			if !isStringLit(x) || !isStringLit(y) {
				return nil, b.fail(n, "replace takes two string literals, not %s and %s", Expr{x}, Expr{y})
			}
			out.pattern, out.with = x.lit.s, y.lit.s
		case opSlice:
			x, y := n.args[1], n.args[2]
			if !isIntLit(x) || !isIntLit(y) {
				return nil, b.fail(n, "slice takes two integer literals, not %s and %s", Expr{x}, Expr{y})
			}
			out.start, out.length = int(x.lit.i), int(y.lit.i)
		}
		return out, nil
	}
	a, err := b.bind(n.args[0], nil)
	if err != nil {
		return nil, err
	}
	if !isNumeric(a.typ) {
		return nil, b.typeFail(n, n.args[0], a.typ, "a number")
	}
	switch n.op {
	case opSqrt, opLog:
		t := arrow.DataType(arrow.PrimitiveTypes.Float64)
		if a.typ.ID() == arrow.FLOAT32 {
			t = a.typ
		}
		return &bnode{op: n.op, typ: t, args: []*bnode{castTo(a, t)}}, nil
	case opRound:
		if d, err := strconv.Atoi(n.name); err != nil || d < 0 || d > maxRoundDigits {
			return nil, b.fail(n, "round to %q decimal places: from 0 to %d", n.name, maxRoundDigits)
		}
	}
	if isInteger(a.typ) && (n.op != opAbs || !isSigned(a.typ)) {
		return a, nil // a whole number, or an unsigned one's Abs: itself
	}
	return &bnode{op: n.op, typ: a.typ, args: []*bnode{a}, pattern: n.name}, nil
}

// bindAs binds x, an operand of n, as a value of type t (a null, cast to
// t, too); what names what n takes, for the error on another type.
func (b *binder) bindAs(n, x *node, t arrow.DataType, what string) (*bnode, error) {
	a, err := b.bind(x, t)
	if err != nil {
		return nil, err
	}
	if !arrow.TypeEqual(a.typ, t) && !isNull(a.typ) {
		return nil, b.typeFail(n, x, a.typ, what)
	}
	return castTo(a, t), nil
}

// isStringLit says whether n is a string literal (Replace's operands).
func isStringLit(n *node) bool {
	return n.op == opLit && n.err == nil && n.lit.kind == litTyped && isString(n.lit.typ)
}

// isIntLit says whether n is a Go int literal (Slice's operands).
func isIntLit(n *node) bool { return n.op == opLit && n.err == nil && n.lit.kind == litInt }
