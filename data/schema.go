package data

import (
	"fmt"
	"runtime"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/atoll-runtime/atoll"
	"github.com/atoll-runtime/atoll/data/expr"
)

// The plan's schemas: a dataset is checked before any of its tasks is
// submitted. From the source's schema, when the driver knows it (Range,
// stored blocks, a Parquet file's footer), each operation's output schema
// is derived, and each operation is checked against its input's: the
// columns it names exist, its expressions bind (package data/expr's
// types), its aggregations take their inputs' types. A registered
// function's output (Map, MapBatches, FlatMap, AddColumn) is unknown
// until it runs: the operations after it are checked in their tasks, as
// before, with the same typed errors. The same walk computes what the
// read may leave out (pushdown.go).

// checkOps derives the schema after each of ops (ops[0] is the source,
// whose schema is in), checking each op: schemas[i] is the input of
// ops[i+1], nil where unknown.
func checkOps(in *arrow.Schema, ops []*logicalOp) ([]*arrow.Schema, error) {
	schemas := []*arrow.Schema{in}
	s := in
	for _, o := range ops[1:] {
		out, err := o.outSchema(s)
		if err != nil {
			return nil, err
		}
		s = out
		schemas = append(schemas, s)
	}
	return schemas, nil
}

// outSchema is the schema o makes from in (nil: unknown), or the error
// of an operation that does not fit in.
func (o *logicalOp) outSchema(in *arrow.Schema) (*arrow.Schema, error) {
	switch o.kind {
	case kindLimit:
		return in, nil
	case kindAllToAll:
		return o.allToAllSchema(in)
	}
	switch o.op.Kind {
	case "map", "flat_map", "map_batches", "map_batches_class", "add_column":
		return nil, nil
	}
	if in == nil {
		return nil, nil
	}
	switch o.op.Kind {
	case "filter", "sample", "write_parquet", "write_csv", "write_json":
		return in, nil
	case "join_probe":
		return o.joinSchema(in)
	case "select", "drop":
		for _, c := range o.op.Columns {
			if len(in.FieldIndices(c)) == 0 {
				return nil, unknownColumn(c, in)
			}
		}
		var fields []arrow.Field
		if o.op.Kind == "select" {
			for _, c := range o.op.Columns {
				fields = append(fields, in.Field(in.FieldIndices(c)[0]))
			}
		} else {
			for _, f := range in.Fields() {
				if !slices.Contains(o.op.Columns, f.Name) {
					fields = append(fields, f)
				}
			}
		}
		return arrow.NewSchema(fields, nil), nil
	case "rename":
		return renameSchema(in, o.op.Columns)
	case "where":
		t, err := o.op.Exprs[0].TypeOf(in)
		if err != nil {
			return nil, err
		}
		if t.ID() != arrow.BOOL && t.ID() != arrow.NULL {
			return nil, &expr.Error{Expr: o.op.Exprs[0].String(), Type: expr.TypeName(t),
				Message: "a filter's condition is " + expr.TypeName(t) + ", not bool"}
		}
		return in, nil
	case "with_column":
		t, err := o.op.Exprs[0].TypeOf(in)
		if err != nil {
			return nil, err
		}
		fields := slices.Clone(in.Fields())
		f := arrow.Field{Name: o.op.Column, Type: t, Nullable: true}
		if idx := in.FieldIndices(o.op.Column); len(idx) > 0 {
			fields[idx[0]] = f
		} else {
			fields = append(fields, f)
		}
		return arrow.NewSchema(fields, nil), nil
	case "project":
		var fields []arrow.Field
		for _, e := range o.op.Exprs {
			t, err := e.TypeOf(in)
			if err != nil {
				return nil, err
			}
			fields = append(fields, exprField(e, t, in))
		}
		return arrow.NewSchema(fields, nil), nil
	}
	return nil, nil
}

// allToAllSchema checks an all-to-all's columns against in and returns
// its output schema.
func (o *logicalOp) allToAllSchema(in *arrow.Schema) (*arrow.Schema, error) {
	if in == nil {
		return nil, nil
	}
	switch o.name {
	case "sort":
		for _, k := range o.keys {
			j, err := keyColumn(in, k.Column)
			if err != nil {
				return nil, err
			}
			if !sortable(in.Field(j).Type) {
				return nil, &ColumnError{Op: "Sort", Column: k.Column, Type: in.Field(j).Type.String(), Supported: sortableTypes}
			}
		}
		return in, nil
	case "aggregate":
		return aggregateSchema(in, o.groupKeys, o.aggs)
	case "join":
		return o.joinSchema(in)
	}
	return in, nil
}

// joinSchema is a join's output schema from the left's in (and the
// right's, planned); nil when either is unknown.
func (o *logicalOp) joinSchema(in *arrow.Schema) (*arrow.Schema, error) {
	if in == nil || o.join.rightSchema == nil {
		return nil, nil
	}
	o.join.leftSchema = in
	return o.join.spec.outSchema(in, o.join.rightSchema)
}

func sortable(t arrow.DataType) bool {
	switch t.ID() {
	case arrow.INT64, arrow.INT32, arrow.FLOAT64, arrow.FLOAT32, arrow.STRING, arrow.TIMESTAMP, arrow.DATE32, arrow.DATE64, arrow.DURATION:
		return true
	}
	return false
}

// sortableTypes names the types sortable takes, for errors.
const sortableTypes = "int64, int32, float64, float32, string, timestamp, date32, date64, duration"

// intKey is a's values as the integers they are stored as, when a is a
// timestamp, a date or a duration (an Int64 of a timestamp's, a date64's
// or a duration's, an Int32 of a date32's days): the key kernels (sort,
// group and join) compare, hash and group those. It shares a's buffers;
// its callers do not release it: its hold on them is given back when the
// collector finds it unreachable, so that they return to the Arrow pool
// once a is released too. Another column is a itself.
func intKey(a arrow.Array) arrow.Array {
	var t arrow.DataType
	switch a.DataType().ID() {
	case arrow.TIMESTAMP, arrow.DATE64, arrow.DURATION:
		t = arrow.PrimitiveTypes.Int64
	case arrow.DATE32:
		t = arrow.PrimitiveTypes.Int32
	default:
		return a
	}
	d := a.Data()
	v := array.NewData(t, d.Len(), d.Buffers(), nil, d.NullN(), d.Offset()) // retains the buffers
	runtime.AddCleanup(v, releaseBuffers, slices.Clone(v.Buffers()))
	return array.MakeFromData(v)
}

// releaseBuffers releases each of bufs.
func releaseBuffers(bufs []*memory.Buffer) {
	for _, b := range bufs {
		if b != nil {
			b.Release()
		}
	}
}

// aggregateSchema is the schema of GroupBy(keys).Aggregate(aggs) over
// in: the group columns, then a column per aggregation.
func aggregateSchema(in *arrow.Schema, keys []string, aggs []Agg) (*arrow.Schema, error) {
	var fields []arrow.Field
	for _, k := range keys {
		j, err := keyColumn(in, k)
		if err != nil {
			return nil, err
		}
		if !sortable(in.Field(j).Type) {
			return nil, &ColumnError{Op: "GroupBy", Column: k, Type: in.Field(j).Type.String(), Supported: sortableTypes}
		}
		fields = append(fields, in.Field(j))
	}
	for _, a := range aggs {
		t, err := aggType(in, a)
		if err != nil {
			return nil, err
		}
		fields = append(fields, field(a.Name(), t))
	}
	return arrow.NewSchema(fields, nil), nil
}

// aggType is the type of a's column over rows of schema in.
func aggType(in *arrow.Schema, a Agg) (arrow.DataType, error) {
	e, ok := a.Input()
	if !ok {
		return arrow.PrimitiveTypes.Int64, nil
	}
	t, err := e.TypeOf(in)
	if err != nil {
		return nil, err
	}
	what := e.String()
	if c, ok := e.IsColumn(); ok {
		what = c
	}
	switch a.Func() {
	case "count":
		return arrow.PrimitiveTypes.Int64, nil
	case "min", "max":
		if !orderable(t) {
			return nil, &ColumnError{Op: a.Func(), Column: what, Type: t.String(), Supported: "numbers, strings, timestamps and dates"}
		}
		return t, nil
	}
	switch t.ID() {
	case arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64, arrow.UINT8, arrow.UINT16, arrow.UINT32, arrow.UINT64:
		if a.Func() == "sum" {
			return arrow.PrimitiveTypes.Int64, nil
		}
		return arrow.PrimitiveTypes.Float64, nil
	case arrow.FLOAT32, arrow.FLOAT64:
		return arrow.PrimitiveTypes.Float64, nil
	case arrow.DURATION:
		return t, nil // sum, mean and std of durations are durations
	}
	return nil, &ColumnError{Op: a.Func(), Column: what, Type: t.String(), Supported: "numbers"}
}

// renameSchema is in with its columns renamed by pairs (old and new
// names in turn), or the error of a missing column or of two columns of
// one name after it.
func renameSchema(in *arrow.Schema, pairs []string) (*arrow.Schema, error) {
	fields := slices.Clone(in.Fields())
	for i := 0; i+1 < len(pairs); i += 2 {
		idx := in.FieldIndices(pairs[i])
		if len(idx) == 0 {
			return nil, unknownColumn(pairs[i], in)
		}
		for _, j := range idx {
			fields[j].Name = pairs[i+1]
		}
	}
	seen := make(map[string]bool, len(fields))
	for _, f := range fields {
		if seen[f.Name] {
			return nil, fmt.Errorf("%w: data: RenameColumns makes two columns named %q", atoll.ErrInvalidArgument, f.Name)
		}
		seen[f.Name] = true
	}
	md := in.Metadata()
	return arrow.NewSchema(fields, &md), nil
}

// presentRenames is the pairs of a rename whose old column is in s.
func presentRenames(s *arrow.Schema, pairs []string) []string {
	var kept []string
	for i := 0; i+1 < len(pairs); i += 2 {
		if len(s.FieldIndices(pairs[i])) > 0 {
			kept = append(kept, pairs[i], pairs[i+1])
		}
	}
	return kept
}

// checkRenames checks a rename's pairs: old and new names in turn, none
// empty, each old name and each new name once.
func checkRenames(pairs []string) error {
	if len(pairs) == 0 || len(pairs)%2 != 0 {
		return fmt.Errorf("%w: data: RenameColumns of %d names (old and new in turn)", atoll.ErrInvalidArgument, len(pairs))
	}
	olds, news := map[string]bool{}, map[string]bool{}
	for i := 0; i < len(pairs); i += 2 {
		from, to := pairs[i], pairs[i+1]
		switch {
		case from == "" || to == "":
			return fmt.Errorf("%w: data: RenameColumns %q to %q: a column needs a name", atoll.ErrInvalidArgument, from, to)
		case olds[from]:
			return fmt.Errorf("%w: data: RenameColumns renames %q twice", atoll.ErrInvalidArgument, from)
		case news[to]:
			return fmt.Errorf("%w: data: RenameColumns names two columns %q", atoll.ErrInvalidArgument, to)
		}
		olds[from], news[to] = true, true
	}
	return nil
}
