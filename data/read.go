package data

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/csv"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/atoll-runtime/atoll"
	"github.com/atoll-runtime/atoll/internal/errs"
)

// readSpec is one read task: rows [Start, End) of Range, or one Parquet
// file's row groups, or one CSV or JSON file.
type readSpec struct {
	Kind       string // range, parquet, csv, json
	Start, End int64
	Path       string
	RowGroups  []int
	Columns    []string // parquet: the columns to read; nil: every one
	Schema     []byte   // csv, json: the read's schema, as the driver inferred it (Arrow IPC)
	CSV        csvDialect
}

// read reads the records of r and the bytes of files it read.
func (r *readSpec) read(ctx context.Context) ([]arrow.RecordBatch, int64, error) {
	switch r.Kind {
	case "range":
		b := array.NewInt64Builder(memory.DefaultAllocator)
		defer b.Release()
		b.Reserve(int(r.End - r.Start))
		for i := r.Start; i < r.End; i++ {
			b.UnsafeAppend(i)
		}
		col := b.NewInt64Array()
		defer col.Release()
		return []arrow.RecordBatch{array.NewRecordBatch(rangeSchema, []arrow.Array{col}, int64(col.Len()))}, 0, nil
	}
	var recs []arrow.RecordBatch
	var err error
	var n int64
	switch r.Kind {
	case "parquet":
		recs, n, err = readParquetRowGroups(ctx, r.Path, r.RowGroups, r.Columns)
	case "csv":
		var fields []csvField
		if fields, err = csvFieldsOf(r.Schema); err == nil {
			recs, err = readCSVFile(r.Path, r.CSV, fields)
		}
	case "json":
		var schema *arrow.Schema
		if schema, err = jsonSchemaOf(r.Schema); err == nil {
			recs, err = readJSONFile(r.Path, schema)
		}
	default:
		return nil, 0, errs.Malformedf(specWhat, "unknown read %q", r.Kind)
	}
	if err != nil {
		var ce *ColumnError
		if errors.As(err, &ce) {
			return nil, 0, err
		}
		return nil, 0, fileError("read", r.Path, err)
	}
	if n == 0 {
		if st, err := os.Stat(r.Path); err == nil {
			n = st.Size()
		}
	}
	return recs, n, nil
}

// each calls fn with every record of r, in order, each released after
// fn returns (fn retains what it keeps), and returns the bytes of files
// read; an error of fn is returned as is. A Parquet read goes
// parquetBatchRows rows at a time, so that what fn makes of a batch can
// replace it before the next is read; other reads read r whole first.
func (r *readSpec) each(ctx context.Context, fn func(arrow.RecordBatch) error) (int64, error) {
	if r.Kind != "parquet" {
		recs, n, err := r.read(ctx)
		if err != nil {
			return 0, err
		}
		return n, eachRecord(recs, fn)
	}
	var fnErr error
	n, err := eachParquetBatch(ctx, r.Path, r.RowGroups, r.Columns, func(rec arrow.RecordBatch) error {
		fnErr = fn(rec)
		return fnErr
	})
	switch {
	case fnErr != nil:
		return n, fnErr
	case err != nil:
		var ce *ColumnError
		if errors.As(err, &ce) {
			return 0, err
		}
		return 0, fileError("read", r.Path, err)
	}
	return n, nil
}

var rangeSchema = arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}}, nil)

// rangeSource is Range's: parallelism tasks of ids.
type rangeSource struct{ n, parallelism int64 }

func (r *rangeSource) schema() *arrow.Schema { return rangeSchema }

func (r *rangeSource) units(pushdown) ([]readUnit, *readInfo, error) {
	p := max(1, min(r.parallelism, r.n))
	var us []readUnit
	for i := range p {
		lo, hi := i*r.n/p, (i+1)*r.n/p
		us = append(us, readUnit{spec: readSpec{Kind: "range", Start: lo, End: hi}, estimate: (hi - lo) * 8})
	}
	return us, nil, nil
}

// fileSource reads CSV or JSON files, a task per file, with the schema
// the driver inferred from every file's head (csvschema.go, json.go).
type fileSource struct {
	us []readUnit
	s  *arrow.Schema
}

func (f *fileSource) schema() *arrow.Schema { return f.s }

func (f *fileSource) units(pushdown) ([]readUnit, *readInfo, error) { return f.us, nil, nil }

// tableRecords turns a table into records (one per chunk boundary).
func tableRecords(tbl arrow.Table) ([]arrow.RecordBatch, error) {
	return readRecords(array.NewTableReader(tbl, 1<<62)) // chunk boundaries only
}

// readCSVFile reads the CSV file path, written in dialect d, with the
// columns the driver inferred for the read.
func readCSVFile(path string, d csvDialect, fields []csvField) ([]arrow.RecordBatch, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	schema := csvArrowSchema(fields)
	out, err := readRecords(csv.NewReader(bytes.NewReader(b), schema, csv.WithHeader(true), csv.WithChunk(1<<16),
		csv.WithComma(d.comma()), csv.WithNullReader(true, d.nulls()...)))
	if err != nil {
		if verr := csvValueError(b, d, fields); verr != nil {
			return nil, verr
		}
		return nil, err
	}
	if len(out) > 0 && !out[0].Schema().Equal(schema) {
		// The header changed since the driver read it.
		releaseAll(out)
		return nil, fmt.Errorf("its header is %s, where the read's columns are %s", schemaNames(out[0].Schema()), schemaNames(schema))
	}
	return out, nil
}

func schemaNames(s *arrow.Schema) string {
	names := make([]string, s.NumFields())
	for i, f := range s.Fields() {
		names[i] = f.Name
	}
	return strings.Join(names, ", ")
}

// readRecords drains r (then releases it): every record it yields,
// retained; none on an error other than io.EOF.
func readRecords(r array.RecordReader) ([]arrow.RecordBatch, error) {
	defer r.Release()
	var out []arrow.RecordBatch
	for r.Next() {
		rec := r.RecordBatch()
		rec.Retain()
		out = append(out, rec)
	}
	if err := r.Err(); err != nil && !errors.Is(err, io.EOF) {
		releaseAll(out)
		return nil, err
	}
	return out, nil
}

// listFiles expands paths (files or directories, not recursive) into the
// files ending in one of exts, sorted.
func listFiles(paths []string, exts ...string) ([]string, error) {
	if len(paths) == 0 {
		return nil, fmt.Errorf("%w: data: no path given", atoll.ErrInvalidArgument)
	}
	var out []string
	for _, p := range paths {
		st, err := os.Stat(p)
		if err != nil {
			return nil, fmt.Errorf("%w: data: %v", atoll.ErrInvalidArgument, err)
		}
		if !st.IsDir() {
			out = append(out, p)
			continue
		}
		es, err := os.ReadDir(p)
		if err != nil {
			return nil, err
		}
		for _, e := range es {
			if !e.IsDir() && slices.ContainsFunc(exts, func(x string) bool { return strings.HasSuffix(e.Name(), x) }) {
				out = append(out, filepath.Join(p, e.Name()))
			}
		}
	}
	sort.Strings(out)
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: data: no %s files in %v", atoll.ErrInvalidArgument, strings.Join(exts, " or "), paths)
	}
	return out, nil
}

// readSource lists the read tasks of one run.
type readSource interface {
	// schema is the rows' schema; nil when only reading tells (CSV, JSON)
	schema() *arrow.Schema
	// units lists the read tasks, reading what p leaves; the info is
	// what they read (nil: nothing to say)
	units(p pushdown) ([]readUnit, *readInfo, error)
}

// readUnit is one read task with the bytes it is expected to produce.
type readUnit struct {
	spec     readSpec
	estimate int64
}

// unitPaths is the files of read tasks us.
func unitPaths(us []readUnit) []string {
	files := make([]string, len(us))
	for i, u := range us {
		files[i] = u.spec.Path
	}
	return files
}

// newFileSource is the source of read tasks us, each given schema.
func newFileSource(us []readUnit, schema *arrow.Schema) *fileSource {
	b := encodeSchema(schema)
	for i := range us {
		us[i].spec.Schema = b
	}
	return &fileSource{us: us, s: schema}
}

// csvSource lists the CSV files under paths, a read task each, and
// infers their columns' types where opts does not give them.
func csvSource(paths []string, opts CSVOptions) (*fileSource, error) {
	d := csvDialect{Delimiter: opts.Delimiter, Nulls: opts.Nulls}
	if err := d.check(); err != nil {
		return nil, fmt.Errorf("%w: data: CSVOptions: %v", atoll.ErrInvalidArgument, err)
	}
	given := make(map[string]csvKind, len(opts.Types))
	for name, t := range opts.Types {
		k, ok := csvKindOf(t)
		if !ok {
			return nil, &ColumnError{Op: "CSVOptions.Types", Column: name, Type: fmt.Sprint(t), Supported: csvTypes}
		}
		given[name] = k
	}
	us, err := fileUnits(paths, "csv", ".csv")
	if err != nil {
		return nil, err
	}
	fields, err := csvSchema(unitPaths(us), d, given)
	if err != nil {
		return nil, err
	}
	for i := range us {
		us[i].spec.CSV = d
	}
	return newFileSource(us, csvArrowSchema(fields)), nil
}

// fileUnits is a read task of kind per file with one of exts under paths,
// each estimated at the file's size.
func fileUnits(paths []string, kind string, exts ...string) ([]readUnit, error) {
	files, err := listFiles(paths, exts...)
	if err != nil {
		return nil, err
	}
	out := make([]readUnit, len(files))
	for i, f := range files {
		st, err := os.Stat(f)
		if err != nil {
			return nil, err
		}
		out[i] = readUnit{spec: readSpec{Kind: kind, Path: f}, estimate: st.Size()}
	}
	return out, nil
}

// writeParquet writes recs as one Parquet file (ParquetWriterProperties,
// no dictionary for columns the first record shows nearly distinct, a
// row group per record). Parquet has no duration type and arrow-go's
// writer takes none: a duration column is written as its int64 counts,
// with the Arrow schema in the file's metadata ("ARROW:schema", as Arrow
// C++ writes it), from which a read restores the durations.
func writeParquet(_ context.Context, w io.Writer, recs []arrow.RecordBatch) error {
	schema := recs[0].Schema()
	stored := durationsAsInt64(schema)
	fw, err := pqarrow.NewFileWriter(stored, w, ParquetWriterProperties(dictionaryOff(recs[0])...), pqarrow.DefaultWriterProps())
	if err != nil {
		return err
	}
	if stored != schema {
		meta := base64.StdEncoding.EncodeToString(flight.SerializeSchema(schema, memory.DefaultAllocator))
		if err := fw.AppendKeyValueMetadata("ARROW:schema", meta); err != nil {
			_ = fw.Close()
			return err
		}
	}
	for _, r := range recs {
		if stored != schema {
			r = retype(r, stored)
		}
		err := fw.Write(r)
		if stored != schema {
			r.Release()
		}
		if err != nil {
			_ = fw.Close()
			return err
		}
	}
	return fw.Close()
}

// durationsAsInt64 is s with int64 in place of its durations, at any
// depth (storedType), or s when it has none.
func durationsAsInt64(s *arrow.Schema) *arrow.Schema {
	fields := s.Fields()
	changed := false
	for i, f := range fields {
		if t := storedType(f.Type); t != f.Type {
			fields[i].Type, changed = t, true
		}
	}
	if !changed {
		return s
	}
	md := s.Metadata()
	return arrow.NewSchema(fields, &md)
}

// storedType is t with int64 in place of every duration in it, in lists
// (of any kind) and structs at any depth, as a Parquet file stores it;
// t itself when it holds none.
func storedType(t arrow.DataType) arrow.DataType {
	switch t := t.(type) {
	case *arrow.DurationType:
		return arrow.PrimitiveTypes.Int64
	case *arrow.ListType:
		if f, ok := storedField(t.ElemField()); ok {
			return arrow.ListOfField(f)
		}
	case *arrow.LargeListType:
		if f, ok := storedField(t.ElemField()); ok {
			return arrow.LargeListOfField(f)
		}
	case *arrow.FixedSizeListType:
		if f, ok := storedField(t.ElemField()); ok {
			return arrow.FixedSizeListOfField(t.Len(), f)
		}
	case *arrow.StructType:
		fields := t.Fields()
		changed := false
		for i := range fields {
			if st := storedType(fields[i].Type); st != fields[i].Type {
				fields[i].Type, changed = st, true
			}
		}
		if changed {
			return arrow.StructOf(fields...)
		}
	}
	return t
}

func storedField(f arrow.Field) (arrow.Field, bool) {
	t := storedType(f.Type)
	changed := t != f.Type
	f.Type = t
	return f, changed
}

// sameLayout reports whether arrays of types a and b have the same
// buffers and children, a duration and an int64 alike.
func sameLayout(a, b arrow.DataType) bool {
	a, b = storedType(a), storedType(b)
	if a.ID() != b.ID() {
		return false
	}
	ca, cb := childTypes(a), childTypes(b)
	if len(ca) != len(cb) {
		return false
	}
	for i := range ca {
		if !sameLayout(ca[i], cb[i]) {
			return false
		}
	}
	fa, ok := a.(*arrow.FixedSizeListType)
	return !ok || fa.Len() == b.(*arrow.FixedSizeListType).Len()
}

// childTypes is the types of the children of an array of type t (those
// storedType walks into); nil for any other type.
func childTypes(t arrow.DataType) []arrow.DataType {
	switch t := t.(type) {
	case arrow.ListLikeType:
		if _, ok := t.(*arrow.MapType); !ok {
			return []arrow.DataType{t.Elem()}
		}
	case *arrow.StructType:
		out := make([]arrow.DataType, t.NumFields())
		for i, f := range t.Fields() {
			out[i] = f.Type
		}
		return out
	}
	return nil
}

// retype is rec with the types of s, whose columns have the same layout
// (an int64 for a duration: sameLayout): views of rec's buffers.
func retype(rec arrow.RecordBatch, s *arrow.Schema) arrow.RecordBatch {
	cols := make([]arrow.Array, rec.NumCols())
	for i, c := range rec.Columns() {
		d := retypeData(c.Data(), s.Field(i).Type)
		cols[i] = array.MakeFromData(d)
		d.Release()
	}
	out := array.NewRecordBatch(s, cols, rec.NumRows())
	for _, c := range cols {
		c.Release()
	}
	return out
}

// retypeData is d (retained) as type t, of the same layout: d itself
// where the types are equal, else a view of its buffers with its
// children retyped.
func retypeData(d arrow.ArrayData, t arrow.DataType) arrow.ArrayData {
	if arrow.TypeEqual(d.DataType(), t) {
		d.Retain()
		return d
	}
	var kids []arrow.ArrayData
	if children := d.Children(); len(children) > 0 {
		types := childTypes(t)
		kids = make([]arrow.ArrayData, len(children))
		for i, c := range children {
			kids[i] = retypeData(c, types[i])
			defer kids[i].Release()
		}
	}
	return array.NewData(t, d.Len(), d.Buffers(), kids, d.NullN(), d.Offset())
}

// eachRecord hands recs to fn one at a time, releasing each after fn
// returns (fn retains what it keeps), and the rest if fn fails.
func eachRecord(recs []arrow.RecordBatch, fn func(arrow.RecordBatch) error) error {
	defer func() { releaseAll(recs) }()
	for i, rec := range recs {
		recs[i] = nil
		err := fn(rec)
		rec.Release()
		if err != nil {
			return err
		}
	}
	return nil
}
