package data

import (
	"context"
	"fmt"
	"math"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/atoll-runtime/atoll/internal/errs"
)

// The kernels of GroupBy-Aggregate. Rows are grouped with Arrow's hash
// kernel (dictionary_encode, one column at a time); arrow-go has no
// grouped aggregation kernels (Acero's hash_sum and friends are C++
// only), so the per-group folds below are loops over the group ids.
//
// A partial aggregate is a record of the group columns then, per
// aggregation, its state columns (name is the aggregation's, e.g.
// sum(x)):
//
//	count  name int64
//	sum    name int64|float64, name#n int64 (values summed)
//	mean   name#n int64, name#sum float64
//	min    name (the column's type; null: no value yet)
//	max    name
//	std    name#n int64, name#mean float64, name#m2 float64 (sum of squared deviations)

// aggMap aggregates a map task's records partially and cuts the partial
// rows into o.Parts records by a hash of their group columns.
func aggMap(ctx context.Context, s *arrow.Schema, recs []arrow.RecordBatch, o *outSpec) ([]arrow.RecordBatch, error) {
	if s.NumFields() == 0 { // a task that read nothing
		return emptyParts(s, o.Parts), nil
	}
	rec, err := concatRecords(s, recs)
	if err != nil {
		return nil, err
	}
	defer rec.Release()
	part, err := aggregateRecord(ctx, rec, o.GroupKeys, o.Aggs, false, false)
	if err != nil {
		return nil, err
	}
	defer part.Release()
	cols := make([]arrow.Array, len(o.GroupKeys))
	for i := range cols {
		cols[i] = part.Column(i)
	}
	hash := keyHasher(cols)
	idx := make([][]int64, o.Parts)
	for i := range int(part.NumRows()) {
		p := hash(i) % uint64(o.Parts)
		idx[p] = append(idx[p], int64(i))
	}
	return takeParts(ctx, part, idx)
}

// aggReduce combines the partial aggregates of one hash part into one
// row per group, sorted by the group columns.
func aggReduce(ctx context.Context, s *arrow.Schema, recs []arrow.RecordBatch, o *outSpec) ([]arrow.RecordBatch, error) {
	if len(recs) == 0 {
		return nil, nil
	}
	rec, err := concatRecords(recs[0].Schema(), recs)
	if err != nil {
		return nil, err
	}
	defer rec.Release()
	final, err := aggregateRecord(ctx, rec, o.GroupKeys, o.Aggs, true, true)
	if err != nil {
		return nil, err
	}
	defer final.Release()
	keys := make([]SortKey, len(o.GroupKeys))
	for i, k := range o.GroupKeys {
		keys[i] = SortKey{Column: k}
	}
	sorted, err := sortRecords(ctx, final.Schema(), []arrow.RecordBatch{final}, keys)
	if err != nil {
		return nil, err
	}
	defer sorted.Release()
	return splitBlocks([]arrow.RecordBatch{sorted}, o.TargetMaxBlockSize, o.MaxBlocks), nil
}

func emptyParts(s *arrow.Schema, n int) []arrow.RecordBatch {
	out := make([]arrow.RecordBatch, n)
	for i := range out {
		out[i] = emptyRecord(s)
	}
	return out
}

// aggregateRecord groups rec's rows by keys and folds aggs over each
// group: rec holds raw rows, or partial aggregates (partialIn). It
// returns the group columns (each group's first row) and the partial
// states, or the final columns (finalOut).
func aggregateRecord(ctx context.Context, rec arrow.RecordBatch, keys []string, aggs []aggSpec, partialIn, finalOut bool) (arrow.RecordBatch, error) {
	s := rec.Schema()
	keyIdx := make([]int, len(keys))
	for i, k := range keys {
		j, err := keyColumn(s, k)
		if err != nil {
			return nil, err
		}
		switch s.Field(j).Type.ID() {
		case arrow.INT64, arrow.INT32, arrow.FLOAT64, arrow.FLOAT32, arrow.STRING:
		default:
			return nil, &ColumnError{Op: "GroupBy", Column: k, Type: s.Field(j).Type.String(), Supported: "int64, int32, float64, float32, string"}
		}
		keyIdx[i] = j
	}
	ids, first, err := groupIDs(ctx, rec, keyIdx)
	if err != nil {
		return nil, err
	}
	groups := len(first)
	accs := make([]accumulator, len(aggs))
	for i, a := range aggs {
		if accs[i], err = newAccumulator(a, rec, partialIn, groups); err != nil {
			return nil, err
		}
	}
	for i, g := range ids {
		for _, a := range accs {
			a.add(g, i)
		}
	}
	fb := array.NewInt64Builder(memory.DefaultAllocator)
	fb.AppendValues(first, nil)
	firstIdx := fb.NewInt64Array()
	fb.Release()
	defer firstIdx.Release()
	var fields []arrow.Field
	var cols []arrow.Array
	defer func() { releaseArrays(cols) }()
	for _, j := range keyIdx {
		c, err := compute.TakeArray(ctx, rec.Column(j), firstIdx)
		if err != nil {
			return nil, err
		}
		fields, cols = append(fields, s.Field(j)), append(cols, c)
	}
	for _, a := range accs {
		var fs []arrow.Field
		var cs []arrow.Array
		var err error
		if finalOut {
			fs, cs, err = a.final(ctx)
		} else {
			fs, cs, err = a.partial(ctx)
		}
		if err != nil {
			return nil, err
		}
		fields, cols = append(fields, fs...), append(cols, cs...)
	}
	return array.NewRecordBatch(arrow.NewSchema(fields, nil), cols, int64(groups)), nil
}

// groupIDs gives each row of rec a dense group id by the columns keyIdx:
// Arrow's dictionary_encode of each column (a null is a value of its
// own), the codes of several columns combined and encoded again. first
// holds each group's first row.
func groupIDs(ctx context.Context, rec arrow.RecordBatch, keyIdx []int) ([]int32, []int64, error) {
	n := int(rec.NumRows())
	opts := compute.DictionaryEncodeOptions{NullEncoding: compute.NullEncodingEncode}
	encode := func(col arrow.Array) (*array.Int32, int, func(), error) {
		enc, err := compute.DictionaryEncodeArray(ctx, opts, col)
		if err != nil {
			return nil, 0, nil, err
		}
		d, ok := enc.(*array.Dictionary)
		if !ok {
			enc.Release()
			return nil, 0, nil, fmt.Errorf("data: dictionary_encode returned %T", enc)
		}
		return d.Indices().(*array.Int32), d.Dictionary().Len(), enc.Release, nil
	}
	ids := make([]int32, n)
	var card int
	for k, j := range keyIdx {
		idx, c, done, err := encode(rec.Column(j))
		if err != nil {
			return nil, nil, err
		}
		if k == 0 {
			for i := range ids {
				ids[i] = idx.Value(i)
			}
			card = c
			done()
			continue
		}
		// combine with the codes so far, then make them dense again
		b := array.NewInt64Builder(memory.DefaultAllocator)
		b.Reserve(n)
		for i := range ids {
			b.UnsafeAppend(int64(ids[i])*int64(c) + int64(idx.Value(i)))
		}
		done()
		combined := b.NewInt64Array()
		b.Release()
		idx, card, done, err = encode(combined)
		combined.Release()
		if err != nil {
			return nil, nil, err
		}
		for i := range ids {
			ids[i] = idx.Value(i)
		}
		done()
	}
	first := make([]int64, card)
	for g := range first {
		first[g] = -1
	}
	for i, g := range ids {
		if first[g] < 0 {
			first[g] = int64(i)
		}
	}
	return ids, first, nil
}

// keyHasher returns a hash of row i's values of cols, the same in every
// process (FNV-1a over the values, mixed; -0 is 0 and every NaN one NaN,
// so values a group may hold hash alike).
func keyHasher(cols []arrow.Array) func(i int) uint64 {
	const offset, prime = 14695981039346656037, 1099511628211
	return func(i int) uint64 {
		h := uint64(offset)
		word := func(v uint64) {
			for range 8 {
				h = (h ^ (v & 0xff)) * prime
				v >>= 8
			}
		}
		for _, col := range cols {
			if col.IsNull(i) {
				word(0xfeedface)
				continue
			}
			switch c := col.(type) {
			case *array.Int64:
				word(uint64(c.Value(i)))
			case *array.Int32:
				word(uint64(c.Value(i)))
			case *array.Float64:
				word(floatBits(c.Value(i)))
			case *array.Float32:
				word(floatBits(float64(c.Value(i))))
			case *array.String:
				s := c.Value(i)
				for k := 0; k < len(s); k++ {
					h = (h ^ uint64(s[k])) * prime
				}
				word(uint64(len(s)))
			}
		}
		// FNV's low bits follow the values' low bits (keys that are all
		// multiples of 8 would share a part of 8): mix (MurmurHash3's
		// finalizer)
		h ^= h >> 33
		h *= 0xff51afd7ed558ccd
		h ^= h >> 33
		h *= 0xc4ceb9fe1a85ec53
		h ^= h >> 33
		return h
	}
}

func floatBits(f float64) uint64 {
	switch {
	case f == 0:
		return 0
	case math.IsNaN(f):
		return math.Float64bits(math.NaN())
	}
	return math.Float64bits(f)
}

// accumulator folds the rows of one aggregation into per-group states.
type accumulator interface {
	// add folds row i (a raw value, or a partial state) into group g.
	add(g int32, i int)
	partial(ctx context.Context) ([]arrow.Field, []arrow.Array, error)
	final(ctx context.Context) ([]arrow.Field, []arrow.Array, error)
}

func newAccumulator(a aggSpec, rec arrow.RecordBatch, partialIn bool, groups int) (accumulator, error) {
	name := a.name()
	s := rec.Schema()
	// col finds a column of rec: the aggregated column, or a state
	col := func(n string) (arrow.Array, error) {
		j, err := keyColumn(s, n)
		if err != nil {
			return nil, err
		}
		return rec.Column(j), nil
	}
	int64Col := func(n string) (*array.Int64, error) {
		c, err := col(n)
		if err != nil {
			return nil, err
		}
		ic, ok := c.(*array.Int64)
		if !ok {
			return nil, errs.Malformedf(blockWhat, "partial aggregate %s is %s", n, c.DataType())
		}
		return ic, nil
	}
	float64Col := func(n string) (*array.Float64, error) {
		c, err := col(n)
		if err != nil {
			return nil, err
		}
		fc, ok := c.(*array.Float64)
		if !ok {
			return nil, errs.Malformedf(blockWhat, "partial aggregate %s is %s", n, c.DataType())
		}
		return fc, nil
	}
	switch a.Fn {
	case "count":
		acc := &countAcc{name: name, n: make([]int64, groups)}
		if partialIn {
			var err error
			if acc.in, err = int64Col(name); err != nil {
				return nil, err
			}
		}
		return acc, nil
	case "min", "max":
		n := a.Column
		if partialIn {
			n = name
		}
		c, err := col(n)
		if err != nil {
			return nil, err
		}
		cmp, nan, err := orderOf(c)
		if err != nil {
			return nil, &ColumnError{Op: a.Fn, Column: a.Column, Type: c.DataType().String(), Supported: "int64, int32, float64, float32, string"}
		}
		acc := &minMaxAcc{name: name, col: c, cmp: cmp, nan: nan, max: a.Fn == "max", best: make([]int64, groups)}
		for g := range acc.best {
			acc.best[g] = -1
		}
		return acc, nil
	}
	// sum, mean, std
	if !partialIn {
		c, err := col(a.Column)
		if err != nil {
			return nil, err
		}
		v, err := numeric(c)
		if err != nil {
			return nil, &ColumnError{Op: a.Fn, Column: a.Column, Type: c.DataType().String(), Supported: "int64, int32, float64, float32"}
		}
		switch a.Fn {
		case "sum":
			return &sumAcc{name: name, raw: &v, isInt: v.isInt, n: make([]int64, groups), si: make([]int64, groups), sf: make([]float64, groups)}, nil
		case "mean":
			return &meanAcc{name: name, raw: &v, n: make([]int64, groups), sum: make([]float64, groups)}, nil
		}
		return &stdAcc{name: name, raw: &v, n: make([]int64, groups), mean: make([]float64, groups), m2: make([]float64, groups)}, nil
	}
	n, err := int64Col(name + "#n")
	if err != nil {
		return nil, err
	}
	switch a.Fn {
	case "sum":
		c, err := col(name)
		if err != nil {
			return nil, err
		}
		v, err := numeric(c)
		if err != nil {
			return nil, errs.Malformedf(blockWhat, "partial aggregate %s: %v", name, err)
		}
		return &sumAcc{name: name, in: &v, inN: n, isInt: v.isInt, n: make([]int64, groups), si: make([]int64, groups), sf: make([]float64, groups)}, nil
	case "mean":
		sum, err := float64Col(name + "#sum")
		if err != nil {
			return nil, err
		}
		return &meanAcc{name: name, inN: n, inSum: sum, n: make([]int64, groups), sum: make([]float64, groups)}, nil
	}
	mean, err := float64Col(name + "#mean")
	if err != nil {
		return nil, err
	}
	m2, err := float64Col(name + "#m2")
	if err != nil {
		return nil, err
	}
	return &stdAcc{name: name, inN: n, inMean: mean, inM2: m2, n: make([]int64, groups), mean: make([]float64, groups), m2: make([]float64, groups)}, nil
}

// numCol reads a numeric column as int64 (integer columns) or float64.
type numCol struct {
	arrow.Array
	isInt bool
	i     func(int) int64
	f     func(int) float64
}

func numeric(c arrow.Array) (numCol, error) {
	switch a := c.(type) {
	case *array.Int64:
		return numCol{c, true, a.Value, func(i int) float64 { return float64(a.Value(i)) }}, nil
	case *array.Int32:
		return numCol{c, true, func(i int) int64 { return int64(a.Value(i)) }, func(i int) float64 { return float64(a.Value(i)) }}, nil
	case *array.Float64:
		return numCol{c, false, nil, a.Value}, nil
	case *array.Float32:
		return numCol{c, false, nil, func(i int) float64 { return float64(a.Value(i)) }}, nil
	}
	return numCol{}, fmt.Errorf("data: %s is not numeric", c.DataType())
}

// orderOf returns a comparison of two rows of c and whether a row is NaN.
func orderOf(c arrow.Array) (func(i, j int) int, func(int) bool, error) {
	never := func(int) bool { return false }
	switch a := c.(type) {
	case *array.Int64:
		return comparer(a, a, false), never, nil
	case *array.Int32:
		return comparer(a, a, false), never, nil
	case *array.Float64:
		return comparer(a, a, false), func(i int) bool { return math.IsNaN(a.Value(i)) }, nil
	case *array.Float32:
		return comparer(a, a, false), func(i int) bool { return math.IsNaN(float64(a.Value(i))) }, nil
	case *array.String:
		return comparer(a, a, false), never, nil
	}
	return nil, nil, fmt.Errorf("data: no order for %s", c.DataType())
}

func int64Array(vs []int64, valid []bool) arrow.Array {
	b := array.NewInt64Builder(memory.DefaultAllocator)
	defer b.Release()
	b.AppendValues(vs, valid)
	return b.NewArray()
}

func float64Array(vs []float64, valid []bool) arrow.Array {
	b := array.NewFloat64Builder(memory.DefaultAllocator)
	defer b.Release()
	b.AppendValues(vs, valid)
	return b.NewArray()
}

func field(name string, t arrow.DataType) arrow.Field {
	return arrow.Field{Name: name, Type: t, Nullable: true}
}

// nonZero is the validity of groups with a count above min.
func nonZero(n []int64, floor int64) []bool {
	v := make([]bool, len(n))
	for g, c := range n {
		v[g] = c > floor
	}
	return v
}

type countAcc struct {
	name string
	in   *array.Int64 // partial counts
	n    []int64
}

func (a *countAcc) add(g int32, i int) {
	if a.in == nil {
		a.n[g]++
	} else {
		a.n[g] += a.in.Value(i)
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
	raw   *numCol      // raw values
	in    *numCol      // partial sums
	inN   *array.Int64 // partial counts
	isInt bool
	n     []int64
	si    []int64
	sf    []float64
}

func (a *sumAcc) add(g int32, i int) {
	if a.raw != nil {
		if a.raw.IsNull(i) {
			return
		}
		a.n[g]++
		if a.isInt {
			a.si[g] += a.raw.i(i)
		} else {
			a.sf[g] += a.raw.f(i)
		}
		return
	}
	a.n[g] += a.inN.Value(i)
	if a.isInt {
		a.si[g] += a.in.i(i)
	} else {
		a.sf[g] += a.in.f(i)
	}
}

func (a *sumAcc) sums(valid []bool) (arrow.Field, arrow.Array) {
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
	raw   *numCol
	inN   *array.Int64
	inSum *array.Float64
	n     []int64
	sum   []float64
}

func (a *meanAcc) add(g int32, i int) {
	if a.raw != nil {
		if !a.raw.IsNull(i) {
			a.n[g]++
			a.sum[g] += a.raw.f(i)
		}
		return
	}
	a.n[g] += a.inN.Value(i)
	a.sum[g] += a.inSum.Value(i)
}

func (a *meanAcc) partial(context.Context) ([]arrow.Field, []arrow.Array, error) {
	return []arrow.Field{field(a.name+"#n", arrow.PrimitiveTypes.Int64), field(a.name+"#sum", arrow.PrimitiveTypes.Float64)},
		[]arrow.Array{int64Array(a.n, nil), float64Array(a.sum, nil)}, nil
}

func (a *meanAcc) final(context.Context) ([]arrow.Field, []arrow.Array, error) {
	m := make([]float64, len(a.n))
	for g, c := range a.n {
		if c > 0 {
			m[g] = a.sum[g] / float64(c)
		}
	}
	return []arrow.Field{field(a.name, arrow.PrimitiveTypes.Float64)}, []arrow.Array{float64Array(m, nonZero(a.n, 0))}, nil
}

// stdAcc keeps count, mean and the sum of squared deviations (M2):
// Welford's update for a value, Chan et al.'s combination for a partial.
type stdAcc struct {
	name         string
	raw          *numCol
	inN          *array.Int64
	inMean, inM2 *array.Float64
	n            []int64
	mean, m2     []float64
}

func (a *stdAcc) add(g int32, i int) {
	if a.raw != nil {
		if a.raw.IsNull(i) {
			return
		}
		x := a.raw.f(i)
		a.n[g]++
		d := x - a.mean[g]
		a.mean[g] += d / float64(a.n[g])
		a.m2[g] += d * (x - a.mean[g])
		return
	}
	nb := a.inN.Value(i)
	if nb == 0 {
		return
	}
	na := a.n[g]
	n := na + nb
	d := a.inMean.Value(i) - a.mean[g]
	a.mean[g] += d * float64(nb) / float64(n)
	a.m2[g] += a.inM2.Value(i) + d*d*float64(na)*float64(nb)/float64(n)
	a.n[g] = n
}

func (a *stdAcc) partial(context.Context) ([]arrow.Field, []arrow.Array, error) {
	return []arrow.Field{field(a.name+"#n", arrow.PrimitiveTypes.Int64), field(a.name+"#mean", arrow.PrimitiveTypes.Float64),
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
	return []arrow.Field{field(a.name, arrow.PrimitiveTypes.Float64)}, []arrow.Array{float64Array(sd, nonZero(a.n, 1))}, nil
}

// minMaxAcc keeps each group's best row of the column (raw values or
// partial minima); the output takes those rows (Arrow's take kernel).
type minMaxAcc struct {
	name string
	col  arrow.Array
	cmp  func(i, j int) int
	nan  func(int) bool
	max  bool
	best []int64
}

func (a *minMaxAcc) add(g int32, i int) {
	if a.col.IsNull(i) || a.nan(i) {
		return
	}
	b := a.best[g]
	if b < 0 {
		a.best[g] = int64(i)
		return
	}
	c := a.cmp(i, int(b))
	if (a.max && c > 0) || (!a.max && c < 0) {
		a.best[g] = int64(i)
	}
}

func (a *minMaxAcc) partial(ctx context.Context) ([]arrow.Field, []arrow.Array, error) {
	valid := make([]bool, len(a.best))
	for g, b := range a.best {
		valid[g] = b >= 0
	}
	idx := int64Array(a.best, valid)
	defer idx.Release()
	c, err := compute.TakeArray(ctx, a.col, idx)
	if err != nil {
		return nil, nil, err
	}
	return []arrow.Field{field(a.name, a.col.DataType())}, []arrow.Array{c}, nil
}

func (a *minMaxAcc) final(ctx context.Context) ([]arrow.Field, []arrow.Array, error) {
	return a.partial(ctx)
}
