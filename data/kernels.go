package data

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/atoll-runtime/atoll/internal/errs"
)

// The Arrow work a task does on its records: batching, filtering,
// projecting, splitting, sampling, sorting. Every function leaves its
// arguments' ownership alone and returns records the caller releases.

// concatRecords concatenates recs (of one schema) into one record, its
// columns from mem (a task's: compute.GetAllocator of its context, the
// pool).
func concatRecords(mem memory.Allocator, s *arrow.Schema, recs []arrow.RecordBatch) (arrow.RecordBatch, error) {
	if len(recs) == 1 {
		recs[0].Retain()
		return recs[0], nil
	}
	if len(recs) == 0 {
		return emptyRecord(s), nil
	}
	cols := make([]arrow.Array, s.NumFields())
	var rows int64
	for _, r := range recs {
		rows += r.NumRows()
		if !r.Schema().Equal(s) {
			return nil, &SchemaError{What: "blocks", A: schemaLine(s), B: schemaLine(r.Schema())}
		}
	}
	for j := range cols {
		parts := make([]arrow.Array, len(recs))
		for i, r := range recs {
			parts[i] = r.Column(j)
		}
		c, err := array.Concatenate(parts, mem)
		if err != nil {
			releaseArrays(cols)
			return nil, err
		}
		cols[j] = c
	}
	rec := array.NewRecordBatch(s, cols, rows)
	releaseArrays(cols)
	return rec, nil
}

func releaseArrays(as []arrow.Array) {
	for _, a := range as {
		if a != nil {
			a.Release()
		}
	}
}

// rebatch cuts recs into batches of size rows (the last may be smaller);
// size <= 0 keeps the records as they are. Batches within a record are
// slices (no copy); a batch across records is concatenated.
func rebatch(recs []arrow.RecordBatch, size int) []arrow.RecordBatch {
	var out []arrow.RecordBatch
	if size <= 0 {
		for _, r := range recs {
			r.Retain()
			out = append(out, r)
		}
		return out
	}
	var pending []arrow.RecordBatch
	var have int64
	flush := func() {
		if len(pending) == 0 {
			return
		}
		rec, err := concatRecords(memory.DefaultAllocator, pending[0].Schema(), pending)
		if err == nil {
			out = append(out, rec)
		}
		releaseAll(pending)
		pending, have = nil, 0
	}
	for _, r := range recs {
		for off := int64(0); off < r.NumRows(); {
			n := min(int64(size)-have, r.NumRows()-off)
			pending = append(pending, r.NewSlice(off, off+n))
			have += n
			off += n
			if have == int64(size) {
				flush()
			}
		}
	}
	flush()
	return out
}

func filterRecord(ctx context.Context, rec arrow.RecordBatch, mask arrow.Array) (arrow.RecordBatch, error) {
	return compute.FilterRecordBatch(ctx, rec, mask, compute.DefaultFilterOptions())
}

// sampleRecord keeps each row of rec with probability fraction (every
// row at 1). Above skipBelow, a row is kept when its draw from rng, a
// uint64, is under fraction's share of 2^64. At or below it, the rows
// skipped before each kept one are drawn instead: their count is
// geometric, floor(ln U / ln(1-fraction)) for U uniform in (0, 1], so a
// draw and a logarithm cost a kept row rather than a draw every row.
// Either way each row is kept with probability fraction, independently.
func sampleRecord(ctx context.Context, rec arrow.RecordBatch, fraction float64, rng *rand.PCG) (arrow.RecordBatch, error) {
	if rng == nil {
		return nil, errs.Malformedf(specWhat, "a sample without its generator")
	}
	n := int(rec.NumRows())
	buf := memory.NewResizableBuffer(memory.DefaultAllocator)
	buf.Resize(int(bitutil.BytesForBits(int64(n))))
	bits := buf.Bytes()
	clear(bits)
	switch {
	case fraction >= 1:
		bitutil.SetBitsTo(bits, 0, int64(n), true)
	case fraction > skipBelow:
		under := uint64(fraction * (1 << 64)) // below 2^64: fraction < 1
		for i := range n {
			if rng.Uint64() < under {
				bits[i>>3] |= 1 << (i & 7)
			}
		}
	case fraction > 0:
		lnq := math.Log1p(-fraction) // ln(1-fraction) < 0
		for i := skipped(rng, lnq, n); i < n; i += 1 + skipped(rng, lnq, n-i-1) {
			bits[i>>3] |= 1 << (i & 7)
		}
	}
	m := array.NewBoolean(n, buf, nil, 0)
	buf.Release()
	defer m.Release()
	return filterRecord(ctx, rec, m)
}

// skipBelow is the fraction at and below which sampleRecord draws the
// rows skipped rather than a draw a row: a logarithm costs about as much
// as a few draws.
const skipBelow = 0.25

// skipped draws the rows skipped before the next one kept, with lnq
// ln(1-fraction): geometric, capped at most (the rows left).
func skipped(rng *rand.PCG, lnq float64, most int) int {
	u := float64(rng.Uint64()>>11+1) / (1 << 53) // (0, 1]
	k := math.Log(u) / lnq
	if k >= float64(most) { // and +Inf
		return most
	}
	return int(k)
}

// projectRecord keeps (or, with drop, removes) the named columns.
func projectRecord(rec arrow.RecordBatch, names []string, drop bool) (arrow.RecordBatch, error) {
	s := rec.Schema()
	var idx []int
	if drop {
		gone := map[string]bool{}
		for _, n := range names {
			if len(s.FieldIndices(n)) == 0 {
				return nil, unknownColumn(n, s)
			}
			gone[n] = true
		}
		for i, f := range s.Fields() {
			if !gone[f.Name] {
				idx = append(idx, i)
			}
		}
	} else {
		for _, n := range names {
			is := s.FieldIndices(n)
			if len(is) == 0 {
				return nil, unknownColumn(n, s)
			}
			idx = append(idx, is[0])
		}
	}
	fields := make([]arrow.Field, len(idx))
	cols := make([]arrow.Array, len(idx))
	for i, j := range idx {
		fields[i], cols[i] = s.Field(j), rec.Column(j)
	}
	return array.NewRecordBatch(arrow.NewSchema(fields, nil), cols, rec.NumRows()), nil
}

func unknownColumn(name string, s *arrow.Schema) error {
	var have []string
	for _, f := range s.Fields() {
		have = append(have, f.Name)
	}
	return &ColumnError{Column: name, Columns: have}
}

// withColumn returns rec with col appended as column name (replacing a
// column of that name).
func withColumn(rec arrow.RecordBatch, name string, col arrow.Array) arrow.RecordBatch {
	var fields []arrow.Field
	var cols []arrow.Array
	for i, f := range rec.Schema().Fields() {
		if f.Name != name {
			fields = append(fields, f)
			cols = append(cols, rec.Column(i))
		}
	}
	fields = append(fields, arrow.Field{Name: name, Type: col.DataType(), Nullable: true})
	cols = append(cols, col)
	return array.NewRecordBatch(arrow.NewSchema(fields, nil), cols, rec.NumRows())
}

// splitBlocks turns a task's records into at most maxBlocks records, each
// of at most target bytes when maxBlocks allows (a record per block:
// several records are concatenated, a large one cut into row slices).
func splitBlocks(recs []arrow.RecordBatch, target int64, maxBlocks int) []arrow.RecordBatch {
	if len(recs) == 0 {
		return nil
	}
	rec, err := concatRecords(memory.DefaultAllocator, recs[0].Schema(), recs)
	if err != nil {
		return nil
	}
	defer rec.Release()
	size := recordBytes(rec)
	n := int64(1)
	if target > 0 && size > target {
		n = (size + target - 1) / target
	}
	n = max(1, min(n, int64(maxBlocks), max(rec.NumRows(), 1)))
	out := make([]arrow.RecordBatch, 0, n)
	rows := rec.NumRows()
	for i := range n {
		out = append(out, rec.NewSlice(i*rows/n, (i+1)*rows/n))
	}
	return out
}

// keyColumn returns the index of column name in s.
func keyColumn(s *arrow.Schema, name string) (int, error) {
	is := s.FieldIndices(name)
	if len(is) == 0 {
		return 0, unknownColumn(name, s)
	}
	return is[0], nil
}

// sampleKeys returns n rows of the key columns spread evenly over recs,
// as an IPC block.
func sampleKeys(ctx context.Context, recs []arrow.RecordBatch, keys []SortKey, n int) ([]byte, error) {
	if len(recs) == 0 {
		return nil, nil
	}
	names := make([]string, len(keys))
	for i, k := range keys {
		names[i] = k.Column
	}
	var total int64
	for _, r := range recs {
		total += r.NumRows()
	}
	idx := array.NewInt64Builder(memory.DefaultAllocator)
	defer idx.Release()
	parts := make([]arrow.RecordBatch, 0, len(recs))
	defer func() { releaseAll(parts) }()
	for _, r := range recs {
		if r.NumRows() == 0 {
			continue
		}
		kr, err := projectRecord(r, names, false)
		if err != nil {
			return nil, err
		}
		k := max(1, int64(n)*r.NumRows()/max(total, 1))
		for i := range k {
			idx.Append(i * r.NumRows() / k)
		}
		ia := idx.NewInt64Array()
		taken, err := takeRecord(ctx, kr, ia)
		ia.Release()
		kr.Release()
		if err != nil {
			return nil, err
		}
		parts = append(parts, taken)
	}
	if len(parts) == 0 {
		return nil, nil
	}
	rec, err := concatRecords(compute.GetAllocator(ctx), parts[0].Schema(), parts)
	if err != nil {
		return nil, err
	}
	defer rec.Release()
	return encodeBlock(rec)
}

// sortRecords concatenates recs and sorts them by keys (nulls last).
func sortRecords(ctx context.Context, s *arrow.Schema, recs []arrow.RecordBatch, keys []SortKey) (arrow.RecordBatch, error) {
	rec, err := concatRecords(compute.GetAllocator(ctx), s, recs)
	if err != nil {
		return nil, err
	}
	defer rec.Release()
	if rec.NumRows() == 0 {
		rec.Retain()
		return rec, nil
	}
	if len(keys) == 1 {
		j, err := keyColumn(s, keys[0].Column)
		if err != nil {
			return nil, err
		}
		if order := int64Order(intKey(rec.Column(j)), keys[0].Descending, compute.GetAllocator(ctx)); order != nil {
			defer order.Release()
			return takeRecord(ctx, rec, order)
		}
	}
	sks := make([]compute.SortKey, len(keys))
	for i, k := range keys {
		j, err := keyColumn(s, k.Column)
		if err != nil {
			return nil, err
		}
		sks[i] = compute.DefaultSortKey()
		sks[i].ColumnIndex = j
		if k.Descending {
			sks[i].Order = compute.SortOrderDescending
		}
	}
	order, err := compute.SortIndicesRecordBatch(ctx, rec, sks)
	if err != nil {
		return nil, err
	}
	defer order.Release()
	return takeRecord(ctx, rec, order)
}

func takeRecord(ctx context.Context, rec arrow.RecordBatch, idx arrow.Array) (arrow.RecordBatch, error) {
	cols := make([]arrow.Array, rec.NumCols())
	for j := range cols {
		c, err := takeArray(ctx, rec.Column(j), idx)
		if err != nil {
			releaseArrays(cols)
			return nil, err
		}
		cols[j] = c
	}
	out := array.NewRecordBatch(rec.Schema(), cols, int64(idx.Len()))
	releaseArrays(cols)
	return out, nil
}

// splitParts cuts a task's records into o.Parts records: by range of
// the o.Keys columns against o.Bounds (a sort's map side), or, with no
// keys, into equal row ranges (a repartition's map side).
func splitParts(ctx context.Context, s *arrow.Schema, recs []arrow.RecordBatch, o *outSpec) ([]arrow.RecordBatch, error) {
	rec, err := concatRecords(compute.GetAllocator(ctx), s, recs)
	if err != nil {
		return nil, err
	}
	defer rec.Release()
	out := make([]arrow.RecordBatch, 0, o.Parts)
	if len(o.Keys) == 0 {
		rows, p := rec.NumRows(), int64(o.Parts)
		for i := range p {
			out = append(out, rec.NewSlice(i*rows/p, (i+1)*rows/p))
		}
		return out, nil
	}
	bounds, err := decodeBlock(o.Bounds)
	if err != nil {
		return nil, err
	}
	defer bounds.Release()
	part, err := rangePartitioner(rec, bounds, o.Keys, o.TaskIndex)
	if err != nil {
		return nil, err
	}
	idx := make([][]int64, o.Parts)
	for i := range int(rec.NumRows()) {
		p := part(i)
		idx[p] = append(idx[p], int64(i))
	}
	return takeParts(ctx, rec, idx)
}

// takeParts returns a record per index list: rec's rows at those indices.
func takeParts(ctx context.Context, rec arrow.RecordBatch, idx [][]int64) ([]arrow.RecordBatch, error) {
	out := make([]arrow.RecordBatch, 0, len(idx))
	for _, is := range idx {
		b := array.NewInt64Builder(memory.DefaultAllocator)
		b.AppendValues(is, nil)
		ia := b.NewInt64Array()
		b.Release()
		r, err := takeRecord(ctx, rec, ia)
		ia.Release()
		if err != nil {
			releaseAll(out)
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

// rangePartitioner returns the partition of each row of rec: the number
// of bounds (rows of the key columns) at or before the row in the order
// of keys, the order the sort kernel gives (each key ascending or
// descending, NaN after the numbers and nulls last in either direction);
// a row equal to several bounds goes to one of their parts, in turn
// (seed: where the turns start).
func rangePartitioner(rec, bounds arrow.RecordBatch, keys []SortKey, seed int) (func(int) int, error) {
	cmps := make([]func(i, b int) int, len(keys))
	for n, k := range keys {
		j, err := keyColumn(rec.Schema(), k.Column)
		if err != nil {
			return nil, err
		}
		bj, err := keyColumn(bounds.Schema(), k.Column)
		if err != nil {
			return nil, err
		}
		if cmps[n], err = rowComparer(k.Column, rec.Column(j), bounds.Column(bj), k.Descending); err != nil {
			return nil, err
		}
	}
	order := func(i, b int) int {
		for _, c := range cmps {
			if r := c(i, b); r != 0 {
				return r
			}
		}
		return 0
	}
	nb, ties := int(bounds.NumRows()), seed
	return func(i int) int {
		// the first bound the row sorts before
		hi := sort.Search(nb, func(b int) bool { return order(i, b) < 0 })
		if hi == 0 || order(i, hi-1) != 0 {
			return hi
		}
		// The row equals bounds lo to hi-1: a key that common took
		// several bounds. Any part from lo+1 to hi keeps the order (those
		// before hi hold only rows equal to it), so such rows go to each
		// in turn: no part holds every row of a frequent key.
		lo := sort.Search(hi, func(b int) bool { return order(i, b) <= 0 })
		ties++
		return lo + 1 + ties%(hi-lo)
	}, nil
}

// rowComparer compares value i of col with value b of bounds (of the
// same type) in sort order: -1 before, 0 equal, 1 after.
func rowComparer(name string, col, bounds arrow.Array, desc bool) (func(i, b int) int, error) {
	if !arrow.TypeEqual(col.DataType(), bounds.DataType()) {
		return nil, errs.Malformedf(specWhat, "sort bounds of type %s for the %s column %q", bounds.DataType(), col.DataType(), name)
	}
	col, bounds = intKey(col), intKey(bounds)
	switch c := col.(type) {
	case *array.Int64:
		return comparer(c, bounds.(*array.Int64), desc), nil
	case *array.Int32:
		return comparer(c, bounds.(*array.Int32), desc), nil
	case *array.Float64:
		return comparer(c, bounds.(*array.Float64), desc), nil
	case *array.Float32:
		return comparer(c, bounds.(*array.Float32), desc), nil
	case *array.String:
		return comparer(c, bounds.(*array.String), desc), nil
	}
	return nil, &ColumnError{Op: "Sort", Column: name, Type: col.DataType().String(), Supported: sortableTypes}
}

type valueArray[T int64 | int32 | float64 | float32 | string] interface {
	Value(int) T
	IsNull(int) bool
}

func comparer[T int64 | int32 | float64 | float32 | string, A valueArray[T]](col, bounds A, desc bool) func(i, b int) int {
	return func(i, b int) int {
		cn, bn := col.IsNull(i), bounds.IsNull(b)
		switch {
		case cn || bn:
			return boolCmp(cn, bn)
		}
		v, w := col.Value(i), bounds.Value(b)
		if vn, wn := isNaN(v), isNaN(w); vn || wn { // NaN: after the numbers, either direction
			return boolCmp(vn, wn)
		}
		r := cmp.Compare(v, w)
		if desc {
			r = -r
		}
		return r
	}
}

func isNaN[T int64 | int32 | float64 | float32 | string](v T) bool {
	switch x := any(v).(type) {
	case float64:
		return math.IsNaN(x)
	case float32:
		return math.IsNaN(float64(x))
	}
	return false
}

// boolCmp orders false before true.
func boolCmp(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}

// chooseBounds sorts the samples (IPC blocks of the key columns) by keys
// and picks parts-1 bound rows evenly among them, as an IPC block.
func chooseBounds(ctx context.Context, samples [][]byte, parts int, keys []SortKey) ([]byte, error) {
	var recs []arrow.RecordBatch
	defer func() { releaseAll(recs) }()
	for _, s := range samples {
		if len(s) == 0 {
			continue
		}
		r, err := decodeBlock(s)
		if err != nil {
			return nil, err
		}
		recs = append(recs, r)
	}
	if len(recs) == 0 {
		return nil, nil
	}
	sorted, err := sortRecords(ctx, recs[0].Schema(), recs, keys)
	if err != nil {
		return nil, err
	}
	defer sorted.Release()
	// every sampled row, nulls (last) too: a key mostly null takes
	// several bounds, and its rows spread over their parts
	nn := int(sorted.NumRows())
	b := array.NewInt64Builder(memory.DefaultAllocator)
	for i := 1; i < parts && nn > 0; i++ {
		b.Append(int64(min(nn-1, max(0, i*nn/parts))))
	}
	idx := b.NewInt64Array()
	b.Release()
	defer idx.Release()
	bounds, err := takeRecord(ctx, sorted, idx)
	if err != nil {
		return nil, err
	}
	defer bounds.Release()
	return encodeBlock(bounds)
}

// takeArray is Arrow's take (row i of the result is values[indices[i]],
// null for a null index), but for strings: arrow-go v18.8.0 appends
// string values one at a time into a buffer it grows by copying, which
// cost a join a third of its time; here the bytes are counted, the
// buffer allocated once and each value copied once.
func takeArray(ctx context.Context, values, indices arrow.Array) (arrow.Array, error) {
	s, ok := values.(*array.String)
	if !ok {
		return compute.TakeArray(ctx, values, indices)
	}
	var idx func(i int) int
	switch ix := indices.(type) {
	case *array.Int32:
		vs := ix.Int32Values()
		idx = func(i int) int { return int(vs[i]) }
	case *array.Int64:
		vs := ix.Int64Values()
		idx = func(i int) int { return int(vs[i]) }
	default:
		return compute.TakeArray(ctx, values, indices)
	}
	n := indices.Len()
	offs, data := s.ValueOffsets(), s.ValueBytes()
	base := offs[0]
	size := 0
	for i := range n {
		if indices.IsValid(i) {
			j := idx(i)
			if j < 0 || j >= s.Len() {
				return nil, fmt.Errorf("data: take of row %d of %d", j, s.Len())
			}
			size += int(offs[j+1] - offs[j])
		}
	}
	if size > math.MaxInt32 {
		return compute.TakeArray(ctx, values, indices) // too large for int32 offsets: Arrow's error
	}
	mem := compute.GetAllocator(ctx)
	offBuf := memory.NewResizableBuffer(mem)
	offBuf.Resize((n + 1) * 4)
	out := arrow.GetData[int32](offBuf.Bytes())[:n+1]
	dataBuf := memory.NewResizableBuffer(mem)
	dataBuf.Resize(size)
	dst := dataBuf.Bytes()
	valid := memory.NewResizableBuffer(mem)
	valid.Resize(int(bitutil.BytesForBits(int64(n))))
	vb := valid.Bytes()
	nulls := 0
	at := int32(0)
	for i := range n {
		out[i] = at
		if indices.IsNull(i) {
			bitutil.ClearBit(vb, i)
			nulls++
			continue
		}
		j := idx(i)
		if s.IsNull(j) {
			bitutil.ClearBit(vb, i)
			nulls++
			continue
		}
		bitutil.SetBit(vb, i)
		at += int32(copy(dst[at:], data[offs[j]-base:offs[j+1]-base]))
	}
	out[n] = at
	if nulls == 0 {
		valid.Release()
		valid = nil
	}
	d := array.NewData(arrow.BinaryTypes.String, n, []*memory.Buffer{valid, offBuf, dataBuf}, nil, nulls, 0)
	for _, b := range []*memory.Buffer{valid, offBuf, dataBuf} {
		if b != nil {
			b.Release()
		}
	}
	defer d.Release()
	return array.MakeFromData(d), nil
}
