package data

import (
	"fmt"
	"reflect"
	"sort"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/atoll-runtime/atoll"
)

// Row is one row as Go values by column name: int64, int32, float64,
// float32, string, bool or nil (a null). Other Arrow types come as the
// value arrow-go gives for JSON (GetOneForMarshal) and cannot be built
// back from rows yet.
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
	}
	return col.GetOneForMarshal(i)
}

// arrowType is the Arrow type of a Go value of a row.
func arrowType(v any) (arrow.DataType, error) {
	switch v.(type) {
	case int, int64:
		return arrow.PrimitiveTypes.Int64, nil
	case int32:
		return arrow.PrimitiveTypes.Int32, nil
	case float64:
		return arrow.PrimitiveTypes.Float64, nil
	case float32:
		return arrow.PrimitiveTypes.Float32, nil
	case string:
		return arrow.BinaryTypes.String, nil
	case bool:
		return arrow.FixedWidthTypes.Boolean, nil
	}
	return nil, fmt.Errorf("%w: data: a row value of type %T is not supported (int, int64, int32, float64, float32, string, bool)", atoll.ErrInvalidArgument, v)
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
				if t == nil {
					t = f.Type
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
	default:
		return fmt.Errorf("%w: data: building a %s column from rows is not supported", atoll.ErrInvalidArgument, b.Type())
	}
	if !ok {
		return fmt.Errorf("%w: data: a %T value in a %s column", atoll.ErrInvalidArgument, v, b.Type())
	}
	return nil
}

// itemRows turns items (structs, pointers to structs, or maps with string
// keys) into rows. A struct field's column is named by its `arrow` tag,
// else by the field name; unexported fields and fields tagged "-" are
// skipped.
func itemRows[T any](items []T) ([]Row, []string, error) {
	rows := make([]Row, len(items))
	var order []string
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
			var names []string
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
				r[name] = v.Field(f).Interface()
				names = append(names, name)
			}
			rows[i] = r
			if order == nil {
				order = names
			}
		default:
			return nil, nil, fmt.Errorf("%w: data: FromItems: an item must be a struct or a map, not %T", atoll.ErrInvalidArgument, it)
		}
	}
	return rows, order, nil
}

// orderedSchema is rowSchema with the columns in order first (struct
// field order).
func orderedSchema(rows []Row, order []string) (*arrow.Schema, error) {
	var prev *arrow.Schema
	if len(order) > 0 {
		fields := make([]arrow.Field, len(order))
		for i, n := range order {
			fields[i] = arrow.Field{Name: n, Type: arrow.BinaryTypes.String, Nullable: true}
		}
		prev = arrow.NewSchema(fields, nil)
	}
	return rowSchema(rows, prev)
}
