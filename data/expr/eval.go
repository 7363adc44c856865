package expr

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/scalar"
)

// Eval computes the expression over rec, a batch of the schema it was
// bound to: an array of one value per row, which the caller releases.
// Every operation runs over the whole batch at once, an Arrow compute
// kernel or one of this package's (mod, fill_null, conditionals, string
// predicates); nothing is called per row. Memory comes from the
// allocator of ctx (compute.WithAllocator), Go's by default.
func (b *Bound) Eval(ctx context.Context, rec arrow.RecordBatch) (arrow.Array, error) {
	if err := b.check(rec.Schema()); err != nil {
		return nil, err
	}
	d, err := eval(ctx, b.root, rec)
	if err != nil {
		return nil, err
	}
	defer d.Release()
	return toArray(ctx, d, int(rec.NumRows()))
}

// check says whether s has the bound columns' types where they were.
func (b *Bound) check(s *arrow.Schema) error {
	if s == b.schema || s.Equal(b.schema) {
		return nil
	}
	var bad error
	walk(b.root, func(n *bnode) {
		if n.op != opCol || bad != nil {
			return
		}
		want := b.schema.Field(n.col)
		if n.col >= s.NumFields() || s.Field(n.col).Name != want.Name || !arrow.TypeEqual(s.Field(n.col).Type, want.Type) {
			bad = fmt.Errorf("expr: %s was bound to a batch whose column %d is %s %s, not to this one (%s)", b.expr, n.col, want.Name, typeName(want.Type), s)
		}
	})
	return bad
}

func walk(n *bnode, f func(*bnode)) {
	f(n)
	for _, a := range n.args {
		walk(a, f)
	}
}

// toArray is d as an array of n values (a scalar repeated).
func toArray(ctx context.Context, d compute.Datum, n int) (arrow.Array, error) {
	switch v := d.(type) {
	case *compute.ArrayDatum:
		return v.MakeArray(), nil
	case *compute.ScalarDatum:
		return scalar.MakeArrayFromScalar(v.Value, n, compute.GetAllocator(ctx))
	}
	return nil, fmt.Errorf("expr: a result of kind %s", d.Kind())
}

// kernels names the Arrow compute function of each operation that has
// one (their operands have the same type by then: Bind casts them).
// is_not_null is this package's: arrow-go v18.8.0's reads a sliced
// array's validity from its buffer's start.
var kernels = map[string]string{
	opAdd: "add_unchecked", opSub: "subtract_unchecked", opMul: "multiply_unchecked", opDiv: "divide_unchecked",
	opNeg: "negate_unchecked", opEq: "equal", opNe: "not_equal", opLt: "less", opLe: "less_equal", opGt: "greater",
	opGe: "greater_equal", opAnd: "and_kleene", opOr: "or_kleene", opNot: "not", opIsNull: "is_null",
	opAbs: "abs_unchecked", opFloor: "floor", opCeil: "ceil", opSqrt: "sqrt_unchecked", opLog: "ln_unchecked",
	opPow: "power_unchecked",
}

// eval computes n over rec; the caller releases the datum.
func eval(ctx context.Context, n *bnode, rec arrow.RecordBatch) (compute.Datum, error) {
	switch n.op {
	case opCol:
		return compute.NewDatum(rec.Column(n.col)), nil
	case opLit:
		return compute.NewDatum(n.sc), nil
	}
	args := make([]compute.Datum, len(n.args))
	defer func() {
		for _, a := range args {
			if a != nil {
				a.Release()
			}
		}
	}()
	var err error
	for i, a := range n.args {
		if args[i], err = eval(ctx, a, rec); err != nil {
			return nil, err
		}
	}
	if fn, ok := kernels[n.op]; ok {
		for i, a := range args {
			if args[i], err = unslicedBools(ctx, a); err != nil {
				return nil, err
			}
		}
		return compute.CallFunction(ctx, fn, nil, args...)
	}
	switch n.op {
	case opCast:
		if a, ok := args[0].(*compute.ArrayDatum); ok && isBool(n.args[0].typ) && isNumeric(n.typ) {
			arr := a.MakeArray()
			defer arr.Release()
			out, err := boolToNumber(compute.GetAllocator(ctx), arr.(*array.Boolean), n.typ)
			if err != nil {
				return nil, err
			}
			defer out.Release()
			return compute.NewDatum(out), nil
		}
		opts := compute.UnsafeCastOptions(n.typ) // a promotion Bind inserted: widening, or an integer into a float
		if n.exact {
			opts = compute.SafeCastOptions(n.typ)
			// an integer into a float rounds, as Go's conversion does
			opts.AllowFloatTruncate = isInteger(n.args[0].typ) && isFloat(n.typ)
		}
		return compute.CastDatum(ctx, args[0], opts)
	case opIsIn:
		return compute.CallFunction(ctx, "is_in", &compute.SetOptions{ValueSet: compute.NewDatumWithoutOwning(n.set),
			NullBehavior: compute.NullMatchingEmitNull}, args[0])
	case opTruncate:
		opts := compute.DefaultRoundTemporalOptions // a multiple of 1; weeks start on Monday
		opts.Unit = truncateUnits[TimeUnit(n.pattern)]
		return compute.CallFunction(ctx, "floor_temporal", &opts, args[0])
	}
	// this package's kernels take arrays
	rows := int(rec.NumRows())
	arrs := make([]arrow.Array, len(args))
	defer func() {
		for _, a := range arrs {
			if a != nil {
				a.Release()
			}
		}
	}()
	for i, a := range args {
		arr, err := toArray(ctx, a, rows)
		if err != nil {
			return nil, err
		}
		arrs[i] = arr
	}
	mem := compute.GetAllocator(ctx)
	var out arrow.Array
	switch n.op {
	case opMod:
		out, err = modArrays(mem, arrs[0], arrs[1])
	case opIsNotNull:
		out = isNotNull(mem, arrs[0])
	case opFillNull:
		out, err = fillNull(mem, arrs[0], arrs[1])
	case opContains, opStartsWith, opEndsWith:
		out, err = matchStrings(mem, n.op, arrs[0], n.pattern)
	case opCase:
		out, err = caseWhen(mem, n.typ, arrs, n.hasElse)
	case opPart:
		out, err = timeParts(mem, arrs[0], TimeUnit(n.pattern))
	case opParseTime:
		out, err = parseTimes(mem, arrs[0], n.pattern)
	case opTotal:
		out, err = totals(mem, arrs[0], totalUnits[TimeUnit(n.pattern)])
	case opRound:
		out, err = roundFloats(mem, arrs[0], n.pattern)
	case opAddMonths:
		out, err = addMonths(mem, arrs[0], n.pattern)
	case opLower, opUpper, opTrim:
		out, err = mapStrings(mem, arrs[0], n.op)
	case opLen:
		out, err = runeCounts(mem, arrs[0])
	case opReplace:
		out, err = replaceStrings(mem, arrs[0], n.pattern, n.with)
	case opSlice:
		out, err = sliceStrings(mem, arrs[0], n.start, n.length)
	case opConcat:
		out, err = concatStrings(mem, arrs)
	default:
		return nil, fmt.Errorf("expr: no kernel for %q", n.op)
	}
	if err != nil {
		return nil, err
	}
	d := compute.NewDatum(out)
	out.Release()
	return d, nil
}

// unslicedBools returns d, or a copy of it at offset 0 when it is a
// boolean array at another offset: arrow-go v18.8.0's boolean kernels
// (not, the bool-to-number cast) read such an array from its buffers'
// start. It releases d when it copies.
func unslicedBools(ctx context.Context, d compute.Datum) (compute.Datum, error) {
	a, ok := d.(*compute.ArrayDatum)
	if !ok || a.Value.DataType().ID() != arrow.BOOL || a.Value.Offset() == 0 {
		return d, nil
	}
	arr := a.MakeArray()
	defer arr.Release()
	c, err := array.Concatenate([]arrow.Array{arr}, compute.GetAllocator(ctx))
	if err != nil {
		return nil, err
	}
	d.Release()
	out := compute.NewDatum(c)
	c.Release()
	return out, nil
}

// truncateUnits are Truncate's units as Arrow's floor_temporal takes
// them.
var truncateUnits = map[TimeUnit]compute.RoundTemporalUnit{
	Year: compute.RoundTemporalYear, Quarter: compute.RoundTemporalQuarter, Month: compute.RoundTemporalMonth,
	Week: compute.RoundTemporalWeek, Day: compute.RoundTemporalDay, Hour: compute.RoundTemporalHour,
	Minute: compute.RoundTemporalMinute, Second: compute.RoundTemporalSecond,
}
