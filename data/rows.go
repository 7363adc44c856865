package data

import (
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/atoll-runtime/atoll"
)

// Row is one row as Go values by column name: int64, int32, float64,
// float32, string, bool, time.Time (a timestamp column's value in the
// column's zone, UTC without one, or a date's midnight UTC) or nil (a
// null). A time.Time makes a timestamp[us, UTC] column, or takes the
// type of the input's timestamp or date column of its name. A list
// column's value is a []any of its elements' values; a slice of those
// types or of pointers to them makes a list column ([]any: of its first
// non-nil element's type), a nil slice a null and a nil pointer a null
// element. Other Arrow types come as the value arrow-go
// gives for JSON (GetOneForMarshal: a struct's is a map) and cannot be
// built back from rows yet.
type Row map[string]any

// recordRows returns the rows of rec.
func recordRows(rec arrow.RecordBatch) []Row {
	rows := make([]Row, rec.NumRows())
	for i := range rows {
		rows[i] = make(Row, rec.NumCols())
	}
	for j, col := range rec.Columns() {
		name := rec.ColumnName(j)
		for i := range rows {
			rows[i][name] = cell(col, i)
		}
	}
	return rows
}

func cell(col arrow.Array, i int) any {
	if col.IsNull(i) {
		return nil
	}
	switch a := col.(type) {
	case *array.Int64:
		return a.Value(i)
	case *array.Int32:
		return a.Value(i)
	case *array.Float64:
		return a.Value(i)
	case *array.Float32:
		return a.Value(i)
	case *array.String:
		// Value is a view of the block, which may be the store's: copy.
		return strings.Clone(a.Value(i))
	case *array.LargeString:
		return strings.Clone(a.Value(i))
	case *array.Boolean:
		return a.Value(i)
	case *array.Timestamp:
		if toTime, err := a.DataType().(*arrow.TimestampType).GetToTimeFunc(); err == nil {
			return toTime(a.Value(i))
		}
	case *array.Date32:
		return a.Value(i).ToTime()
	case *array.Date64:
		return a.Value(i).ToTime()
	case *array.Duration:
		return time.Duration(a.Value(i)) * a.DataType().(*arrow.DurationType).Unit.Multiplier()
	case *array.List, *array.LargeList:
		l := a.(array.ListLike)
		start, end := l.ValueOffsets(i)
		vals := l.ListValues()
		out := make([]any, end-start)
		for k := range out {
			out[k] = cell(vals, int(start)+k)
		}
		return out
	}
	return col.GetOneForMarshal(i)
}

// timeType is the column type of a time.Time a row or an item holds:
// microseconds, so that every time.Time from year 1 on fits (nanoseconds
// end in 2262 and begin in 1677, after the zero time.Time).
var timeType = &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}

// isTimeType reports whether t is a type time.Time values are put in.
func isTimeType(t arrow.DataType) bool {
	switch t.ID() {
	case arrow.TIMESTAMP, arrow.DATE32, arrow.DATE64:
		return true
	}
	return false
}

// arrowType is the Arrow type of a Go value of a row.
func arrowType(v any) (arrow.DataType, error) {
	if t := arrowTypeOf(reflect.TypeOf(v)); t != nil {
		return t, nil
	}
	if xs, ok := v.([]any); ok {
		for _, x := range xs {
			if x != nil {
				et, err := arrowType(x)
				if err != nil {
					return nil, err
				}
				return arrow.ListOf(et), nil
			}
		}
		return arrow.ListOf(arrow.BinaryTypes.String), nil
	}
	return nil, fmt.Errorf("%w: data: a row value of type %T is not supported (int, int64, int32, float64, float32, string, bool, time.Time, time.Duration, and slices of them)", atoll.ErrInvalidArgument, v)
}

// arrowTypeOf is the Arrow type of Go values of type t, or nil when t's
// values may be of several (an interface, []any) or of none.
func arrowTypeOf(t reflect.Type) arrow.DataType {
	if t == nil {
		return nil
	}
	switch t {
	case reflect.TypeFor[int](), reflect.TypeFor[int64]():
		return arrow.PrimitiveTypes.Int64
	case reflect.TypeFor[int32]():
		return arrow.PrimitiveTypes.Int32
	case reflect.TypeFor[float64]():
		return arrow.PrimitiveTypes.Float64
	case reflect.TypeFor[float32]():
		return arrow.PrimitiveTypes.Float32
	case reflect.TypeFor[string]():
		return arrow.BinaryTypes.String
	case reflect.TypeFor[bool]():
		return arrow.FixedWidthTypes.Boolean
	case reflect.TypeFor[time.Time]():
		return timeType
	case reflect.TypeFor[time.Duration]():
		return arrow.FixedWidthTypes.Duration_ns
	}
	if t.Kind() == reflect.Slice {
		if et := arrowTypeOf(derefType(t.Elem())); et != nil {
			return arrow.ListOf(et)
		}
	}
	return nil
}

// rowSchema infers a schema from rows: the columns of prev (the input's
// schema) that the rows keep, in prev's order, then new columns by name;
// a column's type comes from its first non-nil value (a column of only
// nils is a string column).
func rowSchema(rows []Row, prev *arrow.Schema) (*arrow.Schema, error) {
	types := map[string]arrow.DataType{}
	for _, r := range rows {
		for k, v := range r {
			if t, ok := types[k]; ok && t != nil || v == nil {
				if _, seen := types[k]; !seen {
					types[k] = nil
				}
				continue
			}
			t, err := arrowType(v)
			if err != nil {
				return nil, fmt.Errorf("column %q: %w", k, err)
			}
			types[k] = t
		}
	}
	var fields []arrow.Field
	if prev != nil {
		for _, f := range prev.Fields() {
			if t, ok := types[f.Name]; ok {
				if t == nil || isTimeType(t) && isTimeType(f.Type) || t.ID() == arrow.LIST && f.Type.ID() == arrow.LIST {
					t = f.Type // a time, a list ([]any{} says no element type): the input's
				}
				fields = append(fields, arrow.Field{Name: f.Name, Type: t, Nullable: true})
				delete(types, f.Name)
			}
		}
	}
	names := make([]string, 0, len(types))
	for k := range types {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		t := types[k]
		if t == nil {
			t = arrow.BinaryTypes.String
		}
		fields = append(fields, arrow.Field{Name: k, Type: t, Nullable: true})
	}
	return arrow.NewSchema(fields, nil), nil
}

// rowsRecord builds a record of rows with schema s.
func rowsRecord(s *arrow.Schema, rows []Row) (arrow.RecordBatch, error) {
	b := array.NewRecordBuilder(memory.DefaultAllocator, s)
	defer b.Release()
	for _, r := range rows {
		for j, f := range s.Fields() {
			if err := appendValue(b.Field(j), r[f.Name]); err != nil {
				return nil, fmt.Errorf("column %q: %w", f.Name, err)
			}
		}
	}
	return b.NewRecordBatch(), nil
}

func appendValue(b array.Builder, v any) error {
	if v == nil {
		b.AppendNull()
		return nil
	}
	ok := true
	switch bb := b.(type) {
	case *array.Int64Builder:
		switch x := v.(type) {
		case int64:
			bb.Append(x)
		case int:
			bb.Append(int64(x))
		case int32:
			bb.Append(int64(x))
		default:
			ok = false
		}
	case *array.Int32Builder:
		x, k := v.(int32)
		bb.Append(x)
		ok = k
	case *array.Float64Builder:
		switch x := v.(type) {
		case float64:
			bb.Append(x)
		case float32:
			bb.Append(float64(x))
		default:
			ok = false
		}
	case *array.Float32Builder:
		x, k := v.(float32)
		bb.Append(x)
		ok = k
	case *array.StringBuilder:
		x, k := v.(string)
		bb.Append(x)
		ok = k
	case *array.BooleanBuilder:
		x, k := v.(bool)
		bb.Append(x)
		ok = k
	case *array.TimestampBuilder:
		x, k := v.(time.Time)
		if !k {
			ok = false
			break
		}
		ts, err := arrow.TimestampFromTime(x, bb.Type().(*arrow.TimestampType).Unit)
		if err != nil {
			return fmt.Errorf("%w: data: %v does not fit a %s column", atoll.ErrInvalidArgument, x, bb.Type())
		}
		bb.Append(ts)
	case *array.Date32Builder:
		x, k := v.(time.Time)
		bb.Append(arrow.Date32FromTime(x))
		ok = k
	case *array.Date64Builder:
		x, k := v.(time.Time)
		bb.Append(arrow.Date64FromTime(x))
		ok = k
	case *array.DurationBuilder:
		x, k := v.(time.Duration)
		unit := bb.Type().(*arrow.DurationType).Unit.Multiplier()
		if k && x%unit != 0 {
			return fmt.Errorf("%w: data: %v is not a whole number of a %s column's units", atoll.ErrInvalidArgument, x, bb.Type())
		}
		bb.Append(arrow.Duration(x / unit))
		ok = k
	case *array.ListBuilder:
		rv := reflect.ValueOf(v)
		if rv.Kind() != reflect.Slice {
			ok = false
			break
		}
		if rv.IsNil() {
			bb.AppendNull()
			break
		}
		bb.Append(true)
		for k := range rv.Len() {
			var x any // a nil pointer: a null
			if e := rv.Index(k); e.Kind() != reflect.Pointer {
				x = e.Interface()
			} else if !e.IsNil() {
				x = e.Elem().Interface()
			}
			if err := appendValue(bb.ValueBuilder(), x); err != nil {
				return fmt.Errorf("element %d: %w", k, err)
			}
		}
	default:
		return fmt.Errorf("%w: data: building a %s column from rows is not supported", atoll.ErrInvalidArgument, b.Type())
	}
	if !ok {
		return fmt.Errorf("%w: data: a %T value in a %s column", atoll.ErrInvalidArgument, v, b.Type())
	}
	return nil
}

// itemRows turns items (structs, pointers to structs, or maps with string
// keys) into rows, and for structs names the columns in field order with
// the types of the fields (nil where a field's type does not say). A
// struct field's column is named by its `arrow` tag, else by the field
// name; unexported fields and fields tagged "-" are skipped; a pointer
// field holds its value, or a null when nil.
func itemRows[T any](items []T) ([]Row, []arrow.Field, error) {
	rows := make([]Row, len(items))
	var order []arrow.Field
	for i, it := range items {
		v := reflect.ValueOf(it)
		for v.Kind() == reflect.Pointer && !v.IsNil() {
			v = v.Elem()
		}
		switch v.Kind() {
		case reflect.Map:
			if v.Type().Key().Kind() != reflect.String {
				return nil, nil, fmt.Errorf("%w: data: FromItems: map keys must be strings, not %s", atoll.ErrInvalidArgument, v.Type().Key())
			}
			r := make(Row, v.Len())
			it := v.MapRange()
			for it.Next() {
				r[it.Key().String()] = it.Value().Interface()
			}
			rows[i] = r
		case reflect.Struct:
			r := Row{}
			t := v.Type()
			var fields []arrow.Field
			for f := range t.NumField() {
				sf := t.Field(f)
				if !sf.IsExported() {
					continue
				}
				name := sf.Name
				if tag := sf.Tag.Get("arrow"); tag == "-" {
					continue
				} else if tag != "" {
					name = tag
				}
				fv := v.Field(f)
				if fv.Kind() == reflect.Pointer {
					if fv.IsNil() {
						r[name] = nil
					} else {
						r[name] = fv.Elem().Interface()
					}
				} else {
					r[name] = fv.Interface()
				}
				if order == nil {
					fields = append(fields, arrow.Field{Name: name, Type: arrowTypeOf(derefType(sf.Type)), Nullable: true})
				}
			}
			rows[i] = r
			if order == nil {
				order = fields
			}
		default:
			return nil, nil, fmt.Errorf("%w: data: FromItems: an item must be a struct or a map, not %T", atoll.ErrInvalidArgument, it)
		}
	}
	return rows, order, nil
}

// orderedSchema is rowSchema with the columns of order first (a
// struct's fields, in order), a column of nulls only taking its field's
// type (string where the field's type does not say).
func orderedSchema(rows []Row, order []arrow.Field) (*arrow.Schema, error) {
	var prev *arrow.Schema
	if len(order) > 0 {
		fields := slices.Clone(order)
		for i := range fields {
			if fields[i].Type == nil {
				fields[i].Type = arrow.BinaryTypes.String
			}
		}
		prev = arrow.NewSchema(fields, nil)
	}
	return rowSchema(rows, prev)
}
