package data

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/atoll-runtime/atoll"
)

// The Arrow work a task does on its records: batching, filtering,
// projecting, splitting, sampling, sorting. Every function leaves its
// arguments' ownership alone and returns records the caller releases.

// concatRecords concatenates recs (of one schema) into one record.
func concatRecords(s *arrow.Schema, recs []arrow.RecordBatch) (arrow.RecordBatch, error) {
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
			return nil, fmt.Errorf("data: blocks of different schemas: %s and %s", s, r.Schema())
		}
	}
	for j := range cols {
		parts := make([]arrow.Array, len(recs))
		for i, r := range recs {
			parts[i] = r.Column(j)
		}
		c, err := array.Concatenate(parts, memory.DefaultAllocator)
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
		rec, err := concatRecords(pending[0].Schema(), pending)
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
	return fmt.Errorf("%w: data: no column %q (columns: %s)", atoll.ErrInvalidArgument, name, strings.Join(have, ", "))
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
	rec, err := concatRecords(recs[0].Schema(), recs)
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

// sampleColumn returns n values of column name spread evenly over recs,
// as an IPC block of one column.
func sampleColumn(ctx context.Context, recs []arrow.RecordBatch, name string, n int) ([]byte, error) {
	if len(recs) == 0 {
		return nil, nil
	}
	j, err := keyColumn(recs[0].Schema(), name)
	if err != nil {
		return nil, err
	}
	var total int64
	for _, r := range recs {
		total += r.NumRows()
	}
	idx := array.NewInt64Builder(memory.DefaultAllocator)
	defer idx.Release()
	parts := make([]arrow.Array, 0, len(recs))
	defer func() { releaseArrays(parts) }()
	for _, r := range recs {
		k := max(1, int64(n)*r.NumRows()/max(total, 1))
		for i := range k {
			idx.Append(i * r.NumRows() / k)
		}
		ia := idx.NewInt64Array()
		taken, err := compute.TakeArray(ctx, r.Column(j), ia)
		ia.Release()
		if err != nil {
			return nil, err
		}
		parts = append(parts, taken)
	}
	col, err := array.Concatenate(parts, memory.DefaultAllocator)
	if err != nil {
		return nil, err
	}
	defer col.Release()
	return columnBlock(name, col)
}

func columnBlock(name string, col arrow.Array) ([]byte, error) {
	s := arrow.NewSchema([]arrow.Field{{Name: name, Type: col.DataType(), Nullable: true}}, nil)
	rec := array.NewRecordBatch(s, []arrow.Array{col}, int64(col.Len()))
	defer rec.Release()
	return encodeBlock(rec)
}

// sortRecords concatenates recs and sorts them by column name.
func sortRecords(ctx context.Context, s *arrow.Schema, recs []arrow.RecordBatch, name string, desc bool) (arrow.RecordBatch, error) {
	rec, err := concatRecords(s, recs)
	if err != nil {
		return nil, err
	}
	defer rec.Release()
	if rec.NumRows() == 0 {
		rec.Retain()
		return rec, nil
	}
	j, err := keyColumn(s, name)
	if err != nil {
		return nil, err
	}
	key := compute.DefaultSortKey()
	key.ColumnIndex = j
	if desc {
		key.Order = compute.SortOrderDescending
	}
	order, err := compute.SortIndicesRecordBatch(ctx, rec, []compute.SortKey{key})
	if err != nil {
		return nil, err
	}
	defer order.Release()
	return takeRecord(ctx, rec, order)
}

func takeRecord(ctx context.Context, rec arrow.RecordBatch, idx arrow.Array) (arrow.RecordBatch, error) {
	cols := make([]arrow.Array, rec.NumCols())
	for j := range cols {
		c, err := compute.TakeArray(ctx, rec.Column(j), idx)
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
// o.Column against o.Bounds (a sort's map side), or, with no column, into
// equal row ranges (a repartition's map side).
func splitParts(ctx context.Context, s *arrow.Schema, recs []arrow.RecordBatch, o *outSpec) ([]arrow.RecordBatch, error) {
	rec, err := concatRecords(s, recs)
	if err != nil {
		return nil, err
	}
	defer rec.Release()
	out := make([]arrow.RecordBatch, 0, o.Parts)
	if o.Column == "" {
		rows, p := rec.NumRows(), int64(o.Parts)
		for i := range p {
			out = append(out, rec.NewSlice(i*rows/p, (i+1)*rows/p))
		}
		return out, nil
	}
	j, err := keyColumn(s, o.Column)
	if err != nil {
		return nil, err
	}
	bounds, err := decodeBlock(o.Bounds)
	if err != nil {
		return nil, err
	}
	defer bounds.Release()
	part, err := rangePartitioner(rec.Column(j), bounds.Column(0), o.Descending)
	if err != nil {
		return nil, err
	}
	idx := make([][]int64, o.Parts)
	for i := range int(rec.NumRows()) {
		p := part(i)
		idx[p] = append(idx[p], int64(i))
	}
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

// rangePartitioner returns the partition of each row of col: the number
// of bounds at or before its value in sort order (nulls go last, as the
// sort puts them).
func rangePartitioner(col, bounds arrow.Array, desc bool) (func(int) int, error) {
	n := bounds.Len()
	mk := func(less func(i, b int) bool) func(int) int {
		return func(i int) int {
			if col.IsNull(i) {
				return n
			}
			// first bound the value sorts before
			return sort.Search(n, func(b int) bool { return less(i, b) })
		}
	}
	switch c := col.(type) {
	case *array.Int64:
		b := bounds.(*array.Int64)
		return mk(func(i, k int) bool { return before(c.Value(i), b.Value(k), desc) }), nil
	case *array.Int32:
		b := bounds.(*array.Int32)
		return mk(func(i, k int) bool { return before(c.Value(i), b.Value(k), desc) }), nil
	case *array.Float64:
		b := bounds.(*array.Float64)
		return mk(func(i, k int) bool { return before(c.Value(i), b.Value(k), desc) }), nil
	case *array.Float32:
		b := bounds.(*array.Float32)
		return mk(func(i, k int) bool { return before(c.Value(i), b.Value(k), desc) }), nil
	case *array.String:
		b := bounds.(*array.String)
		return mk(func(i, k int) bool { return before(c.Value(i), b.Value(k), desc) }), nil
	}
	return nil, fmt.Errorf("%w: data: Sort by a %s column is not supported yet (int64, int32, float64, float32, string)", atoll.ErrInvalidArgument, col.DataType())
}

func before[T int64 | int32 | float64 | float32 | string](v, bound T, desc bool) bool {
	if desc {
		return v > bound
	}
	return v < bound
}

// chooseBounds sorts the samples (an IPC block of one column) and picks
// parts-1 bounds evenly among them, as an IPC block.
func chooseBounds(ctx context.Context, samples [][]byte, parts int, desc bool) ([]byte, error) {
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
	sorted, err := sortRecords(ctx, recs[0].Schema(), recs, recs[0].ColumnName(0), desc)
	if err != nil {
		return nil, err
	}
	defer sorted.Release()
	// nulls sort last: bounds come from the non-null values
	col := sorted.Column(0)
	nn := col.Len() - col.NullN()
	b := array.NewInt64Builder(memory.DefaultAllocator)
	for i := 1; i < parts && nn > 0; i++ {
		b.Append(int64(min(nn-1, max(0, i*nn/parts))))
	}
	idx := b.NewInt64Array()
	b.Release()
	defer idx.Release()
	bounds, err := compute.TakeArray(ctx, col, idx)
	if err != nil {
		return nil, err
	}
	defer bounds.Release()
	return columnBlock(recs[0].ColumnName(0), bounds)
}
