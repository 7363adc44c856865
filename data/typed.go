package data

import (
	"context"
	"fmt"
	"iter"
	"reflect"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/atoll-runtime/atoll"
)

// Typed rows: IterAs, TakeAs and TakeAllAs read a dataset's rows as Go
// structs rather than Rows. A struct field reads the column named by its
// `arrow` tag, else by its name (as FromItems writes them); unexported
// fields and fields tagged "-" are left alone, and columns no field names
// are not read. The fields' types are checked against the schema once,
// before the first row: a column the data lacks, or one whose type the
// field cannot hold, is a *ColumnError (matching atoll.ErrInvalidArgument)
// naming the field and the column. A field holds:
//
//   - int64, int32, int16, int8, int: an integer column that fits it
//     (int64 into int64 or int only, and so on);
//   - uint64, uint32, uint16, uint8, uint: an unsigned column that fits;
//   - float64: a float64 or float32 column; float32: float32 only;
//   - string: a string or large string column; []byte: a binary one;
//   - bool: a boolean column;
//   - time.Time: a timestamp column (in the column's zone, UTC without
//     one), or a date32 or date64 column (midnight UTC);
//   - time.Duration: a duration column (of any unit), or an int64 one
//     (nanoseconds);
//   - a pointer to one of these: the same, with nil for a null;
//   - a slice of one of these (or of pointers to them, or of slices: a
//     list of lists): a list column of elements the element type holds,
//     with nil for a null list.
//
// A null read into a field that is not a pointer or a slice, or a null
// element into a slice of values rather than pointers, is an error
// naming the column and the row. Values are copied out of the store: a struct stays
// valid after the loop moves on.

// IterAs yields the dataset's rows as values of the struct type T.
// Options: Prefetch.
func IterAs[T any](ctx context.Context, d *Dataset, opts ...IterOption) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		var zero T
		var dec *structDecoder
		var row int64
		for rec, err := range d.IterBatches(ctx, 0, opts...) {
			if err != nil {
				yield(zero, err)
				return
			}
			if dec == nil {
				if dec, err = newStructDecoder(reflect.TypeFor[T](), rec.Schema()); err != nil {
					yield(zero, err)
					return
				}
			}
			cols, err := dec.columns(rec)
			if err != nil {
				yield(zero, err)
				return
			}
			for i := range int(rec.NumRows()) {
				var v T
				if err := dec.decode(reflect.ValueOf(&v).Elem(), cols, i, row); err != nil {
					yield(zero, err)
					return
				}
				row++
				if !yield(v, nil) {
					return
				}
			}
		}
	}
}

// TakeAs returns the first n rows as values of the struct type T.
func TakeAs[T any](ctx context.Context, d *Dataset, n int64) ([]T, error) {
	return TakeAllAs[T](ctx, d.head(n))
}

// TakeAllAs returns every row as a value of the struct type T.
func TakeAllAs[T any](ctx context.Context, d *Dataset) ([]T, error) {
	var out []T
	for v, err := range IterAs[T](ctx, d) {
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

// structDecoder sets a struct's fields from the columns of records of
// one schema.
type structDecoder struct {
	typ    reflect.Type
	fields []fieldDecoder
}

// fieldDecoder reads one column into one field.
type fieldDecoder struct {
	index  int // the field's index in the struct
	name   string
	column string
	ptr    bool // the field is a pointer: nulls are nil
	slice  bool // the field is a slice: null lists are nil
	// nulls finds a null element the slice cannot hold (nullCheck)
	nulls func(col arrow.Array, i int) string
	set   func(dst reflect.Value, col arrow.Array, i int)
}

func newStructDecoder(t reflect.Type, s *arrow.Schema) (*structDecoder, error) {
	if t.Kind() != reflect.Struct {
		return nil, fmt.Errorf("%w: data: typed rows need a struct type, not %s", atoll.ErrInvalidArgument, t)
	}
	dec := &structDecoder{typ: t}
	for f := range t.NumField() {
		sf := t.Field(f)
		if !sf.IsExported() {
			continue
		}
		column := sf.Name
		if tag := sf.Tag.Get("arrow"); tag == "-" {
			continue
		} else if tag != "" {
			column = tag
		}
		idx := s.FieldIndices(column)
		if len(idx) == 0 {
			return nil, &ColumnError{Op: "reading field " + sf.Name + " of " + t.String(), Column: column, Columns: columnNames(s)}
		}
		ft, ptr := sf.Type, false
		if ft.Kind() == reflect.Pointer {
			ft, ptr = ft.Elem(), true
		}
		ct := s.Field(idx[0]).Type
		set := columnSetter(ft, ct)
		if set == nil {
			return nil, &ColumnError{Op: fmt.Sprintf("reading into field %s (%s) of %s", sf.Name, sf.Type, t), Column: column,
				Type: ct.String(), Supported: "see data.IterAs for which column types each field type holds"}
		}
		slice := ft.Kind() == reflect.Slice && ft.Elem().Kind() != reflect.Uint8
		dec.fields = append(dec.fields, fieldDecoder{index: f, name: sf.Name, column: column, ptr: ptr, set: set,
			slice: slice, nulls: nullCheck(ft)})
	}
	return dec, nil
}

func columnNames(s *arrow.Schema) []string {
	names := make([]string, s.NumFields())
	for i := range names {
		names[i] = s.Field(i).Name
	}
	return names
}

// columns returns rec's column for each field, checking that rec has the
// schema the decoder was made for (blocks of one dataset share it).
func (d *structDecoder) columns(rec arrow.RecordBatch) ([]arrow.Array, error) {
	cols := make([]arrow.Array, len(d.fields))
	for i, f := range d.fields {
		idx := rec.Schema().FieldIndices(f.column)
		if len(idx) == 0 {
			return nil, &ColumnError{Op: "reading field " + f.name + " of " + d.typ.String(), Column: f.column, Columns: columnNames(rec.Schema())}
		}
		col := rec.Column(idx[0])
		if ft := d.typ.Field(f.index).Type; columnSetter(derefType(ft), col.DataType()) == nil {
			return nil, &ColumnError{Op: fmt.Sprintf("reading into field %s (%s) of %s", f.name, ft, d.typ), Column: f.column,
				Type: col.DataType().String(), Supported: "see data.IterAs for which column types each field type holds"}
		}
		cols[i] = col
	}
	return cols, nil
}

func derefType(t reflect.Type) reflect.Type {
	if t.Kind() == reflect.Pointer {
		return t.Elem()
	}
	return t
}

// decode sets dst's fields from row i of cols (row: its number in the
// dataset, for errors).
func (d *structDecoder) decode(dst reflect.Value, cols []arrow.Array, i int, row int64) error {
	for k, f := range d.fields {
		col := cols[k]
		fv := dst.Field(f.index)
		if col.IsNull(i) {
			if !f.ptr && !f.slice {
				return &ColumnError{Op: fmt.Sprintf("reading into field %s (%s) of %s: row %d is null; make the field a pointer to read nulls",
					f.name, fv.Type(), d.typ, row), Column: f.column, Type: col.DataType().String(), Supported: "non-null values"}
			}
			continue
		}
		if f.nulls != nil {
			if at := f.nulls(col, i); at != "" {
				return &ColumnError{Op: fmt.Sprintf("reading into field %s (%s) of %s: %s of row %d is null; make the elements pointers to read nulls",
					f.name, fv.Type(), d.typ, at, row), Column: f.column, Type: col.DataType().String(), Supported: "non-null elements"}
			}
		}
		if f.ptr {
			p := reflect.New(fv.Type().Elem())
			fv.Set(p)
			fv = p.Elem()
		}
		f.set(fv, col, i)
	}
	return nil
}

// columnSetter returns what sets a field of type ft from a column of
// type ct, or nil if the field cannot hold the column's values.
func columnSetter(ft reflect.Type, ct arrow.DataType) func(reflect.Value, arrow.Array, int) {
	signed := func(bits int) bool {
		switch ft.Kind() {
		case reflect.Int64, reflect.Int:
			return bits <= 64
		case reflect.Int32:
			return bits <= 32
		case reflect.Int16:
			return bits <= 16
		case reflect.Int8:
			return bits <= 8
		}
		return false
	}
	unsigned := func(bits int) bool {
		switch ft.Kind() {
		case reflect.Uint64, reflect.Uint:
			return bits <= 64
		case reflect.Uint32:
			return bits <= 32
		case reflect.Uint16:
			return bits <= 16
		case reflect.Uint8:
			return bits <= 8
		}
		return false
	}
	if ft == reflect.TypeFor[time.Time]() {
		return timeSetter(ct)
	}
	if d, ok := ct.(*arrow.DurationType); ok {
		if ft != reflect.TypeFor[time.Duration]() {
			return nil
		}
		unit := d.Unit.Multiplier()
		return func(v reflect.Value, c arrow.Array, i int) {
			v.SetInt(int64(time.Duration(c.(*array.Duration).Value(i)) * unit))
		}
	}
	if ft.Kind() == reflect.Slice && ft.Elem().Kind() != reflect.Uint8 {
		return listSetter(ft, ct)
	}
	switch ct.ID() {
	case arrow.INT64:
		if signed(64) {
			return func(v reflect.Value, c arrow.Array, i int) { v.SetInt(c.(*array.Int64).Value(i)) }
		}
	case arrow.INT32:
		if signed(32) {
			return func(v reflect.Value, c arrow.Array, i int) { v.SetInt(int64(c.(*array.Int32).Value(i))) }
		}
	case arrow.INT16:
		if signed(16) {
			return func(v reflect.Value, c arrow.Array, i int) { v.SetInt(int64(c.(*array.Int16).Value(i))) }
		}
	case arrow.INT8:
		if signed(8) {
			return func(v reflect.Value, c arrow.Array, i int) { v.SetInt(int64(c.(*array.Int8).Value(i))) }
		}
	case arrow.UINT64:
		if unsigned(64) {
			return func(v reflect.Value, c arrow.Array, i int) { v.SetUint(c.(*array.Uint64).Value(i)) }
		}
	case arrow.UINT32:
		if unsigned(32) {
			return func(v reflect.Value, c arrow.Array, i int) { v.SetUint(uint64(c.(*array.Uint32).Value(i))) }
		}
	case arrow.UINT16:
		if unsigned(16) {
			return func(v reflect.Value, c arrow.Array, i int) { v.SetUint(uint64(c.(*array.Uint16).Value(i))) }
		}
	case arrow.UINT8:
		if unsigned(8) {
			return func(v reflect.Value, c arrow.Array, i int) { v.SetUint(uint64(c.(*array.Uint8).Value(i))) }
		}
	case arrow.FLOAT64:
		if ft.Kind() == reflect.Float64 {
			return func(v reflect.Value, c arrow.Array, i int) { v.SetFloat(c.(*array.Float64).Value(i)) }
		}
	case arrow.FLOAT32:
		if ft.Kind() == reflect.Float64 || ft.Kind() == reflect.Float32 {
			return func(v reflect.Value, c arrow.Array, i int) { v.SetFloat(float64(c.(*array.Float32).Value(i))) }
		}
	case arrow.STRING:
		if ft.Kind() == reflect.String {
			return func(v reflect.Value, c arrow.Array, i int) { v.SetString(strings.Clone(c.(*array.String).Value(i))) }
		}
	case arrow.LARGE_STRING:
		if ft.Kind() == reflect.String {
			return func(v reflect.Value, c arrow.Array, i int) {
				v.SetString(strings.Clone(c.(*array.LargeString).Value(i)))
			}
		}
	case arrow.BINARY:
		if ft.Kind() == reflect.Slice && ft.Elem().Kind() == reflect.Uint8 {
			return func(v reflect.Value, c arrow.Array, i int) {
				v.SetBytes(append([]byte(nil), c.(*array.Binary).Value(i)...))
			}
		}
	case arrow.BOOL:
		if ft.Kind() == reflect.Bool {
			return func(v reflect.Value, c arrow.Array, i int) { v.SetBool(c.(*array.Boolean).Value(i)) }
		}
	}
	return nil
}

// timeSetter returns what sets a time.Time field from a timestamp or
// date column of type ct, or nil for another type (or a time zone Go
// does not know).
func timeSetter(ct arrow.DataType) func(reflect.Value, arrow.Array, int) {
	switch ct := ct.(type) {
	case *arrow.TimestampType:
		toTime, err := ct.GetToTimeFunc()
		if err != nil {
			return nil
		}
		return func(v reflect.Value, c arrow.Array, i int) {
			v.Set(reflect.ValueOf(toTime(c.(*array.Timestamp).Value(i))))
		}
	case *arrow.Date32Type:
		return func(v reflect.Value, c arrow.Array, i int) {
			v.Set(reflect.ValueOf(c.(*array.Date32).Value(i).ToTime()))
		}
	case *arrow.Date64Type:
		return func(v reflect.Value, c arrow.Array, i int) {
			v.Set(reflect.ValueOf(c.(*array.Date64).Value(i).ToTime()))
		}
	}
	return nil
}

// nullCheck returns what finds, in row i of a list column read into a
// slice of type ft, the first null element that ft cannot hold (in a
// slice of values, at any depth: "element 1 of element 0"), or nil when
// ft holds every null (elements that are pointers or slices).
func nullCheck(ft reflect.Type) func(col arrow.Array, i int) string {
	if ft.Kind() != reflect.Slice || ft.Elem().Kind() == reflect.Uint8 {
		return nil
	}
	et := ft.Elem()
	list := et.Kind() == reflect.Slice && et.Elem().Kind() != reflect.Uint8
	valued := et.Kind() != reflect.Pointer && !list
	var inner func(arrow.Array, int) string
	if list {
		inner = nullCheck(et)
	}
	if !valued && inner == nil {
		return nil
	}
	return func(col arrow.Array, i int) string {
		l := col.(array.ListLike)
		start, end := l.ValueOffsets(i)
		vals := l.ListValues()
		for k := start; k < end; k++ {
			switch {
			case vals.IsNull(int(k)):
				if valued {
					return fmt.Sprintf("element %d", k-start)
				}
			case inner != nil:
				if at := inner(vals, int(k)); at != "" {
					return fmt.Sprintf("%s of element %d", at, k-start)
				}
			}
		}
		return ""
	}
}

// listSetter returns what sets a slice field of type ft from a list
// column of type ct whose elements its element type holds (nil
// elements, for pointers, where they are null), or nil.
func listSetter(ft reflect.Type, ct arrow.DataType) func(reflect.Value, arrow.Array, int) {
	var elem arrow.DataType
	switch ct := ct.(type) {
	case *arrow.ListType:
		elem = ct.Elem()
	case *arrow.LargeListType:
		elem = ct.Elem()
	default:
		return nil
	}
	et, ptr := ft.Elem(), false
	if et.Kind() == reflect.Pointer {
		et, ptr = et.Elem(), true
	}
	set := columnSetter(et, elem) // a slice: a list of lists
	if set == nil {
		return nil
	}
	return func(v reflect.Value, c arrow.Array, i int) {
		l := c.(array.ListLike)
		start, end := l.ValueOffsets(i)
		vals := l.ListValues()
		s := reflect.MakeSlice(ft, int(end-start), int(end-start))
		for k := range s.Len() {
			j := int(start) + k
			if vals.IsNull(j) {
				continue // a nil pointer (decode refused nulls for values)
			}
			dst := s.Index(k)
			if ptr {
				p := reflect.New(et)
				dst.Set(p)
				dst = p.Elem()
			}
			set(dst, vals, j)
		}
		v.Set(s)
	}
}
