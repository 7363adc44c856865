package expr

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
)

// Expr is an expression over the columns of a batch: a column, a
// literal, or an operation of expressions. The zero Expr is invalid
// (binding it fails). Exprs are immutable values: every method returns
// a new one.
type Expr struct{ n *node }

// The operations, as they are named on the wire and in errors.
const (
	opCol        = "col"
	opLit        = "lit"
	opAdd        = "add"
	opSub        = "sub"
	opMul        = "mul"
	opDiv        = "div"
	opMod        = "mod"
	opNeg        = "neg"
	opEq         = "eq"
	opNe         = "ne"
	opLt         = "lt"
	opLe         = "le"
	opGt         = "gt"
	opGe         = "ge"
	opAnd        = "and"
	opOr         = "or"
	opNot        = "not"
	opIsNull     = "is_null"
	opIsNotNull  = "is_not_null"
	opFillNull   = "fill_null"
	opCast       = "cast"
	opContains   = "contains"
	opStartsWith = "starts_with"
	opEndsWith   = "ends_with"
	opIsIn       = "is_in"
	opTruncate   = "truncate"
	opPart       = "part"
	opParseTime  = "parse_time"
	opTotal      = "total"
	opCase       = "case"
	opAbs        = "abs"
	opRound      = "round"
	opAddMonths  = "add_months"
	opFloor      = "floor"
	opCeil       = "ceil"
	opSqrt       = "sqrt"
	opLog        = "log"
	opPow        = "pow"
	opLower      = "lower"
	opUpper      = "upper"
	opTrim       = "trim"
	opLen        = "len"
	opReplace    = "replace"
	opSlice      = "slice"
	opConcat     = "concat"
	opAlias      = "alias"
)

// node is one operation. Its fields are set by the constructors and
// never changed after.
type node struct {
	op      string
	name    string // col: the column; alias: the name; string predicates: the pattern
	lit     literal
	args    []*node // operands in order; case: cond, value, cond, value, ..., [else]
	to      arrow.DataType
	set     []literal // is_in
	hasElse bool      // case
	err     error     // a constructor's argument that is not an expression or a literal
}

// Col refers to the column name.
func Col(name string) Expr { return Expr{&node{op: opCol, name: name}} }

// Lit is a literal: nil (null), bool, string, an integer or a float of
// a Go type, a time.Time or a time.Duration. A Go int (an untyped constant such as 100) and a float64
// take the type of the operand they meet (100 compared with an int32
// column is an int32; 1.5 added to an int64 column makes both float64);
// the other sized types (int32, uint8, float32...) keep theirs. A
// time.Time takes its operand's timestamp or date type, and a
// time.Duration its operand's unit when it is a whole number of them.
func Lit(v any) Expr {
	l, err := literalOf(v)
	if err != nil {
		return Expr{&node{op: opLit, err: err}}
	}
	return Expr{&node{op: opLit, lit: l}}
}

// operand makes an expression of x: an Expr, or a literal (Lit).
func operand(x any) *node {
	switch v := x.(type) {
	case Expr:
		if v.n == nil {
			return &node{op: opLit, err: fmt.Errorf("an empty Expr")}
		}
		return v.n
	case *Expr:
		if v == nil || v.n == nil {
			return &node{op: opLit, err: fmt.Errorf("an empty Expr")}
		}
		return v.n
	case Agg:
		return &node{op: opLit, err: fmt.Errorf("an aggregation (%s) in an expression of a row: aggregate first, then use its column", v)}
	}
	return Lit(x).n
}

func (e Expr) node() *node {
	if e.n == nil {
		return &node{op: opLit, err: fmt.Errorf("an empty Expr")}
	}
	return e.n
}

func (e Expr) unary(op string) Expr { return Expr{&node{op: op, args: []*node{e.node()}}} }

func (e Expr) binary(op string, x any) Expr {
	return Expr{&node{op: op, args: []*node{e.node(), operand(x)}}}
}

// Add is e + x (x an Expr or a literal); integers wrap on overflow.
func (e Expr) Add(x any) Expr { return e.binary(opAdd, x) }

// Sub is e - x.
func (e Expr) Sub(x any) Expr { return e.binary(opSub, x) }

// Mul is e * x.
func (e Expr) Mul(x any) Expr { return e.binary(opMul, x) }

// Div is e / x as a floating-point division: float64 (float32 when both
// are float32); a division by zero gives ±Inf or NaN.
func (e Expr) Div(x any) Expr { return e.binary(opDiv, x) }

// Mod is the remainder of e / x, with the sign of e (Go's and SQL's %);
// an integer remainder by zero is null.
func (e Expr) Mod(x any) Expr { return e.binary(opMod, x) }

// Neg is -e (a signed number).
func (e Expr) Neg() Expr { return e.unary(opNeg) }

// Abs is |e|, of e's type; the most negative integer of its type stays
// itself (Go's -x).
func (e Expr) Abs() Expr { return e.unary(opAbs) }

// Round is the float e rounded to digits decimal places (0 to 15),
// halves away from zero (Go's math.Round), of e's type; an integer is
// itself.
func (e Expr) Round(digits int) Expr {
	return Expr{&node{op: opRound, name: strconv.Itoa(digits), args: []*node{e.node()}}}
}

// Floor is the float e rounded down to a whole number, of e's type; an
// integer is itself.
func (e Expr) Floor() Expr { return e.unary(opFloor) }

// Ceil is the float e rounded up to a whole number, of e's type; an
// integer is itself.
func (e Expr) Ceil() Expr { return e.unary(opCeil) }

// Sqrt is the square root of e as a float64 (a float32 of a float32);
// NaN for a negative number.
func (e Expr) Sqrt() Expr { return e.unary(opSqrt) }

// Log is the natural logarithm of e as a float64 (a float32 of a
// float32); -Inf for 0, NaN for a negative number.
func (e Expr) Log() Expr { return e.unary(opLog) }

// Pow is e to the power x (Go's math.Pow) as a float64 (a float32 when
// both are float32).
func (e Expr) Pow(x any) Expr { return e.binary(opPow, x) }

// Lower is the string e in lower case (Go's strings.ToLower).
func (e Expr) Lower() Expr { return e.unary(opLower) }

// Upper is the string e in upper case (Go's strings.ToUpper).
func (e Expr) Upper() Expr { return e.unary(opUpper) }

// Trim is the string e without the white space (Unicode's) at its ends.
func (e Expr) Trim() Expr { return e.unary(opTrim) }

// Len is the number of characters (Unicode code points) of the string e,
// as an int64.
func (e Expr) Len() Expr { return e.unary(opLen) }

// Replace is the string e with every old in it replaced by new (Go's
// strings.ReplaceAll).
func (e Expr) Replace(old, new string) Expr {
	return Expr{&node{op: opReplace, args: []*node{e.node(), Lit(old).n, Lit(new).n}}}
}

// Slice is up to length characters of the string e from its start-th
// (from 0); a negative start counts back from the end (-1 is the last
// character), a negative length takes the rest. What lies outside the
// string is cut: Slice(-5, 3) of "abc" is "a", Slice(4, 2) is "".
func (e Expr) Slice(start, length int) Expr {
	return Expr{&node{op: opSlice, args: []*node{e.node(), Lit(start).n, Lit(length).n}}}
}

// Concat is the strings e and xs (Exprs or literals) one after the
// other; null where any of them is.
func (e Expr) Concat(xs ...any) Expr {
	n := &node{op: opConcat, args: []*node{e.node()}}
	for _, x := range xs {
		n.args = append(n.args, operand(x))
	}
	return Expr{n}
}

// Eq is e == x: a bool, null when either side is null.
func (e Expr) Eq(x any) Expr { return e.binary(opEq, x) }

// Ne is e != x.
func (e Expr) Ne(x any) Expr { return e.binary(opNe, x) }

// Lt is e < x.
func (e Expr) Lt(x any) Expr { return e.binary(opLt, x) }

// Le is e <= x.
func (e Expr) Le(x any) Expr { return e.binary(opLe, x) }

// Gt is e > x.
func (e Expr) Gt(x any) Expr { return e.binary(opGt, x) }

// Ge is e >= x.
func (e Expr) Ge(x any) Expr { return e.binary(opGe, x) }

// And is e AND x in three-valued logic (SQL's, Kleene's): false if
// either is false, else null if either is null.
func (e Expr) And(x any) Expr { return e.binary(opAnd, x) }

// Or is e OR x in three-valued logic: true if either is true, else null
// if either is null.
func (e Expr) Or(x any) Expr { return e.binary(opOr, x) }

// Not is NOT e (null stays null).
func (e Expr) Not() Expr { return e.unary(opNot) }

// IsNull is whether e is null (never null itself).
func (e Expr) IsNull() Expr { return e.unary(opIsNull) }

// IsNotNull is whether e is not null.
func (e Expr) IsNotNull() Expr { return e.unary(opIsNotNull) }

// FillNull is e, or x where e is null (SQL's COALESCE(e, x)).
func (e Expr) FillNull(x any) Expr { return e.binary(opFillNull, x) }

// Cast converts e to type t (a number, bool or string type); a value
// that does not convert exactly (an overflow, a fraction into an
// integer, a string that is not a number) fails the evaluation, but an
// integer into a float rounds as Go's conversion does.
func (e Expr) Cast(t arrow.DataType) Expr {
	return Expr{&node{op: opCast, args: []*node{e.node()}, to: t}}
}

// A TimeUnit is what Truncate cuts a time to, or the part of it Part
// reads.
type TimeUnit string

// The units of Truncate and the parts Part reads. A Week starts on
// Monday; as a part it is the ISO 8601 week number.
const (
	Year    TimeUnit = "year"
	Quarter TimeUnit = "quarter"
	Month   TimeUnit = "month"
	Week    TimeUnit = "week"
	Day     TimeUnit = "day"
	Hour    TimeUnit = "hour"
	Minute  TimeUnit = "minute"
	Second  TimeUnit = "second"
)

// Truncate is the timestamp or date e cut down to the start of its unit
// (its month, its week...), in e's type: in a timestamp's zone, UTC
// without one. Grouping by it groups by month, week or hour.
func (e Expr) Truncate(unit TimeUnit) Expr {
	return Expr{&node{op: opTruncate, name: string(unit), args: []*node{e.node()}}}
}

// AddMonths is the timestamp or date e n calendar months later (earlier
// for a negative n), in e's type, as Spark's add_months: the day of the
// month clamped to the new month's last (January 31 plus one month is
// February 28, or 29), a timestamp's time of day kept, on the wall clock
// of its zone (UTC without one). n is at most 120,000 either way.
func (e Expr) AddMonths(n int) Expr {
	return Expr{&node{op: opAddMonths, name: strconv.Itoa(n), args: []*node{e.node()}}}
}

// Part is one part of the timestamp or date e as an int32, read in a
// timestamp's zone (UTC without one): its Year, Quarter (1-4), Month
// (1-12), Week (the ISO 8601 week, 1-53, counted in the year of its
// Thursday: 2026-01-01 is in week 1, 2027-01-01 in week 53 of 2026), Day
// of the month, Weekday (ISO: Monday 1 to Sunday 7), YearDay (1-366),
// Hour, Minute or Second (whole seconds). A date's time of day is
// midnight.
func (e Expr) Part(part TimeUnit) Expr {
	return Expr{&node{op: opPart, name: string(part), args: []*node{e.node()}}}
}

// Total is the duration e as a float64 count of unit: Week, Day (24
// hours), Hour, Minute or Second. The mean trip in minutes is
// end.Sub(start).Total(expr.Minute).Mean().
func (e Expr) Total(unit TimeUnit) Expr {
	return Expr{&node{op: opTotal, name: string(unit), args: []*node{e.node()}}}
}

// ParseTime reads the string e as a time in layout, Go's reference-time
// layout ("2006-01-02", "01/02/2006 15:04", time.RFC1123...), into a
// timestamp[us, UTC]: in UTC unless the layout reads a zone or an offset,
// whose instant it keeps. A value that is not a time in the layout fails
// the evaluation, naming the value and its row; a null stays null. Cast
// the result to a date32 for a date.
func (e Expr) ParseTime(layout string) Expr {
	return Expr{&node{op: opParseTime, name: layout, args: []*node{e.node()}}}
}

// Contains is whether the string e contains s.
func (e Expr) Contains(s string) Expr {
	return Expr{&node{op: opContains, name: s, args: []*node{e.node()}}}
}

// StartsWith is whether the string e starts with s.
func (e Expr) StartsWith(s string) Expr {
	return Expr{&node{op: opStartsWith, name: s, args: []*node{e.node()}}}
}

// EndsWith is whether the string e ends with s.
func (e Expr) EndsWith(s string) Expr {
	return Expr{&node{op: opEndsWith, name: s, args: []*node{e.node()}}}
}

// IsIn is whether e equals one of values (literals of e's type); null
// when e is null.
func (e Expr) IsIn(values ...any) Expr {
	n := &node{op: opIsIn, args: []*node{e.node()}}
	for _, v := range values {
		l, err := literalOf(v)
		if err != nil {
			n.err = err
			break
		}
		n.set = append(n.set, l)
	}
	return Expr{n}
}

// As names e: the column it makes in SelectExprs, or an aggregation's
// input name.
func (e Expr) As(name string) Expr {
	return Expr{&node{op: opAlias, name: name, args: []*node{e.node()}}}
}

// When starts a conditional: When(c1).Then(v1).When(c2).Then(v2).Otherwise(v3)
// is v1 where c1 is true, else v2 where c2 is true, else v3 (a null
// condition counts as false, as in SQL's CASE).
func When(cond any) Case { return Case{conds: []*node{operand(cond)}} }

// Case is a conditional being built (When).
type Case struct {
	conds, vals []*node
}

// Then gives the value of the last When's condition.
func (c Case) Then(v any) Case {
	nc := Case{conds: c.conds, vals: append(append([]*node(nil), c.vals...), operand(v))}
	return nc
}

// When adds a condition, tried after the ones before.
func (c Case) When(cond any) Case {
	return Case{conds: append(append([]*node(nil), c.conds...), operand(cond)), vals: c.vals}
}

// Otherwise ends the conditional with the value where no condition is
// true.
func (c Case) Otherwise(v any) Expr { return c.build(operand(v)) }

// End ends the conditional with null where no condition is true.
func (c Case) End() Expr { return c.build(nil) }

func (c Case) build(els *node) Expr {
	n := &node{op: opCase}
	if len(c.conds) != len(c.vals) {
		n.err = fmt.Errorf("a When without its Then")
		return Expr{n}
	}
	for i := range c.conds {
		n.args = append(n.args, c.conds[i], c.vals[i])
	}
	if els != nil {
		n.args, n.hasElse = append(n.args, els), true
	}
	return Expr{n}
}

// Columns returns the columns e refers to, each once, in the order
// they first appear.
func (e Expr) Columns() []string {
	var out []string
	seen := map[string]bool{}
	var walk func(*node)
	walk = func(n *node) {
		if n == nil {
			return
		}
		if n.op == opCol && !seen[n.name] {
			seen[n.name] = true
			out = append(out, n.name)
		}
		for _, a := range n.args {
			walk(a)
		}
	}
	walk(e.n)
	return out
}

// Name is the name of the column e makes: its alias (As), else the
// column it is (Col), else its text (String).
func (e Expr) Name() string {
	switch {
	case e.n == nil:
		return ""
	case e.n.op == opAlias, e.n.op == opCol:
		return e.n.name
	}
	return e.String()
}

// IsColumn reports whether e is a column reference (possibly renamed
// with As), and which.
func (e Expr) IsColumn() (string, bool) {
	n := e.n
	for n != nil && n.op == opAlias {
		n = n.args[0]
	}
	if n != nil && n.op == opCol {
		return n.name, true
	}
	return "", false
}

var infix = map[string]string{opAdd: "+", opSub: "-", opMul: "*", opDiv: "/", opMod: "%", opEq: "==", opNe: "!=",
	opLt: "<", opLe: "<=", opGt: ">", opGe: ">=", opAnd: "&&", opOr: "||"}

// String writes e in the form its constructors read: col("price") * 2 > 100
// as (col("price") * 2) > 100.
func (e Expr) String() string {
	var b strings.Builder
	writeNode(&b, e.n, true)
	return b.String()
}

func writeNode(b *strings.Builder, n *node, top bool) {
	if n == nil {
		b.WriteString("<empty>")
		return
	}
	if n.err != nil {
		fmt.Fprintf(b, "<%v>", n.err)
		return
	}
	if sym, ok := infix[n.op]; ok {
		if !top {
			b.WriteByte('(')
		}
		writeNode(b, n.args[0], false)
		b.WriteString(" " + sym + " ")
		writeNode(b, n.args[1], false)
		if !top {
			b.WriteByte(')')
		}
		return
	}
	switch n.op {
	case opCol:
		b.WriteString("col(" + strconv.Quote(n.name) + ")")
	case opLit:
		b.WriteString(n.lit.String())
	case opNeg:
		b.WriteByte('-')
		writeNode(b, n.args[0], false)
	case opNot:
		b.WriteByte('!')
		writeNode(b, n.args[0], false)
	case opCast:
		writeNode(b, n.args[0], false)
		fmt.Fprintf(b, ".cast(%s)", typeName(n.to))
	case opContains, opStartsWith, opEndsWith, opParseTime:
		writeNode(b, n.args[0], false)
		fmt.Fprintf(b, ".%s(%s)", n.op, strconv.Quote(n.name))
	case opTruncate, opPart, opTotal, opRound, opAddMonths:
		writeNode(b, n.args[0], false)
		fmt.Fprintf(b, ".%s(%s)", n.op, n.name)
	case opIsIn:
		writeNode(b, n.args[0], false)
		b.WriteString(".is_in([")
		for i, l := range n.set {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(l.String())
		}
		b.WriteString("])")
	case opAlias:
		writeNode(b, n.args[0], false)
		fmt.Fprintf(b, ".as(%s)", strconv.Quote(n.name))
	case opCase:
		pairs := len(n.args) / 2
		for i := range pairs {
			if i == 0 {
				b.WriteString("when(")
			} else {
				b.WriteString(".when(")
			}
			writeNode(b, n.args[2*i], true)
			b.WriteString(").then(")
			writeNode(b, n.args[2*i+1], true)
			b.WriteByte(')')
		}
		if n.hasElse {
			b.WriteString(".otherwise(")
			writeNode(b, n.args[len(n.args)-1], true)
			b.WriteByte(')')
		}
	default: // is_null, is_not_null, fill_null, the functions
		writeNode(b, n.args[0], false)
		b.WriteString("." + n.op + "(")
		for i, a := range n.args[1:] {
			if i > 0 {
				b.WriteString(", ")
			}
			writeNode(b, a, true)
		}
		b.WriteByte(')')
	}
}
