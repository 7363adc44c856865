package expr

import (
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/errs"
)

// An expression travels inside a dataset's task spec as an
// atollpb.DataExpr: the tree as it is, with nothing registered. FromProto
// checks what it reads against the bounds below before building the
// tree, so a spec from a corrupt or hostile message costs no more than
// its own size.

// wireWhat names expressions in MalformedErrors.
const wireWhat = "dataset expression"

const (
	// maxDepth bounds the nesting of an expression.
	maxDepth = 256
	// maxNodes bounds the operations, literals and set values of one
	// expression.
	maxNodes = 1 << 20
	// maxText bounds a name, pattern or string literal.
	maxText = 1 << 20
)

// Proto is e as a message (nil for the zero Expr).
func (e Expr) Proto() *atollpb.DataExpr {
	if e.n == nil {
		return nil
	}
	return nodeProto(e.n)
}

func nodeProto(n *node) *atollpb.DataExpr {
	m := &atollpb.DataExpr{Op: n.op, Name: n.name, HasElse: n.hasElse}
	if n.err != nil {
		// an invalid operand travels as what it is: Bind fails on it
		m.Op, m.Name = "invalid", n.err.Error()
		return m
	}
	if n.op == opLit {
		m.Lit = literalProto(n.lit)
	}
	if n.to != nil {
		m.Type = typeName(n.to)
	}
	for _, a := range n.args {
		m.Args = append(m.Args, nodeProto(a))
	}
	for _, l := range n.set {
		m.Set = append(m.Set, literalProto(l))
	}
	return m
}

// timeLitWire is the type of a time.Time literal on the wire, which
// holds it as RFC 3339 text (every time.Time from year 0 to 9999, to the
// nanosecond).
const timeLitWire = "time"

// durationLitWire is the type of a time.Duration literal on the wire,
// which holds its nanoseconds.
const durationLitWire = "duration"

func literalProto(l literal) *atollpb.DataLiteral {
	m := &atollpb.DataLiteral{}
	switch l.kind {
	case litNull:
		return m
	case litInt:
		m.Value = &atollpb.DataLiteral_Int{Int: l.i}
		return m
	case litFloat:
		m.Value = &atollpb.DataLiteral_Float{Float: l.f}
		return m
	case litTime:
		m.Type, m.Value = timeLitWire, &atollpb.DataLiteral_Str{Str: l.t.Format(time.RFC3339Nano)}
		return m
	case litDuration:
		m.Type, m.Value = durationLitWire, &atollpb.DataLiteral_Int{Int: l.i}
		return m
	}
	m.Type = typeName(l.typ)
	switch {
	case isString(l.typ):
		m.Value = &atollpb.DataLiteral_Str{Str: l.s}
	case isBool(l.typ):
		m.Value = &atollpb.DataLiteral_Bool{Bool: l.b}
	case isFloat(l.typ):
		m.Value = &atollpb.DataLiteral_Float{Float: l.f}
	case isSigned(l.typ):
		m.Value = &atollpb.DataLiteral_Int{Int: l.i}
	default:
		m.Value = &atollpb.DataLiteral_Uint{Uint: l.u}
	}
	return m
}

// arity is each operation's operand count (-1: checked apart).
var arity = map[string]int{
	opCol: 0, opLit: 0, opAdd: 2, opSub: 2, opMul: 2, opDiv: 2, opMod: 2, opNeg: 1, opEq: 2, opNe: 2, opLt: 2, opLe: 2,
	opGt: 2, opGe: 2, opAnd: 2, opOr: 2, opNot: 1, opIsNull: 1, opIsNotNull: 1, opFillNull: 2, opCast: 1, opContains: 1,
	opStartsWith: 1, opEndsWith: 1, opIsIn: 1, opCase: -1, opAlias: 1, opTruncate: 1,
	opPart: 1, opParseTime: 1, opTotal: 1, opAddMonths: 1, opAbs: 1, opRound: 1, opFloor: 1, opCeil: 1, opSqrt: 1, opLog: 1, opPow: 2,
	opLower: 1, opUpper: 1, opTrim: 1, opLen: 1, opReplace: 3, opSlice: 3, opConcat: -1,
}

// FromProto reads an expression from its message, checking its shape:
// known operations with their operands, names and literals of bounded
// size. Its errors are MalformedErrors.
func FromProto(m *atollpb.DataExpr) (Expr, error) {
	budget := maxNodes
	n, err := nodeFrom(m, 0, &budget)
	if err != nil {
		return Expr{}, err
	}
	return Expr{n}, nil
}

func nodeFrom(m *atollpb.DataExpr, depth int, budget *int) (*node, error) {
	bad := func(format string, args ...any) (*node, error) {
		return nil, errs.Malformedf(wireWhat, format, args...)
	}
	if m == nil {
		return bad("an empty operand")
	}
	if depth > maxDepth {
		return bad("nested deeper than %d", maxDepth)
	}
	*budget -= 1 + len(m.Set)
	if *budget < 0 {
		return bad("more than %d operations and values", maxNodes)
	}
	if len(m.Name) > maxText || len(m.Op) > 64 || len(m.Type) > 64 {
		return bad("a name of %d bytes", len(m.Name))
	}
	if m.Op == "invalid" {
		return &node{op: opLit, err: errs.Invalidf("%s", m.Name)}, nil
	}
	want, ok := arity[m.Op]
	switch {
	case !ok:
		return bad("unknown operation %q", m.Op)
	case want >= 0 && len(m.Args) != want:
		return bad("%s with %d operands", m.Op, len(m.Args))
	case m.Op == opCase && (len(m.Args) < 2 || (len(m.Args)%2 == 1) != m.HasElse):
		return bad("a conditional of %d operands (otherwise: %v)", len(m.Args), m.HasElse)
	case m.Op == opConcat && len(m.Args) < 1:
		return bad("concat of no operands")
	}
	n := &node{op: m.Op, name: m.Name, hasElse: m.HasElse}
	if m.Op == opLit {
		l, err := literalFrom(m.Lit)
		if err != nil {
			return nil, err
		}
		n.lit = l
	}
	if m.Op == opCast {
		t, ok := parseType(m.Type)
		if !ok {
			return bad("a cast to %q", m.Type)
		}
		n.to = t
	}
	for _, s := range m.Set {
		l, err := literalFrom(s)
		if err != nil {
			return nil, err
		}
		n.set = append(n.set, l)
	}
	for _, a := range m.Args {
		c, err := nodeFrom(a, depth+1, budget)
		if err != nil {
			return nil, err
		}
		n.args = append(n.args, c)
	}
	return n, nil
}

func literalFrom(m *atollpb.DataLiteral) (literal, error) {
	bad := func(format string, args ...any) (literal, error) {
		return literal{}, errs.Malformedf(wireWhat, format, args...)
	}
	if m == nil {
		return bad("an empty literal")
	}
	if m.Type == "" {
		switch v := m.Value.(type) {
		case nil:
			return literal{kind: litNull}, nil
		case *atollpb.DataLiteral_Int:
			return literal{kind: litInt, i: v.Int}, nil
		case *atollpb.DataLiteral_Float:
			return literal{kind: litFloat, f: v.Float}, nil
		}
		return bad("an untyped literal %v", m.Value)
	}
	if m.Type == timeLitWire {
		v, ok := m.Value.(*atollpb.DataLiteral_Str)
		if !ok || len(v.Str) > 64 {
			return bad("a time literal %v", m.Value)
		}
		t, err := time.Parse(time.RFC3339Nano, v.Str)
		if err != nil {
			return bad("a time literal: %v", err)
		}
		return literal{kind: litTime, t: t.UTC()}, nil
	}
	if m.Type == durationLitWire {
		v, ok := m.Value.(*atollpb.DataLiteral_Int)
		if !ok {
			return bad("a duration literal %v", m.Value)
		}
		return literal{kind: litDuration, i: v.Int}, nil
	}
	t, ok := parseType(m.Type)
	if !ok || isDuration(t) {
		return bad("a literal of type %q", m.Type)
	}
	l := literal{kind: litTyped, typ: t}
	okv := false
	switch v := m.Value.(type) {
	case *atollpb.DataLiteral_Str:
		l.s, okv = v.Str, isString(t)
		if len(v.Str) > maxText {
			return bad("a string literal of %d bytes", len(v.Str))
		}
	case *atollpb.DataLiteral_Bool:
		l.b, okv = v.Bool, isBool(t)
	case *atollpb.DataLiteral_Float:
		l.f, okv = v.Float, isFloat(t)
	case *atollpb.DataLiteral_Int:
		l.i, okv = v.Int, isInteger(t) && isSigned(t) && fitsInt(v.Int, t)
	case *atollpb.DataLiteral_Uint:
		l.u, okv = v.Uint, isInteger(t) && !isSigned(t) && (bits(t) == 64 || v.Uint < 1<<bits(t))
	}
	if !okv {
		return bad("a literal %v of type %s", m.Value, m.Type)
	}
	return l, nil
}

// TypeName is t's name as expressions write it (Cast's argument in
// String, the wire): int64, float64, string, bool...
func TypeName(t arrow.DataType) string { return typeName(t) }
