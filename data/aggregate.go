package data

import (
	"cmp"
	"context"
	"fmt"
	"math"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/atoll-runtime/atoll/internal/errs"
)

// The accumulators of GroupBy-Aggregate: each folds one aggregation's
// values into per-group states in one loop over the batch's group ids
// (typed slices of the value buffers; no call per row). A raw
// accumulator folds an aggregation's input (an expression evaluated
// over the batch); a partial one folds the partial states of other
// tasks (their columns named after the aggregation, groupby_kernels.go).

// accumulator folds the rows of one aggregation into per-group states.
type accumulator interface {
	// addAll folds row i into group ids[i], for every row.
	addAll(ids []int32)
	partial(ctx context.Context) ([]arrow.Field, []arrow.Array, error)
	final(ctx context.Context) ([]arrow.Field, []arrow.Array, error)
}

// numbers are a numeric array's values as int64 (integer types) or
// float64 (floats), with its validity; conversion copies only for the
// types that are neither.
type numbers struct {
	isInt bool
	ints  []int64
	flts  []float64
	arr   arrow.Array // valid rows: arr.IsValid
	nulls bool
	owned arrow.Array    // a converted copy to release
	dur   arrow.DataType // a duration's type: ints are its counts
}

func numbersOf(ctx context.Context, a arrow.Array) (numbers, error) {
	n := numbers{arr: a, nulls: a.NullN() > 0}
	switch a.DataType().ID() {
	case arrow.INT64:
		n.isInt, n.ints = true, a.(*array.Int64).Int64Values()
		return n, nil
	case arrow.FLOAT64:
		n.flts = a.(*array.Float64).Float64Values()
		return n, nil
	case arrow.DURATION:
		n.isInt, n.ints, n.dur = true, intKey(a).(*array.Int64).Int64Values(), a.DataType()
		return n, nil
	case arrow.INT8, arrow.INT16, arrow.INT32, arrow.UINT8, arrow.UINT16, arrow.UINT32, arrow.UINT64:
		c, err := compute.CastArray(ctx, a, compute.UnsafeCastOptions(arrow.PrimitiveTypes.Int64))
		if err != nil {
			return n, err
		}
		n.isInt, n.ints, n.owned = true, c.(*array.Int64).Int64Values(), c
		return n, nil
	case arrow.FLOAT32:
		c, err := compute.CastArray(ctx, a, compute.UnsafeCastOptions(arrow.PrimitiveTypes.Float64))
		if err != nil {
			return n, err
		}
		n.flts, n.owned = c.(*array.Float64).Float64Values(), c
		return n, nil
	}
	return n, fmt.Errorf("data: %s is not numeric", a.DataType())
}

func (n numbers) release() {
	if n.owned != nil {
		n.owned.Release()
	}
}

func (n numbers) valid(i int) bool { return !n.nulls || n.arr.IsValid(i) }

func (n numbers) float(i int) float64 {
	if n.isInt {
		return float64(n.ints[i])
	}
	return n.flts[i]
}

// newAccumulator makes the accumulator of a: over in, the values of its
// input evaluated over the batch (nil for Count()), or, partialIn, over
// the partial states in rec.
func newAccumulator(ctx context.Context, a Agg, in arrow.Array, rec arrow.RecordBatch, partialIn bool, groups int) (accumulator, error) {
	name := a.Name()
	if partialIn {
		return partialAccumulator(ctx, a, rec, groups)
	}
	what := "the input of " + name
	switch a.Func() {
	case "count":
		return &countAcc{name: name, raw: in, n: make([]int64, groups)}, nil
	case "min", "max":
		if !orderable(in.DataType()) {
			return nil, &ColumnError{Op: a.Func(), Column: what, Type: in.DataType().String(), Supported: "numbers, strings, timestamps and dates"}
		}
		return newMinMax(name, in, a.Func() == "max", groups), nil
	}
	v, err := numbersOf(ctx, in)
	if err != nil {
		return nil, &ColumnError{Op: a.Func(), Column: what, Type: in.DataType().String(), Supported: "numbers"}
	}
	switch a.Func() {
	case "sum":
		a := newSumAcc(name, v.isInt, v.dur, groups)
		a.raw = v
		return a, nil
	case "mean":
		return &meanAcc{name: name, raw: &v, dur: v.dur, n: make([]int64, groups), sum: make([]float64, groups)}, nil
	case "std":
		return &stdAcc{name: name, raw: &v, dur: v.dur, n: make([]int64, groups), mean: make([]float64, groups), m2: make([]float64, groups)}, nil
	}
	v.release()
	return nil, errs.Malformedf(specWhat, "aggregation %q", a.Func())
}

// partialAccumulator folds the partial states of a in rec.
func partialAccumulator(ctx context.Context, a Agg, rec arrow.RecordBatch, groups int) (accumulator, error) {
	name := a.Name()
	s := rec.Schema()
	col := func(n string) (arrow.Array, error) {
		j, err := keyColumn(s, n)
		if err != nil {
			return nil, err
		}
		return rec.Column(j), nil
	}
	int64Col := func(n string) ([]int64, error) {
		c, err := col(n)
		if err != nil {
			return nil, err
		}
		ic, ok := c.(*array.Int64)
		if !ok {
			return nil, errs.Malformedf(blockWhat, "partial aggregate %s is %s", n, c.DataType())
		}
		return ic.Int64Values(), nil
	}
	// float64Col also returns the duration type its state is of, if its
	// field says so (stateField).
	float64Col := func(n string) ([]float64, arrow.DataType, error) {
		c, err := col(n)
		if err != nil {
			return nil, nil, err
		}
		fc, ok := c.(*array.Float64)
		if !ok {
			return nil, nil, errs.Malformedf(blockWhat, "partial aggregate %s is %s", n, c.DataType())
		}
		j, _ := keyColumn(s, n)
		dur, err := stateDuration(s.Field(j))
		return fc.Float64Values(), dur, err
	}
	switch a.Func() {
	case "count":
		in, err := int64Col(name)
		if err != nil {
			return nil, err
		}
		return &countAcc{name: name, in: in, n: make([]int64, groups)}, nil
	case "min", "max":
		c, err := col(name)
		if err != nil {
			return nil, err
		}
		if !orderable(c.DataType()) {
			return nil, errs.Malformedf(blockWhat, "partial aggregate %s is %s", name, c.DataType())
		}
		return newMinMax(name, c, a.Func() == "max", groups), nil
	}
	n, err := int64Col(name + "#n")
	if err != nil {
		return nil, err
	}
	switch a.Func() {
	case "sum":
		c, err := col(name)
		if err != nil {
			return nil, err
		}
		v, err := numbersOf(ctx, c)
		if err != nil || v.owned != nil {
			v.release()
			return nil, errs.Malformedf(blockWhat, "partial aggregate %s is %s", name, c.DataType())
		}
		a := newSumAcc(name, v.isInt, v.dur, groups)
		a.in, a.inN = v, n
		return a, nil
	case "mean":
		sum, dur, err := float64Col(name + "#sum")
		if err != nil {
			return nil, err
		}
		return &meanAcc{name: name, inN: n, inSum: sum, dur: dur, n: make([]int64, groups), sum: make([]float64, groups)}, nil
	case "std":
		mean, dur, err := float64Col(name + "#mean")
		if err != nil {
			return nil, err
		}
		m2, _, err := float64Col(name + "#m2")
		if err != nil {
			return nil, err
		}
		return &stdAcc{name: name, inN: n, inMean: mean, inM2: m2, dur: dur, n: make([]int64, groups), mean: make([]float64, groups), m2: make([]float64, groups)}, nil
	}
	return nil, errs.Malformedf(specWhat, "aggregation %q", a.Func())
}

// int64Array and float64Array wrap an accumulator's values as an array
// without a copy (the accumulator is done with them): the values buffer
// is vs's memory, and valid (nil: all valid) becomes a bitmap.
func int64Array(vs []int64, valid []bool) arrow.Array {
	return wrapValues(arrow.PrimitiveTypes.Int64, len(vs), arrow.Int64Traits.CastToBytes(vs), valid)
}

func float64Array(vs []float64, valid []bool) arrow.Array {
	return wrapValues(arrow.PrimitiveTypes.Float64, len(vs), arrow.Float64Traits.CastToBytes(vs), valid)
}

func wrapValues(t arrow.DataType, n int, values []byte, valid []bool) arrow.Array {
	var bitmap *memory.Buffer
	nulls := 0
	if valid != nil {
		bits := make([]byte, bitutil.BytesForBits(int64(n)))
		for i, ok := range valid[:n] {
			if ok {
				bitutil.SetBit(bits, i)
			} else {
				nulls++
			}
		}
		if nulls > 0 {
			bitmap = memory.NewBufferBytes(bits)
		}
	}
	d := array.NewData(t, n, []*memory.Buffer{bitmap, memory.NewBufferBytes(values)}, nil, nulls, 0)
	defer d.Release()
	return array.MakeFromData(d)
}

func field(name string, t arrow.DataType) arrow.Field {
	return arrow.Field{Name: name, Type: t, Nullable: true}
}

// nonZero is the validity of groups with a count above floor.
func nonZero(n []int64, floor int64) []bool {
	v := make([]bool, len(n))
	for g, c := range n {
		v[g] = c > floor
	}
	return v
}

type countAcc struct {
	name string
	raw  arrow.Array // count(x): the values counted; nil for count()
	in   []int64     // partial counts
	n    []int64
}

func (a *countAcc) addAll(ids []int32) {
	switch {
	case a.in != nil:
		for i, g := range ids {
			a.n[g] += a.in[i]
		}
	case a.raw != nil && a.raw.NullN() > 0:
		for i, g := range ids {
			if a.raw.IsValid(i) {
				a.n[g]++
			}
		}
	default:
		for _, g := range ids {
			a.n[g]++
		}
	}
}

func (a *countAcc) partial(context.Context) ([]arrow.Field, []arrow.Array, error) {
	return []arrow.Field{field(a.name, arrow.PrimitiveTypes.Int64)}, []arrow.Array{int64Array(a.n, nil)}, nil
}

func (a *countAcc) final(ctx context.Context) ([]arrow.Field, []arrow.Array, error) {
	return a.partial(ctx)
}

type sumAcc struct {
	name  string
	raw   numbers // raw values
	in    numbers // partial sums
	inN   []int64 // partial counts
	isInt bool
	dur   arrow.DataType // durations are summed as their counts, and the sums are durations
	n     []int64
	si    []int64
	sf    []float64
}

// newSumAcc is a sum over groups groups: of integers in si (durations
// are integers, their counts), else of floats in sf.
func newSumAcc(name string, isInt bool, dur arrow.DataType, groups int) *sumAcc {
	a := &sumAcc{name: name, isInt: isInt, dur: dur, n: make([]int64, groups)}
	if isInt {
		a.si = make([]int64, groups)
	} else {
		a.sf = make([]float64, groups)
	}
	return a
}

func (a *sumAcc) addAll(ids []int32) {
	if a.inN != nil {
		for i, g := range ids {
			a.n[g] += a.inN[i]
			if a.isInt {
				a.si[g] += a.in.ints[i]
			} else {
				a.sf[g] += a.in.flts[i]
			}
		}
		return
	}
	v := a.raw
	switch {
	case v.isInt && !v.nulls:
		for i, g := range ids {
			a.n[g]++
			a.si[g] += v.ints[i]
		}
	case !v.isInt && !v.nulls:
		for i, g := range ids {
			a.n[g]++
			a.sf[g] += v.flts[i]
		}
	default:
		for i, g := range ids {
			if !v.arr.IsValid(i) {
				continue
			}
			a.n[g]++
			if v.isInt {
				a.si[g] += v.ints[i]
			} else {
				a.sf[g] += v.flts[i]
			}
		}
	}
	v.release()
}

func (a *sumAcc) sums(valid []bool) (arrow.Field, arrow.Array) {
	if a.dur != nil {
		c := int64Array(a.si, valid)
		defer c.Release()
		d := array.NewData(a.dur, c.Len(), c.Data().Buffers(), nil, c.NullN(), 0)
		defer d.Release()
		return field(a.name, a.dur), array.MakeFromData(d)
	}
	if a.isInt {
		return field(a.name, arrow.PrimitiveTypes.Int64), int64Array(a.si, valid)
	}
	return field(a.name, arrow.PrimitiveTypes.Float64), float64Array(a.sf, valid)
}

func (a *sumAcc) partial(context.Context) ([]arrow.Field, []arrow.Array, error) {
	f, c := a.sums(nil)
	return []arrow.Field{f, field(a.name+"#n", arrow.PrimitiveTypes.Int64)}, []arrow.Array{c, int64Array(a.n, nil)}, nil
}

func (a *sumAcc) final(context.Context) ([]arrow.Field, []arrow.Array, error) {
	f, c := a.sums(nonZero(a.n, 0))
	return []arrow.Field{f}, []arrow.Array{c}, nil
}

type meanAcc struct {
	name  string
	raw   *numbers
	inN   []int64
	inSum []float64
	dur   arrow.DataType // the mean of durations (as their counts) is a duration
	n     []int64
	sum   []float64
}

func (a *meanAcc) addAll(ids []int32) {
	if a.raw == nil {
		for i, g := range ids {
			a.n[g] += a.inN[i]
			a.sum[g] += a.inSum[i]
		}
		return
	}
	v := a.raw
	for i, g := range ids {
		if v.valid(i) {
			a.n[g]++
			a.sum[g] += v.float(i)
		}
	}
	v.release()
}

func (a *meanAcc) partial(context.Context) ([]arrow.Field, []arrow.Array, error) {
	return []arrow.Field{field(a.name+"#n", arrow.PrimitiveTypes.Int64), stateField(a.name+"#sum", a.dur)},
		[]arrow.Array{int64Array(a.n, nil), float64Array(a.sum, nil)}, nil
}

func (a *meanAcc) final(context.Context) ([]arrow.Field, []arrow.Array, error) {
	m := make([]float64, len(a.n))
	for g, c := range a.n {
		if c > 0 {
			m[g] = a.sum[g] / float64(c)
		}
	}
	return finalFloats(a.name, m, nonZero(a.n, 0), a.dur)
}

// stdAcc keeps count, mean and the sum of squared deviations (M2):
// Welford's update for a value, Chan et al.'s combination for a partial.
type stdAcc struct {
	name         string
	raw          *numbers
	inN          []int64
	inMean, inM2 []float64
	dur          arrow.DataType // of durations: a duration
	n            []int64
	mean, m2     []float64
}

func (a *stdAcc) addAll(ids []int32) {
	if a.raw != nil {
		v := a.raw
		for i, g := range ids {
			if !v.valid(i) {
				continue
			}
			x := v.float(i)
			a.n[g]++
			d := x - a.mean[g]
			a.mean[g] += d / float64(a.n[g])
			a.m2[g] += d * (x - a.mean[g])
		}
		v.release()
		return
	}
	for i, g := range ids {
		nb := a.inN[i]
		if nb == 0 {
			continue
		}
		na := a.n[g]
		n := na + nb
		d := a.inMean[i] - a.mean[g]
		a.mean[g] += d * float64(nb) / float64(n)
		a.m2[g] += a.inM2[i] + d*d*float64(na)*float64(nb)/float64(n)
		a.n[g] = n
	}
}

func (a *stdAcc) partial(context.Context) ([]arrow.Field, []arrow.Array, error) {
	return []arrow.Field{field(a.name+"#n", arrow.PrimitiveTypes.Int64), stateField(a.name+"#mean", a.dur),
			field(a.name+"#m2", arrow.PrimitiveTypes.Float64)},
		[]arrow.Array{int64Array(a.n, nil), float64Array(a.mean, nil), float64Array(a.m2, nil)}, nil
}

func (a *stdAcc) final(context.Context) ([]arrow.Field, []arrow.Array, error) {
	sd := make([]float64, len(a.n))
	for g, c := range a.n {
		if c > 1 {
			sd[g] = math.Sqrt(max(0, a.m2[g]) / float64(c-1))
		}
	}
	return finalFloats(a.name, sd, nonZero(a.n, 1), a.dur)
}

// durationUnitKey marks the float64 state of a mean or std of durations
// (their counts) with the durations' unit, so that the tasks that
// combine the states make a duration of the result.
const durationUnitKey = "atoll.duration_unit"

// stateField is the field of a float64 state, of durations of type dur
// (nil: of numbers).
func stateField(name string, dur arrow.DataType) arrow.Field {
	f := field(name, arrow.PrimitiveTypes.Float64)
	if dur != nil {
		f.Metadata = arrow.NewMetadata([]string{durationUnitKey}, []string{dur.(*arrow.DurationType).Unit.String()})
	}
	return f
}

// stateDuration is the duration type stateField marked f with; nil if
// none.
func stateDuration(f arrow.Field) (arrow.DataType, error) {
	unit, ok := f.Metadata.GetValue(durationUnitKey)
	if !ok {
		return nil, nil
	}
	for _, u := range []arrow.TimeUnit{arrow.Second, arrow.Millisecond, arrow.Microsecond, arrow.Nanosecond} {
		if u.String() == unit {
			return &arrow.DurationType{Unit: u}, nil
		}
	}
	return nil, errs.Malformedf(blockWhat, "partial aggregate %s: duration unit %q", f.Name, unit)
}

// finalFloats is a mean's or std's column: the float64s, or, of
// durations of type dur, durations (rounded to their unit).
func finalFloats(name string, vs []float64, valid []bool, dur arrow.DataType) ([]arrow.Field, []arrow.Array, error) {
	if dur == nil {
		return []arrow.Field{field(name, arrow.PrimitiveTypes.Float64)}, []arrow.Array{float64Array(vs, valid)}, nil
	}
	counts := make([]int64, len(vs))
	for g, v := range vs {
		if valid[g] {
			counts[g] = int64(math.Round(v))
		}
	}
	return []arrow.Field{field(name, dur)}, []arrow.Array{wrapValues(dur, len(counts), arrow.Int64Traits.CastToBytes(counts), valid)}, nil
}

// orderable says whether Min and Max take values of type t.
func orderable(t arrow.DataType) bool {
	switch t.ID() {
	case arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64, arrow.UINT8, arrow.UINT16, arrow.UINT32, arrow.UINT64,
		arrow.FLOAT32, arrow.FLOAT64, arrow.STRING, arrow.TIMESTAMP, arrow.DATE32, arrow.DATE64, arrow.DURATION:
		return true
	}
	return false
}

// minMaxAcc keeps each group's best row of the column (raw values or
// partial minima); the output takes those rows (Arrow's take kernel).
type minMaxAcc struct {
	name string
	col  arrow.Array
	max  bool
	best []int64
}

func newMinMax(name string, col arrow.Array, isMax bool, groups int) *minMaxAcc {
	a := &minMaxAcc{name: name, col: col, max: isMax, best: make([]int64, groups)}
	for g := range a.best {
		a.best[g] = -1
	}
	return a
}

func (a *minMaxAcc) addAll(ids []int32) {
	switch c := intKey(a.col).(type) {
	case *array.String:
		bestOf(a, ids, c.Value, never)
	case *array.Float64:
		bestOf(a, ids, c.Value, func(v float64) bool { return math.IsNaN(v) })
	case *array.Float32:
		bestOf(a, ids, c.Value, func(v float32) bool { return v != v })
	case *array.Int64:
		bestOf(a, ids, c.Value, never)
	case *array.Int32:
		bestOf(a, ids, c.Value, never)
	case *array.Int16:
		bestOf(a, ids, c.Value, never)
	case *array.Int8:
		bestOf(a, ids, c.Value, never)
	case *array.Uint64:
		bestOf(a, ids, c.Value, never)
	case *array.Uint32:
		bestOf(a, ids, c.Value, never)
	case *array.Uint16:
		bestOf(a, ids, c.Value, never)
	case *array.Uint8:
		bestOf(a, ids, c.Value, never)
	}
}

func never[T any](T) bool { return false }

// bestOf keeps, per group, the row of the smallest (or largest) value
// that is neither null nor NaN.
func bestOf[T cmp.Ordered](a *minMaxAcc, ids []int32, value func(int) T, skip func(T) bool) {
	nulls := a.col.NullN() > 0
	for i, g := range ids {
		if nulls && a.col.IsNull(i) {
			continue
		}
		v := value(i)
		if skip(v) {
			continue
		}
		b := a.best[g]
		if b < 0 {
			a.best[g] = int64(i)
			continue
		}
		if c := cmp.Compare(v, value(int(b))); a.max && c > 0 || !a.max && c < 0 {
			a.best[g] = int64(i)
		}
	}
}

func (a *minMaxAcc) partial(ctx context.Context) ([]arrow.Field, []arrow.Array, error) {
	valid := make([]bool, len(a.best))
	for g, b := range a.best {
		valid[g] = b >= 0
	}
	idx := int64Array(a.best, valid)
	defer idx.Release()
	c, err := takeArray(ctx, a.col, idx)
	if err != nil {
		return nil, nil, err
	}
	return []arrow.Field{field(a.name, a.col.DataType())}, []arrow.Array{c}, nil
}

func (a *minMaxAcc) final(ctx context.Context) ([]arrow.Field, []arrow.Array, error) {
	return a.partial(ctx)
}
