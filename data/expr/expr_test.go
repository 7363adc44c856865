package expr_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/protobuf/proto"

	"github.com/atoll-runtime/atoll"
	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/data/expr"
)

// The property test: random expressions over random batches with nulls,
// each evaluated by the package (Arrow kernels over the whole batch) and
// by a row-at-a-time reference written here with Go's own arithmetic;
// every row must agree. Each generated expression carries its reference
// (gen builds both together), so every operator is checked in the
// combinations of types and nulls the generator makes. Expressions also
// go through the wire (Proto, FromProto) before they are evaluated.

// The columns of the random batches: two of each type.
var testTypes = map[string]arrow.DataType{
	"int64": arrow.PrimitiveTypes.Int64, "int32": arrow.PrimitiveTypes.Int32, "uint8": arrow.PrimitiveTypes.Uint8,
	"float64": arrow.PrimitiveTypes.Float64, "float32": arrow.PrimitiveTypes.Float32,
	"bool": arrow.FixedWidthTypes.Boolean, "string": arrow.BinaryTypes.String,
}

var numericTypes = []string{"int64", "int32", "uint8", "float64", "float32"}

func testSchema() *arrow.Schema {
	var fs []arrow.Field
	for _, name := range []string{"int64", "int32", "uint8", "float64", "float32", "bool", "string"} {
		for _, suffix := range []string{"a", "b"} {
			fs = append(fs, arrow.Field{Name: name + "_" + suffix, Type: testTypes[name], Nullable: true})
		}
	}
	return arrow.NewSchema(fs, nil)
}

// randomValue is a random value of type t (nil sometimes): small values
// most of the time, the types' extremes, NaN and infinities sometimes.
func randomValue(r *rand.Rand, t string) any {
	if r.IntN(7) == 0 {
		return nil
	}
	edge := r.IntN(10) == 0
	switch t {
	case "int64":
		if edge {
			return []int64{math.MinInt64, math.MaxInt64, -1, 0}[r.IntN(4)]
		}
		return int64(r.IntN(21) - 10)
	case "int32":
		if edge {
			return []int32{math.MinInt32, math.MaxInt32, -1, 0}[r.IntN(4)]
		}
		return int32(r.IntN(21) - 10)
	case "uint8":
		if edge {
			return []uint8{0, 255, 128}[r.IntN(3)]
		}
		return uint8(r.IntN(12))
	case "float64":
		if edge {
			return []float64{math.NaN(), math.Inf(1), math.Inf(-1), 0, math.Copysign(0, -1), 1e300}[r.IntN(6)]
		}
		return float64(r.IntN(41)-20) / 4
	case "float32":
		if edge {
			return []float32{float32(math.NaN()), float32(math.Inf(1)), 0, 3e38}[r.IntN(4)]
		}
		return float32(r.IntN(41)-20) / 4
	case "bool":
		return r.IntN(2) == 0
	case "string":
		n := r.IntN(5)
		var b strings.Builder
		if edge { // mixed case, spaces and letters beyond ASCII
			for range n {
				b.WriteString([]string{"a", "B", " ", "É", "ß", "\t", "z"}[r.IntN(7)])
			}
			return b.String()
		}
		for range n {
			b.WriteByte("abc"[r.IntN(3)])
		}
		return b.String()
	}
	panic(t)
}

// randomBatch makes rows rows of testSchema, then maybe a slice of them
// (arrays at an offset).
func randomBatch(r *rand.Rand, rows int) (arrow.RecordBatch, [][]any) {
	s := testSchema()
	b := array.NewRecordBuilder(memory.DefaultAllocator, s)
	defer b.Release()
	vals := make([][]any, s.NumFields())
	for j, f := range s.Fields() {
		tn := strings.TrimSuffix(strings.TrimSuffix(f.Name, "_a"), "_b")
		for range rows {
			v := randomValue(r, tn)
			vals[j] = append(vals[j], v)
			appendAny(b.Field(j), v)
		}
	}
	rec := b.NewRecordBatch()
	if rows > 4 && r.IntN(2) == 0 {
		lo := int64(r.IntN(3))
		sl := rec.NewSlice(lo, int64(rows))
		rec.Release()
		for j := range vals {
			vals[j] = vals[j][lo:]
		}
		return sl, vals
	}
	return rec, vals
}

func appendAny(b array.Builder, v any) {
	if v == nil {
		b.AppendNull()
		return
	}
	switch x := v.(type) {
	case int64:
		b.(*array.Int64Builder).Append(x)
	case int32:
		b.(*array.Int32Builder).Append(x)
	case uint8:
		b.(*array.Uint8Builder).Append(x)
	case float64:
		b.(*array.Float64Builder).Append(x)
	case float32:
		b.(*array.Float32Builder).Append(x)
	case bool:
		b.(*array.BooleanBuilder).Append(x)
	case string:
		b.(*array.StringBuilder).Append(x)
	default:
		panic(fmt.Sprintf("%T", v))
	}
}

// cellAt reads row i of a as the reference's Go value.
func cellAt(a arrow.Array, i int) any {
	if a.IsNull(i) {
		return nil
	}
	switch c := a.(type) {
	case *array.Int64:
		return c.Value(i)
	case *array.Int32:
		return c.Value(i)
	case *array.Uint8:
		return c.Value(i)
	case *array.Float64:
		return c.Value(i)
	case *array.Float32:
		return c.Value(i)
	case *array.Boolean:
		return c.Value(i)
	case *array.String:
		return c.Value(i)
	}
	panic(a.DataType().String())
}

// common is the type two numeric types compute in (the package's rule).
func common(a, b string) string {
	if a == b {
		return a
	}
	isF := func(t string) bool { return t == "float32" || t == "float64" }
	if isF(a) || isF(b) {
		small := func(t string) bool { return t == "float32" || t == "uint8" }
		if small(a) && small(b) {
			return "float32"
		}
		return "float64"
	}
	rank := map[string]int{"uint8": 16, "int32": 32, "int64": 64} // uint8 mixes with signed as 16 bits
	if rank[a] >= rank[b] {
		return a
	}
	return b
}

// conv converts a reference value to numeric type t (exact for the
// conversions the generator makes).
func conv(v any, t string) any {
	if v == nil {
		return nil
	}
	var f float64
	var i int64
	isInt := true
	switch x := v.(type) {
	case int64:
		i = x
	case int32:
		i = int64(x)
	case uint8:
		i = int64(x)
	case float64:
		f, isInt = x, false
	case float32:
		f, isInt = float64(x), false
	default:
		panic(fmt.Sprintf("conv %T", v))
	}
	if isInt {
		f = float64(i)
	}
	switch t {
	case "int64":
		return i
	case "int32":
		return int32(i)
	case "uint8":
		return uint8(i)
	case "float64":
		return f
	case "float32":
		return float32(f)
	}
	panic(t)
}

// term is a generated expression with its reference and type.
type term struct {
	e     expr.Expr
	ref   func(row int) any
	typ   string
	isLit bool
}

type gen struct {
	r    *rand.Rand
	vals [][]any
	s    *arrow.Schema
}

func (g *gen) column(t string) term {
	name := t + []string{"_a", "_b"}[g.r.IntN(2)]
	j := g.s.FieldIndices(name)[0]
	return term{e: expr.Col(name), ref: func(i int) any { return g.vals[j][i] }, typ: t}
}

func (g *gen) literal(t string) term {
	v := randomValue(g.r, t)
	if v == nil { // a null literal needs a type: a cast of nil
		return term{e: expr.Lit(nil).Cast(testTypes[t]), ref: func(int) any { return nil }, typ: t}
	}
	if t == "float64" { // a float64 literal takes its operand's type: fix it
		return term{e: expr.Lit(v).Cast(testTypes[t]), ref: func(int) any { return v }, typ: t}
	}
	return term{e: expr.Lit(v), ref: func(int) any { return v }, typ: t, isLit: true}
}

// untyped is a Go int literal (or a float64 for float types) meant to
// take type t from its operand.
func (g *gen) untyped(t string) term {
	switch t {
	case "float64", "float32":
		f := float64(g.r.IntN(21)-10) / 2
		return term{e: expr.Lit(f), ref: func(int) any { return conv(f, t) }, typ: t, isLit: true}
	case "uint8":
		n := g.r.IntN(10)
		return term{e: expr.Lit(n), ref: func(int) any { return uint8(n) }, typ: t, isLit: true}
	}
	n := g.r.IntN(21) - 10
	return term{e: expr.Lit(n), ref: func(int) any { return conv(int64(n), t) }, typ: t, isLit: true}
}

func (g *gen) leaf(t string) term {
	if g.r.IntN(4) == 0 {
		return g.literal(t)
	}
	return g.column(t)
}

// operands makes two terms whose common type is c: either of the same
// type, or of two types that promote to c, or c and an untyped literal.
func (g *gen) operands(c string, depth int) (term, term) {
	if g.r.IntN(5) == 0 {
		a := g.term(c, depth)
		if !a.isLit {
			u := g.untyped(c)
			if g.r.IntN(2) == 0 {
				return a, u
			}
			return u, a
		}
		return a, g.term(c, depth)
	}
	var pairs [][2]string
	for _, x := range numericTypes {
		for _, y := range numericTypes {
			if common(x, y) == c {
				pairs = append(pairs, [2]string{x, y})
			}
		}
	}
	p := pairs[g.r.IntN(len(pairs))]
	return g.term(p[0], depth), g.term(p[1], depth)
}

func arithInt[T int64 | int32 | uint8](op string, a, b T) any {
	switch op {
	case "add":
		return a + b
	case "sub":
		return a - b
	case "mul":
		return a * b
	case "mod":
		if b == 0 {
			return nil
		}
		return a % b
	}
	panic(op)
}

func arithFloat[T float64 | float32](op string, a, b T) any {
	switch op {
	case "add":
		return a + b
	case "sub":
		return a - b
	case "mul":
		return a * b
	case "div":
		return a / b
	case "mod":
		return T(math.Mod(float64(a), float64(b)))
	}
	panic(op)
}

func arith(op string, a, b any) any {
	if a == nil || b == nil {
		return nil
	}
	switch x := a.(type) {
	case int64:
		return arithInt(op, x, b.(int64))
	case int32:
		return arithInt(op, x, b.(int32))
	case uint8:
		return arithInt(op, x, b.(uint8))
	case float64:
		return arithFloat(op, x, b.(float64))
	case float32:
		return arithFloat(op, x, b.(float32))
	}
	panic(fmt.Sprintf("%T", a))
}

func compareRef(op string, a, b any) any {
	if a == nil || b == nil {
		return nil
	}
	var c int
	nan := false
	switch x := a.(type) {
	case int64:
		c = cmpOrd(x, b.(int64))
	case int32:
		c = cmpOrd(x, b.(int32))
	case uint8:
		c = cmpOrd(x, b.(uint8))
	case float64:
		y := b.(float64)
		nan = math.IsNaN(x) || math.IsNaN(y)
		c = cmpOrd(x, y)
	case float32:
		y := b.(float32)
		nan = x != x || y != y
		c = cmpOrd(x, y)
	case string:
		c = cmpOrd(x, b.(string))
	case bool:
		c = cmpOrd(boolInt(x), boolInt(b.(bool)))
	}
	if nan {
		return op == "ne"
	}
	switch op {
	case "eq":
		return c == 0
	case "ne":
		return c != 0
	case "lt":
		return c < 0
	case "le":
		return c <= 0
	case "gt":
		return c > 0
	}
	return c >= 0
}

func cmpOrd[T int64 | int32 | uint8 | float64 | float32 | string](a, b T) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func boolInt(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// term generates an expression of type t, depth levels deep at most.
func (g *gen) term(t string, depth int) term {
	if depth <= 0 || g.r.IntN(4) == 0 {
		return g.leaf(t)
	}
	d := depth - 1
	numeric := t != "bool" && t != "string"
	switch {
	case numeric:
		switch g.r.IntN(9) {
		case 0, 1, 2: // add, sub, mul, mod
			op := []string{"add", "sub", "mul", "mod"}[g.r.IntN(4)]
			a, b := g.operands(t, d)
			var e expr.Expr
			switch op {
			case "add":
				e = a.e.Add(b.e)
			case "sub":
				e = a.e.Sub(b.e)
			case "mul":
				e = a.e.Mul(b.e)
			default:
				e = a.e.Mod(b.e)
			}
			return term{e: e, typ: t, ref: func(i int) any { return arith(op, conv(a.ref(i), t), conv(b.ref(i), t)) }}
		case 3: // div: float results only
			if t != "float64" && t != "float32" {
				break
			}
			c := t
			if t == "float64" {
				c = []string{"float64", "int64", "int32", "uint8"}[g.r.IntN(4)]
			}
			a, b := g.operands(c, d)
			return term{e: a.e.Div(b.e), typ: t, ref: func(i int) any { return arith("div", conv(a.ref(i), t), conv(b.ref(i), t)) }}
		case 4: // neg
			if t == "uint8" {
				break
			}
			a := g.term(t, d)
			return term{e: a.e.Neg(), typ: t, ref: func(i int) any {
				switch v := a.ref(i).(type) {
				case float64:
					return -v
				case float32:
					return -v
				case nil:
					return nil
				default:
					return arith("sub", conv(int64(0), t), v)
				}
			}}
		case 5: // fill_null
			a, b := g.term(t, d), g.term(t, d)
			return term{e: a.e.FillNull(b.e), typ: t, ref: func(i int) any {
				if v := a.ref(i); v != nil {
					return v
				}
				return b.ref(i)
			}}
		case 6: // cast from a narrower type
			var from []string
			switch t {
			case "int64":
				from = []string{"int32", "uint8", "bool"}
			case "int32":
				from = []string{"uint8"}
			case "float64":
				from = []string{"int64", "int32", "uint8", "float32"}
			}
			if len(from) == 0 {
				break
			}
			f := from[g.r.IntN(len(from))]
			a := g.term(f, d)
			return term{e: a.e.Cast(testTypes[t]), typ: t, ref: func(i int) any {
				v := a.ref(i)
				if b, ok := v.(bool); ok {
					return conv(boolInt(b), t)
				}
				return conv(v, t)
			}}
		case 7:
			return g.conditional(t, d)
		case 8:
			if f, ok := g.function(t, d); ok {
				return f
			}
		}
		return g.leaf(t)
	case t == "bool":
		switch g.r.IntN(9) {
		case 0, 1: // comparisons
			op := []string{"eq", "ne", "lt", "le", "gt", "ge"}[g.r.IntN(6)]
			var a, b term
			var c string
			switch g.r.IntN(4) {
			case 0:
				a, b, c = g.term("string", d), g.term("string", d), "string"
			case 1:
				a, b, c = g.term("bool", d), g.term("bool", d), "bool"
			default:
				c = numericTypes[g.r.IntN(len(numericTypes))]
				a, b = g.operands(c, d)
			}
			var e expr.Expr
			switch op {
			case "eq":
				e = a.e.Eq(b.e)
			case "ne":
				e = a.e.Ne(b.e)
			case "lt":
				e = a.e.Lt(b.e)
			case "le":
				e = a.e.Le(b.e)
			case "gt":
				e = a.e.Gt(b.e)
			default:
				e = a.e.Ge(b.e)
			}
			return term{e: e, typ: "bool", ref: func(i int) any {
				x, y := a.ref(i), b.ref(i)
				if c != "string" && c != "bool" {
					x, y = conv(x, c), conv(y, c)
				}
				return compareRef(op, x, y)
			}}
		case 2: // and, or
			a, b := g.term("bool", d), g.term("bool", d)
			if g.r.IntN(2) == 0 {
				return term{e: a.e.And(b.e), typ: "bool", ref: func(i int) any { return kleene(true, a.ref(i), b.ref(i)) }}
			}
			return term{e: a.e.Or(b.e), typ: "bool", ref: func(i int) any { return kleene(false, a.ref(i), b.ref(i)) }}
		case 3: // not
			a := g.term("bool", d)
			return term{e: a.e.Not(), typ: "bool", ref: func(i int) any {
				if v := a.ref(i); v != nil {
					return !v.(bool)
				}
				return nil
			}}
		case 4: // is_null, is_not_null
			a := g.term([]string{"int64", "float32", "string", "bool"}[g.r.IntN(4)], d)
			if g.r.IntN(2) == 0 {
				return term{e: a.e.IsNull(), typ: "bool", ref: func(i int) any { return a.ref(i) == nil }}
			}
			return term{e: a.e.IsNotNull(), typ: "bool", ref: func(i int) any { return a.ref(i) != nil }}
		case 5: // string predicates
			a := g.term("string", d)
			p := randomValue(g.r, "string")
			if p == nil {
				p = "a"
			}
			pat := p.(string)
			which := g.r.IntN(3)
			e := []func(string) expr.Expr{a.e.Contains, a.e.StartsWith, a.e.EndsWith}[which](pat)
			f := []func(string, string) bool{strings.Contains, strings.HasPrefix, strings.HasSuffix}[which]
			return term{e: e, typ: "bool", ref: func(i int) any {
				if v := a.ref(i); v != nil {
					return f(v.(string), pat)
				}
				return nil
			}}
		case 6: // is_in
			switch g.r.IntN(3) {
			case 0:
				a := g.term("string", d)
				set := []any{"a", "ab", "", "c"}[:1+g.r.IntN(4)]
				return term{e: a.e.IsIn(set...), typ: "bool", ref: func(i int) any { return in(a.ref(i), set, "string") }}
			default:
				t := []string{"int64", "int32", "uint8"}[g.r.IntN(3)]
				a := g.term(t, d)
				set := []any{0, 1, 3, 7}[:1+g.r.IntN(4)]
				return term{e: a.e.IsIn(set...), typ: "bool", ref: func(i int) any { return in(a.ref(i), set, t) }}
			}
		case 7:
			return g.conditional("bool", d)
		}
		return g.leaf("bool")
	}
	// string
	switch g.r.IntN(7) {
	case 4: // replace
		a := g.term("string", d)
		old, with := []string{"a", "ab", "", "É", " "}[g.r.IntN(5)], []string{"x", "", "ÉÉ"}[g.r.IntN(3)]
		return term{e: a.e.Replace(old, with), typ: t, ref: func(i int) any {
			if v := a.ref(i); v != nil {
				return strings.ReplaceAll(v.(string), old, with)
			}
			return nil
		}}
	case 5: // slice
		a := g.term("string", d)
		start, length := g.r.IntN(13)-6, g.r.IntN(8)-1
		return term{e: a.e.Slice(start, length), typ: t, ref: func(i int) any {
			if v := a.ref(i); v != nil {
				return sliceRef(v.(string), start, length)
			}
			return nil
		}}
	case 6: // concat
		parts := []term{g.term("string", d)}
		for range 1 + g.r.IntN(2) {
			parts = append(parts, g.term("string", d))
		}
		var rest []any
		for _, p := range parts[1:] {
			rest = append(rest, p.e)
		}
		return term{e: parts[0].e.Concat(rest...), typ: t, ref: func(i int) any {
			var b strings.Builder
			for _, p := range parts {
				v := p.ref(i)
				if v == nil {
					return nil
				}
				b.WriteString(v.(string))
			}
			return b.String()
		}}
	case 3: // lower, upper, trim
		a := g.term("string", d)
		which := g.r.IntN(3)
		e := []func() expr.Expr{a.e.Lower, a.e.Upper, a.e.Trim}[which]()
		f := []func(string) string{strings.ToLower, strings.ToUpper, strings.TrimSpace}[which]
		return term{e: e, typ: t, ref: func(i int) any {
			if v := a.ref(i); v != nil {
				return f(v.(string))
			}
			return nil
		}}
	case 0:
		a, b := g.term("string", d), g.term("string", d)
		return term{e: a.e.FillNull(b.e), typ: t, ref: func(i int) any {
			if v := a.ref(i); v != nil {
				return v
			}
			return b.ref(i)
		}}
	case 1:
		return g.conditional("string", d)
	case 2: // an integer as text
		a := g.term("int64", d)
		return term{e: a.e.Cast(arrow.BinaryTypes.String), typ: t, ref: func(i int) any {
			if v := a.ref(i); v != nil {
				return strconv.FormatInt(v.(int64), 10)
			}
			return nil
		}}
	}
	return g.leaf(t)
}

// function is one of the functions making a number of type t: Abs,
// Round, Floor or Ceil of a t, Sqrt, Log or Pow making a float, Len of a
// string making an int64 (ok false when none makes a t).
func (g *gen) function(t string, d int) (term, bool) {
	isF := t == "float64" || t == "float32"
	switch g.r.IntN(4) {
	case 0: // abs, floor, ceil of a t: integers but a signed one's abs are themselves
		a := g.term(t, d)
		which := g.r.IntN(3)
		e := []func() expr.Expr{a.e.Abs, a.e.Floor, a.e.Ceil}[which]()
		return term{e: e, typ: t, ref: func(i int) any {
			switch v := a.ref(i).(type) {
			case float64:
				return []func(float64) float64{math.Abs, math.Floor, math.Ceil}[which](v)
			case float32:
				return float32([]func(float64) float64{math.Abs, math.Floor, math.Ceil}[which](float64(v)))
			case int64:
				return absIf(which == 0, v)
			case int32:
				return absIf(which == 0, v)
			case uint8:
				return v
			}
			return nil
		}}, true
	case 1: // round
		a := g.term(t, d)
		digits := g.r.IntN(4)
		if g.r.IntN(5) == 0 {
			digits = 15
		}
		scale := math.Pow10(digits)
		return term{e: a.e.Round(digits), typ: t, ref: func(i int) any {
			round := func(v float64) float64 {
				if digits == 0 {
					return math.Round(v)
				}
				if y := v * scale; !math.IsInf(y, 0) && !math.IsNaN(y) {
					return math.Round(y) / scale
				}
				return v
			}
			switch v := a.ref(i).(type) {
			case float64:
				return round(v)
			case float32:
				return float32(round(float64(v)))
			}
			return a.ref(i)
		}}, true
	case 2: // sqrt, log, pow
		if !isF {
			return term{}, false
		}
		from := t
		if t == "float64" {
			from = []string{"float64", "int64", "int32", "uint8"}[g.r.IntN(4)]
		}
		fl := func(v float64) any {
			if t == "float32" {
				return float32(v)
			}
			return v
		}
		if g.r.IntN(3) == 0 {
			a, b := g.operands(from, d)
			return term{e: a.e.Pow(b.e), typ: t, ref: func(i int) any {
				x, y := conv(a.ref(i), "float64"), conv(b.ref(i), "float64")
				if x == nil || y == nil {
					return nil
				}
				return fl(math.Pow(x.(float64), y.(float64)))
			}}, true
		}
		a := g.term(from, d)
		which := g.r.IntN(2)
		e := []func() expr.Expr{a.e.Sqrt, a.e.Log}[which]()
		return term{e: e, typ: t, ref: func(i int) any {
			x := conv(a.ref(i), "float64")
			if x == nil {
				return nil
			}
			return fl([]func(float64) float64{math.Sqrt, math.Log}[which](x.(float64)))
		}}, true
	}
	if t != "int64" {
		return term{}, false
	}
	a := g.term("string", d) // len
	return term{e: a.e.Len(), typ: t, ref: func(i int) any {
		if v := a.ref(i); v != nil {
			return int64(utf8.RuneCountInString(v.(string)))
		}
		return nil
	}}, true
}

// sliceRef is Slice(start, length) of v, as documented: the window of
// characters [start, start+length) (start from the end when negative,
// the rest when length is), cut to the string.
func sliceRef(v string, start, length int) string {
	rs := []rune(v)
	from := start
	if start < 0 {
		from = len(rs) + start
	}
	to := len(rs)
	if length >= 0 {
		to = from + length
	}
	var out []rune
	for i := from; i < to; i++ {
		if i >= 0 && i < len(rs) {
			out = append(out, rs[i])
		}
	}
	return string(out)
}

func absIf[T int64 | int32](abs bool, v T) T {
	if abs && v < 0 {
		return -v
	}
	return v
}

// conditional is When(c1).Then(v1)[.When(c2).Then(v2)][.Otherwise(v)] of
// type t, sometimes aliased.
func (g *gen) conditional(t string, d int) term {
	n := 1 + g.r.IntN(2)
	var conds, vals []term
	c := expr.When(nil)
	for k := range n {
		cond, val := g.term("bool", d), g.term(t, d)
		conds, vals = append(conds, cond), append(vals, val)
		if k == 0 {
			c = expr.When(cond.e).Then(val.e)
		} else {
			c = c.When(cond.e).Then(val.e)
		}
	}
	var els *term
	var e expr.Expr
	if g.r.IntN(3) > 0 {
		o := g.term(t, d)
		els = &o
		e = c.Otherwise(o.e)
	} else {
		e = c.End()
	}
	if g.r.IntN(4) == 0 {
		e = e.As("renamed")
	}
	return term{e: e, typ: t, ref: func(i int) any {
		for k := range conds {
			if v := conds[k].ref(i); v != nil && v.(bool) {
				return vals[k].ref(i)
			}
		}
		if els != nil {
			return els.ref(i)
		}
		return nil
	}}
}

func kleene(and bool, a, b any) any {
	if and {
		if a == false || b == false {
			return false
		}
		if a == nil || b == nil {
			return nil
		}
		return true
	}
	if a == true || b == true {
		return true
	}
	if a == nil || b == nil {
		return nil
	}
	return false
}

func in(v any, set []any, t string) any {
	if v == nil {
		return nil
	}
	for _, s := range set {
		if n, ok := s.(int); ok {
			if conv(int64(n), t) == v {
				return true
			}
		} else if s == v {
			return true
		}
	}
	return false
}

func sameValue(a, b any) bool {
	switch x := a.(type) {
	case float64:
		y, ok := b.(float64)
		return ok && (math.Float64bits(x) == math.Float64bits(y) || math.IsNaN(x) && math.IsNaN(y))
	case float32:
		y, ok := b.(float32)
		return ok && (math.Float32bits(x) == math.Float32bits(y) || x != x && y != y)
	}
	return a == b
}

// viaWire sends e through its message and back.
func viaWire(t *testing.T, e expr.Expr) expr.Expr {
	t.Helper()
	b, err := proto.Marshal(e.Proto())
	if err != nil {
		t.Fatal(err)
	}
	var m atollpb.DataExpr
	if err := proto.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	out, err := expr.FromProto(&m)
	if err != nil {
		t.Fatalf("%s: %v", e, err)
	}
	if out.String() != e.String() {
		t.Fatalf("through the wire %s became %s", e, out)
	}
	return out
}

func TestAgainstRowByRowReference(t *testing.T) {
	ctx := context.Background()
	const seeds = 300
	ops := map[string]int{} // operators seen, by their text
	for seed := range uint64(seeds) {
		r := rand.New(rand.NewPCG(seed, 0xe4))
		rec, vals := randomBatch(r, r.IntN(200))
		g := &gen{r: r, vals: vals, s: rec.Schema()}
		for range 20 {
			want := []string{"int64", "int32", "uint8", "float64", "float32", "bool", "string"}[r.IntN(7)]
			tm := g.term(want, 1+r.IntN(4))
			e := viaWire(t, tm.e)
			countOps(ops, e.String())
			b, err := e.Bind(rec.Schema())
			if err != nil {
				t.Fatalf("seed %d: %s: %v", seed, e, err)
			}
			if got := expr.TypeName(b.Type()); got != want {
				t.Fatalf("seed %d: %s is %s, want %s", seed, e, got, want)
			}
			out, err := b.Eval(ctx, rec)
			if err != nil {
				t.Fatalf("seed %d: %s: %v", seed, e, err)
			}
			if out.Len() != int(rec.NumRows()) {
				t.Fatalf("seed %d: %s: %d values for %d rows", seed, e, out.Len(), rec.NumRows())
			}
			for i := range out.Len() {
				if got, ref := cellAt(out, i), tm.ref(i); !sameValue(got, ref) {
					t.Fatalf("seed %d: %s at row %d: got %v (%T), the reference %v (%T)", seed, e, i, got, got, ref, ref)
				}
			}
			out.Release()
		}
		rec.Release()
	}
	for _, op := range []string{" + ", " - ", " * ", " / ", " % ", "-", " == ", " != ", " < ", " <= ", " > ", " >= ", " && ", " || ", "!",
		".is_null(", ".is_not_null(", ".fill_null(", ".cast(", ".contains(", ".starts_with(", ".ends_with(", ".is_in(",
		"when(", ".otherwise(", ".as(", ".abs(", ".round(", ".floor(", ".ceil(", ".sqrt(", ".log(", ".pow(", ".lower(",
		".upper(", ".trim(", ".len(", ".replace(", ".slice(", ".concat("} {
		if ops[op] == 0 {
			t.Errorf("the generator never made %q", op)
		}
	}
	t.Logf("operators checked (expressions containing each): %v", ops)
}

func countOps(ops map[string]int, s string) {
	for _, op := range []string{" + ", " - ", " * ", " / ", " % ", "-", " == ", " != ", " < ", " <= ", " > ", " >= ", " && ", " || ", "!",
		".is_null(", ".is_not_null(", ".fill_null(", ".cast(", ".contains(", ".starts_with(", ".ends_with(", ".is_in(",
		"when(", ".otherwise(", ".as(", ".abs(", ".round(", ".floor(", ".ceil(", ".sqrt(", ".log(", ".pow(", ".lower(",
		".upper(", ".trim(", ".len(", ".replace(", ".slice(", ".concat("} {
		if strings.Contains(s, op) {
			ops[op]++
		}
	}
}

// The errors of Bind name the expression and the column or the type.
func TestBindErrors(t *testing.T) {
	s := arrow.NewSchema([]arrow.Field{{Name: "price", Type: arrow.PrimitiveTypes.Float64}, {Name: "qty", Type: arrow.PrimitiveTypes.Int64},
		{Name: "name", Type: arrow.BinaryTypes.String}}, nil)
	for _, c := range []struct {
		e      expr.Expr
		column string
		typ    string
		msg    string
	}{
		{expr.Col("pricee").Mul(expr.Col("qty")), "pricee", "", `no column "pricee" (columns: price, qty, name)`},
		{expr.Col("name").Add(1), "name", "string", `col("name") is string; add needs numbers`},
		{expr.Col("price").Gt("cheap"), "price", "float64, string", "needs two numbers, two strings, two bools, two times or two durations"},
		{expr.Col("qty").And(true), "qty", "int64", "and needs bools"},
		{expr.Col("qty").Contains("x"), "qty", "int64", "contains needs a string"},
		{expr.Col("qty").IsIn("a"), "", "", `the value "a"`},
		{expr.Col("qty").Gt(struct{}{}), "", "", "a literal of Go type struct {}"},
		{expr.When(expr.Col("qty")).Then(1).End(), "qty", "int64", "bool conditions"},
		{expr.When(expr.Col("qty").Gt(1)).Then("x").Otherwise(expr.Col("qty")), "", "string", `"x" is string; case needs values of one type (int64)`},
		{expr.Col("name").Abs(), "name", "string", "abs needs a number"},
		{expr.Col("qty").Pow("x"), "", "string", `"x" is string; pow needs numbers`},
		{expr.Col("price").Lower(), "price", "float64", "lower needs a string"},
		{expr.Col("price").Round(-1), "", "", `round to "-1" decimal places: from 0 to 15`},
		{expr.Col("price").Round(16), "", "", `round to "16" decimal places`},
		{expr.Col("name").Concat(expr.Col("qty")), "qty", "int64", "concat needs strings (Cast the others)"},
		{expr.Col("qty").Slice(0, 1), "qty", "int64", "slice needs a string"},
		{expr.Expr{}, "", "", "an empty expression"},
	} {
		_, err := c.e.Bind(s)
		var ee *expr.Error
		if !errors.As(err, &ee) || !errors.Is(err, atoll.ErrInvalidArgument) {
			t.Fatalf("%s: %v, want an *expr.Error", c.e, err)
		}
		if ee.Column != c.column || ee.Type != c.typ || !strings.Contains(err.Error(), c.msg) || !strings.Contains(err.Error(), ee.Expr) {
			t.Errorf("%s: %v (%+v), want column %q, type %q, %q", c.e, err, ee, c.column, c.typ, c.msg)
		}
	}
}

// A cast that does not convert exactly fails the evaluation; one that
// does succeeds.
func TestCastFailures(t *testing.T) {
	ctx := context.Background()
	b := array.NewRecordBuilder(memory.DefaultAllocator, arrow.NewSchema([]arrow.Field{
		{Name: "big", Type: arrow.PrimitiveTypes.Int64}, {Name: "s", Type: arrow.BinaryTypes.String}, {Name: "f", Type: arrow.PrimitiveTypes.Float64}}, nil))
	b.Field(0).(*array.Int64Builder).AppendValues([]int64{1, 1 << 40}, nil)
	b.Field(1).(*array.StringBuilder).AppendValues([]string{"12", "x"}, nil)
	b.Field(2).(*array.Float64Builder).AppendValues([]float64{1, 1.5}, nil)
	rec := b.NewRecordBatch()
	b.Release()
	defer rec.Release()
	for _, e := range []expr.Expr{expr.Col("big").Cast(arrow.PrimitiveTypes.Int32), expr.Col("s").Cast(arrow.PrimitiveTypes.Int64),
		expr.Col("f").Cast(arrow.PrimitiveTypes.Int64)} {
		bd, err := e.Bind(rec.Schema())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := bd.Eval(ctx, rec); err == nil {
			t.Errorf("%s: no error", e)
		}
		one := rec.NewSlice(0, 1)
		out, err := bd.Eval(ctx, one)
		one.Release()
		if err != nil {
			t.Errorf("%s of the first row: %v", e, err)
			continue
		}
		out.Release()
	}
}

// Literals alone broadcast to the batch; typed literals keep their type;
// an untyped int too large for its operand's type widens it.
func TestLiterals(t *testing.T) {
	ctx := context.Background()
	b := array.NewRecordBuilder(memory.DefaultAllocator, arrow.NewSchema([]arrow.Field{{Name: "i8", Type: arrow.PrimitiveTypes.Int8}}, nil))
	b.Field(0).(*array.Int8Builder).AppendValues([]int8{100, -100, 7}, nil)
	rec := b.NewRecordBatch()
	b.Release()
	defer rec.Release()
	for _, c := range []struct {
		e    expr.Expr
		typ  string
		want []any
	}{
		{expr.Lit(2).Add(3), "int64", []any{int64(5), int64(5), int64(5)}},
		{expr.Col("i8").Add(1000), "int64", []any{int64(1100), int64(900), int64(1007)}},
		{expr.Col("i8").Add(100), "int8", []any{int8(-56), int8(0), int8(107)}}, // wraps
		{expr.Col("i8").Add(int32(1)), "int32", []any{int32(101), int32(-99), int32(8)}},
		{expr.Col("i8").Div(2), "float64", []any{50.0, -50.0, 3.5}},
		{expr.Col("i8").Mod(0), "int8", []any{nil, nil, nil}},
		{expr.Col("i8").Gt(1.5), "bool", []any{true, false, true}},
		{expr.Col("i8").Eq(nil), "bool", []any{nil, nil, nil}},
		{expr.Lit("x").StartsWith(""), "bool", []any{true, true, true}},
	} {
		bd, err := c.e.Bind(rec.Schema())
		if err != nil {
			t.Fatalf("%s: %v", c.e, err)
		}
		if expr.TypeName(bd.Type()) != c.typ {
			t.Errorf("%s is %s, want %s", c.e, expr.TypeName(bd.Type()), c.typ)
		}
		out, err := bd.Eval(ctx, rec)
		if err != nil {
			t.Fatalf("%s: %v", c.e, err)
		}
		for i, w := range c.want {
			if got := cellAtAny(out, i); fmt.Sprint(got) != fmt.Sprint(w) {
				t.Errorf("%s row %d: %v, want %v", c.e, i, got, w)
			}
		}
		out.Release()
	}
}

func cellAtAny(a arrow.Array, i int) any {
	if a.IsNull(i) {
		return nil
	}
	if c, ok := a.(*array.Int8); ok {
		return c.Value(i)
	}
	return cellAt(a, i)
}

func TestString(t *testing.T) {
	e := expr.When(expr.Col("price").Mul(expr.Col("qty")).Gt(100)).Then("big").Otherwise(expr.Col("tag").FillNull("-")).As("band")
	want := `when((col("price") * col("qty")) > 100).then("big").otherwise(col("tag").fill_null("-")).as("band")`
	if e.String() != want {
		t.Errorf("got  %s\nwant %s", e, want)
	}
	if e.Name() != "band" {
		t.Errorf("name %q", e.Name())
	}
	if got := expr.Col("x").Mul(2).Sum().Name(); got != `sum(col("x") * 2)` {
		t.Errorf("agg name %q", got)
	}
	if got := expr.Col("x").Sum().Name(); got != "sum(x)" {
		t.Errorf("agg name %q", got)
	}
	f := expr.Col("price").Pow(2).Sqrt().Round(2).Abs().Add(expr.Col("name").Trim().Lower().Len())
	if want := `col("price").pow(2).sqrt().round(2).abs() + col("name").trim().lower().len()`; f.String() != want {
		t.Errorf("got  %s\nwant %s", f, want)
	}
	if cols := e.Columns(); fmt.Sprint(cols) != "[price qty tag]" {
		t.Errorf("columns %v", cols)
	}
}

// A function of aggregations: its leaves, each named as its column, and
// its expression over them.
func TestAggregationFunctions(t *testing.T) {
	a := expr.Col("price").Sum().Div(expr.Col("qty").Sum().As("q")).Round(2)
	if got, want := a.Name(), `(col("sum(price)") / col("q")).round(2)`; got != want {
		t.Errorf("name %s, want %s", got, want)
	}
	if got := a.As("avg").Name(); got != "avg" {
		t.Errorf("name %q", got)
	}
	var leaves []string
	for _, l := range a.As("avg").Leaves() {
		leaves = append(leaves, l.String())
	}
	if want := []string{`col("price").sum()`, `col("qty").sum().as(q)`}; !slices.Equal(leaves, want) {
		t.Errorf("leaves %q, want %q", leaves, want)
	}
	if post, ok := a.Post(); !ok || fmt.Sprint(post.Columns()) != "[sum(price) q]" || a.Func() != "" {
		t.Errorf("post %v %v, func %q", post, ok, a.Func())
	}
	// a named function's name is its own: composed again, it is its
	// expression's
	b := a.As("avg").Mul(expr.Count())
	if post, _ := b.Post(); post.String() != `(col("sum(price)") / col("q")).round(2) * col("count()")` || len(b.Leaves()) != 3 {
		t.Errorf("composed: %s, %d leaves", post, len(b.Leaves()))
	}
	if _, ok := expr.Col("x").Sum().Post(); ok || expr.Col("x").Sum().Leaves() != nil {
		t.Error("an aggregation of rows has a function")
	}
	s := arrow.NewSchema([]arrow.Field{{Name: "x", Type: arrow.PrimitiveTypes.Int64}}, nil)
	if _, err := expr.Col("x").Sub(expr.Col("x").Mean()).TypeOf(s); err == nil || !strings.Contains(err.Error(), "aggregate first") {
		t.Errorf("an aggregation in a row's expression: %v", err)
	}
}

// FromProto refuses malformed messages with a MalformedError.
func TestFromProtoRefuses(t *testing.T) {
	deep := &atollpb.DataExpr{Op: "col", Name: "x"}
	for range 300 {
		deep = &atollpb.DataExpr{Op: "not", Args: []*atollpb.DataExpr{deep}}
	}
	for _, m := range []*atollpb.DataExpr{
		nil,
		{Op: "frobnicate"},
		{Op: "add", Args: []*atollpb.DataExpr{{Op: "col", Name: "x"}}},
		{Op: "cast", Type: "decimal", Args: []*atollpb.DataExpr{{Op: "col", Name: "x"}}},
		{Op: "lit", Lit: &atollpb.DataLiteral{Type: "int8", Value: &atollpb.DataLiteral_Int{Int: 1000}}},
		{Op: "case", Args: []*atollpb.DataExpr{{Op: "col", Name: "x"}}},
		deep,
	} {
		if _, err := expr.FromProto(m); !errors.Is(err, atoll.ErrInvalidArgument) {
			t.Errorf("%v: %v, want a MalformedError", m, err)
		}
	}
}
