package data

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strings"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/arrow-go/v18/parquet/schema"

	"github.com/atoll-runtime/atoll"
	"github.com/atoll-runtime/atoll/data/expr"
)

// Parquet reads. The driver reads every file's footer when the dataset
// is planned: the schema (the first file's), a read task per row group,
// and the pushdown: the task reads only the columns the plan uses, and a
// row group whose column statistics rule out a pushed-down condition
// (expr.MayMatch) gets no task. Stats report both (readInfo).

// parquetFile is one file's footer as the driver reads it.
type parquetFile struct {
	path     string
	md       *metadata.FileMetaData
	manifest *pqarrow.SchemaManifest
	schema   *arrow.Schema
}

// openParquet reads the footers of the Parquet files under paths.
func openParquet(paths []string) ([]parquetFile, error) {
	names, err := listFiles(paths, ".parquet")
	if err != nil {
		return nil, err
	}
	out := make([]parquetFile, 0, len(names))
	for _, n := range names {
		f, err := openParquetFile(n)
		if err != nil {
			return nil, fmt.Errorf("%w: data: %s: %v", atoll.ErrInvalidArgument, n, err)
		}
		out = append(out, f)
	}
	return out, nil
}

func openParquetFile(path string) (parquetFile, error) {
	pf, err := file.OpenParquetFile(path, false)
	if err != nil {
		return parquetFile{}, err
	}
	defer pf.Close()
	md := pf.MetaData()
	props := pqarrow.ArrowReadProperties{}
	man, err := pqarrow.NewSchemaManifest(md.Schema, md.KeyValueMetadata(), &props)
	if err != nil {
		return parquetFile{}, err
	}
	s, err := pqarrow.FromParquet(md.Schema, &props, md.KeyValueMetadata())
	if err != nil {
		return parquetFile{}, err
	}
	return parquetFile{path: path, md: md, manifest: man, schema: s}, nil
}

// leaves returns the leaf columns of the top-level fields named cols
// (nil: every leaf), in the file's order.
func (f *parquetFile) leaves(cols []string) ([]int, error) {
	var out []int
	var walk func(sf *pqarrow.SchemaField)
	walk = func(sf *pqarrow.SchemaField) {
		if sf.IsLeaf() {
			out = append(out, sf.ColIndex)
		}
		for i := range sf.Children {
			walk(&sf.Children[i])
		}
	}
	if cols == nil {
		for i := range f.manifest.Fields {
			walk(&f.manifest.Fields[i])
		}
		return out, nil
	}
	want := map[string]bool{}
	for _, c := range cols {
		want[c] = true
	}
	found := 0
	for i := range f.manifest.Fields {
		if want[f.manifest.Fields[i].Field.Name] {
			walk(&f.manifest.Fields[i])
			found++
		}
	}
	if found < len(want) {
		for _, c := range cols {
			if len(f.schema.FieldIndices(c)) == 0 {
				return nil, fmt.Errorf("%w (in %s)", unknownColumn(c, f.schema), f.path)
			}
		}
	}
	return out, nil
}

// columnStats is what row group rg records of the top-level field name:
// false when the field is not one leaf column with statistics of a
// type expressions compare.
func (f *parquetFile) columnStats(rg int, name string) (expr.ColumnStats, bool) {
	var sf *pqarrow.SchemaField
	for i := range f.manifest.Fields {
		if f.manifest.Fields[i].Field.Name == name {
			sf = &f.manifest.Fields[i]
			break
		}
	}
	if sf == nil || !sf.IsLeaf() {
		return expr.ColumnStats{}, false
	}
	rgm := f.md.RowGroup(rg)
	cc, err := rgm.ColumnChunk(sf.ColIndex)
	if err != nil {
		return expr.ColumnStats{}, false
	}
	if set, err := cc.StatsSet(); err != nil || !set {
		return expr.ColumnStats{}, false
	}
	st, err := cc.Statistics()
	if err != nil || st == nil {
		return expr.ColumnStats{}, false
	}
	t := sf.Field.Type
	out := expr.ColumnStats{Rows: rgm.NumRows(), Nulls: -1, Type: t}
	if st.HasNullCount() {
		out.Nulls = st.NullCount()
	}
	if !st.HasMinMax() {
		return out, true
	}
	unsigned := t.ID() == arrow.UINT8 || t.ID() == arrow.UINT16 || t.ID() == arrow.UINT32 || t.ID() == arrow.UINT64
	logical := f.md.Schema.Column(sf.ColIndex).LogicalType()
	switch s := st.(type) {
	case *metadata.Int32Statistics:
		if _, days := logical.(schema.DateLogicalType); days && t.ID() == arrow.DATE32 {
			out.Min, out.Max = int64(s.Min()), int64(s.Max())
			return out, true
		}
		if !isIntType(t) {
			return out, true
		}
		if unsigned {
			out.Min, out.Max = uint64(uint32(s.Min())), uint64(uint32(s.Max()))
		} else {
			out.Min, out.Max = int64(s.Min()), int64(s.Max())
		}
	case *metadata.Int64Statistics:
		if ts, ok := t.(*arrow.TimestampType); ok {
			if lt, ok := logical.(schema.TimestampLogicalType); ok {
				out.Min, out.Max = timestampBounds(s.Min(), s.Max(), lt.TimeUnit(), ts.Unit)
			}
			return out, true
		}
		if !isIntType(t) {
			return out, true
		}
		if unsigned {
			out.Min, out.Max = uint64(s.Min()), uint64(s.Max())
		} else {
			out.Min, out.Max = s.Min(), s.Max()
		}
	case *metadata.Float32Statistics:
		out.Min, out.Max = float64(s.Min()), float64(s.Max())
	case *metadata.Float64Statistics:
		out.Min, out.Max = s.Min(), s.Max()
	case *metadata.BooleanStatistics:
		out.Min, out.Max = s.Min(), s.Max()
	case *metadata.ByteArrayStatistics:
		if t.ID() != arrow.STRING {
			return out, true
		}
		out.Min, out.Max = string(s.Min()), string(s.Max())
	}
	return out, true
}

// timestampBounds are a timestamp column's smallest and largest values
// lo and hi, stored in the Parquet unit from, in the column's Arrow unit
// to (the writer may store nanoseconds as microseconds): nil, nil when
// they do not convert exactly or within range, so nothing is skipped.
func timestampBounds(lo, hi int64, from schema.TimeUnitType, to arrow.TimeUnit) (any, any) {
	var have arrow.TimeUnit
	switch from {
	case schema.TimeUnitMillis:
		have = arrow.Millisecond
	case schema.TimeUnitMicros:
		have = arrow.Microsecond
	case schema.TimeUnitNanos:
		have = arrow.Nanosecond
	default:
		return nil, nil
	}
	if have == to {
		return lo, hi
	}
	scale := int64(1)
	for u := min(have, to); u < max(have, to); u++ {
		scale *= 1000
	}
	if have > to { // finer stored: the bounds round outwards
		return floorDiv(lo, scale), -floorDiv(-hi, scale)
	}
	if lo < math.MinInt64/scale || hi > math.MaxInt64/scale {
		return nil, nil
	}
	return lo * scale, hi * scale
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && a < 0 {
		q--
	}
	return q
}

func isIntType(t arrow.DataType) bool {
	switch t.ID() {
	case arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64, arrow.UINT8, arrow.UINT16, arrow.UINT32, arrow.UINT64:
		return true
	}
	return false
}

// readInfo is what a read stage reads: its columns, its row groups and
// the bytes of their column chunks, against what the files hold.
type readInfo struct {
	columns                   []string // read; nil: every one
	allColumns                int
	groupsRead, groupsSkipped int
	bytesRead, bytesAll       int64 // compressed column chunks
	filters                   []string
}

func (ri *readInfo) format(b *strings.Builder) {
	cols := fmt.Sprintf("all %d columns", ri.allColumns)
	if ri.columns != nil {
		cols = fmt.Sprintf("columns %s (%d of %d)", strings.Join(ri.columns, ", "), len(ri.columns), ri.allColumns)
	}
	fmt.Fprintf(b, "* Read: %s; row groups %d read, %d skipped by statistics; %s of %s of column chunks\n",
		cols, ri.groupsRead, ri.groupsSkipped, mb(ri.bytesRead), mb(ri.bytesAll))
	if len(ri.filters) > 0 {
		fmt.Fprintf(b, "* Pushed down: %s\n", strings.Join(ri.filters, " && "))
	}
}

func mb(n int64) string { return fmt.Sprintf("%.1f MB", float64(n)/1e6) }

// parquetUnits lists a read task per row group that the pushdown's
// conditions do not rule out, reading its columns.
func parquetUnits(files []parquetFile, p pushdown) ([]readUnit, *readInfo, error) {
	info := &readInfo{columns: p.columns}
	for _, e := range p.filters {
		info.filters = append(info.filters, e.String())
	}
	if len(files) > 0 {
		info.allColumns = files[0].schema.NumFields()
	}
	var out []readUnit
	for i := range files {
		f := &files[i]
		leaves, err := f.leaves(p.columns)
		if err != nil {
			return nil, nil, err
		}
		for rg := range f.md.NumRowGroups() {
			rgm := f.md.RowGroup(rg)
			var all, read, est int64
			for j := range rgm.NumColumns() {
				if cc, err := rgm.ColumnChunk(j); err == nil {
					all += cc.TotalCompressedSize()
				}
			}
			for _, j := range leaves {
				if cc, err := rgm.ColumnChunk(j); err == nil {
					read += cc.TotalCompressedSize()
					est += cc.TotalUncompressedSize()
				}
			}
			info.bytesAll += all
			keep := true
			for _, e := range p.filters {
				if !e.MayMatch(func(c string) (expr.ColumnStats, bool) { return f.columnStats(rg, c) }) {
					keep = false
					break
				}
			}
			if !keep {
				info.groupsSkipped++
				continue
			}
			info.groupsRead++
			info.bytesRead += read
			if p.columns == nil {
				est = rgm.TotalByteSize()
			}
			out = append(out, readUnit{spec: readSpec{Kind: "parquet", Path: f.path, RowGroups: []int{rg}, Columns: p.columns}, estimate: est})
		}
	}
	return out, info, nil
}

// readParquetRowGroups reads row groups rgs of the file at path, only
// columns (nil: every one); it returns the records and the bytes of the
// column chunks read.
func readParquetRowGroups(ctx context.Context, path string, rgs []int, columns []string) ([]arrow.RecordBatch, int64, error) {
	pf, fr, cols, read, err := openRowGroups(ctx, path, rgs, columns)
	if err != nil {
		return nil, 0, err
	}
	defer pf.Close()
	tbl, err := fr.ReadRowGroups(ctx, cols, rgs)
	if err != nil {
		return nil, 0, err
	}
	defer tbl.Release()
	recs, err := tableRecords(tbl)
	if err != nil {
		return nil, 0, err
	}
	for i, rec := range recs {
		recs[i] = durations(rec, fr.Manifest)
		rec.Release()
	}
	return recs, read, nil
}

// durations is rec (retained) with the int64s that man's file stores
// durations in, at any depth, turned back into durations (views of
// their buffers).
func durations(rec arrow.RecordBatch, man *pqarrow.SchemaManifest) arrow.RecordBatch {
	var fields []arrow.Field
	for i, f := range rec.Schema().Fields() {
		if man.OriginSchema == nil {
			break // a file with no Arrow schema stores no duration
		}
		idx := man.OriginSchema.FieldIndices(f.Name)
		if len(idx) != 1 {
			continue
		}
		orig := man.OriginSchema.Field(idx[0]).Type
		if storedType(orig) == orig || !sameLayout(orig, f.Type) {
			continue // no duration in it, or not what the file says
		}
		if fields == nil {
			fields = rec.Schema().Fields()
		}
		fields[i].Type = orig
	}
	if fields == nil {
		rec.Retain()
		return rec
	}
	md := rec.Schema().Metadata()
	return retype(rec, arrow.NewSchema(fields, &md))
}

// storeDurations makes a read of sf (and of its children) read the
// int64s a file stores durations in as int64s (durations turns them
// back): arrow-go's reader takes no duration.
func storeDurations(sf *pqarrow.SchemaField) {
	sf.Field.Type = storedType(sf.Field.Type)
	for i := range sf.Children {
		storeDurations(&sf.Children[i])
	}
}

// parquetBatchRows is the rows of a batch that eachParquetBatch reads at
// a time (arrow-go's reader reads a row group whole otherwise).
const parquetBatchRows = 1 << 16

// eachParquetBatch reads row groups rgs of the file at path, only
// columns (nil: every one), parquetBatchRows rows at a time, and calls
// fn with each batch (released after fn returns: fn retains what it
// keeps); it returns the bytes of the column chunks read, and fn's
// error as is. Without a column to read, it reads the row groups whole.
func eachParquetBatch(ctx context.Context, path string, rgs []int, columns []string, fn func(arrow.RecordBatch) error) (int64, error) {
	pf, fr, cols, read, err := openRowGroups(ctx, path, rgs, columns)
	if err != nil {
		return 0, err
	}
	defer pf.Close()
	if len(cols) == 0 {
		recs, n, err := readParquetRowGroups(ctx, path, rgs, columns)
		if err != nil {
			return 0, err
		}
		return n, eachRecord(recs, fn)
	}
	rr, err := fr.GetRecordReader(ctx, cols, rgs)
	if err != nil {
		return 0, err
	}
	defer rr.Release()
	for rr.Next() {
		rec := durations(rr.RecordBatch(), fr.Manifest)
		err := fn(rec)
		rec.Release()
		if err != nil {
			return read, err
		}
	}
	if err := rr.Err(); err != nil && !errors.Is(err, io.EOF) {
		return read, err
	}
	return read, nil
}

// openRowGroups opens the file at path to read row groups rgs, only
// columns (nil: every one): the file (the caller closes it), its Arrow
// reader (batches of parquetBatchRows rows), the leaf columns to read
// and the bytes of their column chunks. arrow-go reads no durations: a
// file that stores durations (as int64, named in its Arrow schema) is
// read as int64, and durations turns the batches back.
func openRowGroups(ctx context.Context, path string, rgs []int, columns []string) (*file.Reader, *pqarrow.FileReader, []int, int64, error) {
	mem := compute.GetAllocator(ctx)
	// Buffered, a column chunk's pages are read one at a time into the
	// page reader's buffer (mem's); unbuffered, each column chunk read
	// is a fresh Go slice of its whole compressed size, garbage after.
	props := parquet.NewReaderProperties(mem)
	props.BufferedStreamEnabled = true
	pf, err := openWithFooter(path, file.WithReadProps(props))
	if err != nil {
		return nil, nil, nil, 0, err
	}
	fail := func(err error) (*file.Reader, *pqarrow.FileReader, []int, int64, error) {
		pf.Close()
		return nil, nil, nil, 0, err
	}
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: parquetBatchRows}, mem)
	if err != nil {
		return fail(err)
	}
	f := parquetFile{path: path, md: pf.MetaData(), manifest: fr.Manifest}
	if f.schema, err = fr.Schema(); err != nil {
		return fail(err)
	}
	for i := range fr.Manifest.Fields {
		storeDurations(&fr.Manifest.Fields[i])
	}
	cols, err := f.leaves(columns)
	if err != nil {
		return fail(err)
	}
	var read int64
	for _, rg := range rgs {
		if rg < 0 || rg >= f.md.NumRowGroups() {
			return fail(fmt.Errorf("row group %d of %d", rg, f.md.NumRowGroups()))
		}
		for _, j := range cols {
			if cc, err := f.md.RowGroup(rg).ColumnChunk(j); err == nil {
				read += cc.TotalCompressedSize()
			}
		}
	}
	return pf, fr, cols, read, nil
}

// parquetSource reads Parquet files: a task per row group.
type parquetSource struct{ files []parquetFile }

func (p *parquetSource) schema() *arrow.Schema {
	if len(p.files) == 0 {
		return nil
	}
	return p.files[0].schema
}

func (p *parquetSource) units(pd pushdown) ([]readUnit, *readInfo, error) {
	return parquetUnits(p.files, pd)
}

// A read task opens its file again for each row group it reads; the
// footer (a file's schema and the place of every column chunk, tens of
// KiB parsed for a file of many row groups) is parsed once per process
// instead: footers keeps the last maxFooters, each for the file's size
// and modification time, so a file rewritten is read afresh.
var footers = struct {
	sync.Mutex
	m     map[footerKey]*metadata.FileMetaData
	order []footerKey // oldest first
}{m: map[footerKey]*metadata.FileMetaData{}}

const maxFooters = 64

type footerKey struct {
	path        string
	size, mtime int64
}

// openWithFooter opens the Parquet file at path, with its footer from
// footers when the file has not changed since it was parsed.
func openWithFooter(path string, opts ...file.ReadOption) (*file.Reader, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	k := footerKey{path: path, size: fi.Size(), mtime: fi.ModTime().UnixNano()}
	footers.Lock()
	md := footers.m[k]
	footers.Unlock()
	if md != nil {
		return file.OpenParquetFile(path, false, append(opts, file.WithMetadata(md))...)
	}
	pf, err := file.OpenParquetFile(path, false, opts...)
	if err != nil {
		return nil, err
	}
	footers.Lock()
	defer footers.Unlock()
	if _, ok := footers.m[k]; !ok {
		if len(footers.order) == maxFooters {
			delete(footers.m, footers.order[0])
			footers.order = footers.order[1:]
		}
		footers.m[k] = pf.MetaData()
		footers.order = append(footers.order, k)
	}
	return pf, nil
}
