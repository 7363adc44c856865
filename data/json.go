package data

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/atoll-runtime/atoll"
	"github.com/atoll-runtime/atoll/internal/errs"
)

// ReadJSON reads newline-delimited JSON files, one object per line (paths
// of files or of directories, whose *.json, *.jsonl and *.ndjson files
// are read), one task per file. The schema is inferred when the dataset
// runs, before any task, from the first MiB of every file, one for the
// whole read (keys in order of first appearance; a key missing from a
// line is a null): integers are int64 (float64 if any value of the key
// has a fraction or an exponent, in any file), strings, booleans, arrays
// are lists of their elements' type, objects are structs of their keys;
// a key whose values are only null is a string column. A key whose
// values have different types (a string and a number, say) fails the
// read naming the key and the file, and so does a key or a value
// further into a file that the schema does not hold. The rows are
// decoded by arrow-go's JSON reader.
//
// ReadJSONWith reads files with given types for some keys.
func ReadJSON(paths ...string) *Dataset {
	return ReadJSONWith(JSONOptions{}, paths...)
}

// JSONOptions says how ReadJSONWith reads JSON files. Its zero value
// reads them as ReadJSON does.
type JSONOptions struct {
	// Types gives the top-level keys it names their column types, which
	// are then not inferred: a key whose values past the first MiB hold
	// what its first values do not (fractions after whole numbers), or
	// one that first appears there (a key no file's first MiB has is a
	// column after the inferred ones, in name order). Each type is bool,
	// int64, float64, string, a timestamp or date32 (read from RFC 3339
	// text, 2026-01-02T10:00:00Z, and 2026-01-02), or a list or struct of
	// them. Another type,
	// or a value in the first MiB that its type does not hold, fails the
	// read before any task runs.
	Types map[string]arrow.DataType
}

// ReadJSONWith reads JSON files as ReadJSON does, with opts.
func ReadJSONWith(opts JSONOptions, paths ...string) *Dataset {
	return newDataset(&source{open: func(Config) (readSource, error) {
		return jsonSource(paths, opts)
	}}, "read", nil)
}

// jsonSource lists the JSON files under paths, a read task each, and
// infers their schema from their heads where opts does not give it.
func jsonSource(paths []string, opts JSONOptions) (*fileSource, error) {
	for name, t := range opts.Types {
		if !jsonTypeOK(t, 1) {
			return nil, &ColumnError{Op: "JSONOptions.Types", Column: name, Type: fmt.Sprint(t), Supported: jsonTypes}
		}
	}
	us, err := fileUnits(paths, "json", ".json", ".jsonl", ".ndjson")
	if err != nil {
		return nil, err
	}
	files := unitPaths(us)
	types, err := sniffFiles(files, func(path string) (*jsonType, error) {
		head, err := sniffHead(path)
		if err != nil {
			return nil, err
		}
		return inferJSONType(head)
	})
	if err != nil {
		return nil, err
	}
	top := types[0]
	for i, t := range types[1:] {
		if err := top.merge(t, ""); err != nil {
			return nil, fileError("read", files[i+1], err)
		}
	}
	schema, err := top.schemaWith(opts.Types)
	if err != nil {
		return nil, err
	}
	return newFileSource(us, schema), nil
}

// schemaWith is the schema of rows of the top-level object type t, the
// keys given names of the types it gives them (after t's keys, in name
// order, those t has not), or an error naming a key whose given type
// does not hold its values in t.
func (t *jsonType) schemaWith(given map[string]arrow.DataType) (*arrow.Schema, error) {
	s := t.schema()
	if len(given) == 0 {
		return s, nil
	}
	fields := s.Fields()
	for i, f := range fields {
		if dt, ok := given[f.Name]; ok {
			if err := covers(dt, t.fields[f.Name], f.Name); err != nil {
				return nil, fmt.Errorf("%w: data: JSONOptions.Types: %v", atoll.ErrInvalidArgument, err)
			}
			fields[i].Type = dt
		}
	}
	for _, name := range slices.Sorted(maps.Keys(given)) {
		if _, ok := t.fields[name]; !ok {
			fields = append(fields, arrow.Field{Name: name, Type: given[name], Nullable: true})
		}
	}
	return arrow.NewSchema(fields, nil), nil
}

// readJSONFile reads one newline-delimited JSON file with the read's
// schema, after checking that the schema holds every line of it.
func readJSONFile(path string, schema *arrow.Schema) ([]arrow.RecordBatch, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	t, err := inferJSONType(b)
	if err != nil {
		return nil, err
	}
	if err := covers(arrow.StructOf(schema.Fields()...), t, ""); err != nil {
		return nil, err
	}
	if schema.NumFields() == 0 {
		return nil, nil
	}
	out, err := readRecords(array.NewJSONReader(bytes.NewReader(b), schema, array.WithChunk(1<<16), array.WithAllocator(memory.DefaultAllocator)))
	if err != nil {
		return nil, err
	}
	return out, nil
}

// covers reports (an error naming the key) whether values of type dt
// hold every value of t, the type of key path in a file.
func covers(dt arrow.DataType, t *jsonType, path string) error {
	if t.kind == "null" {
		return nil
	}
	ok := false
	switch dt := dt.(type) {
	case *arrow.BooleanType:
		ok = t.kind == "bool"
	case *arrow.Int64Type:
		ok = t.kind == "int"
	case *arrow.Float64Type:
		ok = t.kind == "float" || t.kind == "int"
	case *arrow.StringType, *arrow.TimestampType, *arrow.Date32Type:
		ok = t.kind == "string" // a time's text, which the reader parses
	case *arrow.ListType:
		if t.kind == "list" {
			return covers(dt.Elem(), t.elem, path+"[]")
		}
	case *arrow.StructType:
		if t.kind == "object" {
			for _, n := range t.names {
				f, found := dt.FieldByName(n)
				if !found {
					return fmt.Errorf("key %q is in no file's first MiB, so the read's schema has no column for it (JSONOptions.Types can give it one)", childPath(path, n))
				}
				if err := covers(f.Type, t.fields[n], childPath(path, n)); err != nil {
					return err
				}
			}
			return nil
		}
	}
	if ok {
		return nil
	}
	what := "the read's top level"
	if path != "" {
		what = fmt.Sprintf("key %q", path)
	}
	return fmt.Errorf("%s holds %s values, which its type in the read's schema, %s, does not (the schema is inferred from the first MiB of every file, unless JSONOptions.Types gives a key's type)", what, t.kind, dt)
}

// childPath is the path of key k of the object at path.
func childPath(path, k string) string {
	switch {
	case path != "":
		return path + "." + k
	case k == "":
		return `""` // a top-level key "" is not the top level
	}
	return k
}

// jsonSchemaOf decodes a JSON read's schema from a task's spec (an Arrow
// IPC schema) and checks it has only the types inference makes.
func jsonSchemaOf(b []byte) (*arrow.Schema, error) {
	s, err := decodeSchema(b)
	if err != nil {
		return nil, errs.Malformedf(specWhat, "a JSON read's schema: %v", err)
	}
	if s.NumFields() > maxNames || !jsonTypeOK(arrow.StructOf(s.Fields()...), 0) {
		return nil, errs.Malformedf(specWhat, "a JSON read's schema %s", clipName(schemaLine(s)))
	}
	return s, nil
}

// jsonTypeOK reports whether dt, at depth in a JSON read's schema, is a
// type the read takes: bool, int64, float64, string, and lists and
// structs of them, nested at most maxJSONDepth deep.
func jsonTypeOK(dt arrow.DataType, depth int) bool {
	if depth > maxJSONDepth {
		return false
	}
	switch dt := dt.(type) {
	case *arrow.BooleanType, *arrow.Int64Type, *arrow.Float64Type, *arrow.StringType, *arrow.Date32Type:
		return true
	case *arrow.TimestampType:
		_, err := dt.GetZone()
		return err == nil
	case *arrow.ListType:
		return jsonTypeOK(dt.Elem(), depth+1)
	case *arrow.StructType:
		for _, f := range dt.Fields() {
			if !jsonTypeOK(f.Type, depth+1) {
				return false
			}
		}
		return true
	}
	return false
}

// jsonTypes is what a JSON column's type may be, for errors.
const jsonTypes = "a JSON column is bool, int64, float64, string, a timestamp or date32 (from text), or a list or struct of them"

// maxJSONDepth bounds the nesting of a JSON read's schema in a task's
// spec.
const maxJSONDepth = 64

// jsonType is an inferred type: a kind, and for lists the element, for
// objects the fields in order of first appearance.
type jsonType struct {
	kind   string // null, bool, int, float, string, list, object
	elem   *jsonType
	names  []string
	fields map[string]*jsonType
}

// inferJSONType infers the type of newline-delimited JSON objects,
// reading tokens so that keys keep the order they appear in.
func inferJSONType(b []byte) (*jsonType, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	top := &jsonType{kind: "object", fields: map[string]*jsonType{}}
	for line := 1; dec.More(); line++ {
		if err := top.mergeNext(dec, ""); err != nil {
			return nil, fmt.Errorf("object %d: %w", line, err)
		}
	}
	return top, nil
}

// schema is the schema of rows of the top-level object type t.
func (t *jsonType) schema() *arrow.Schema {
	fields := make([]arrow.Field, len(t.names))
	for i, n := range t.names {
		fields[i] = arrow.Field{Name: n, Type: t.fields[n].arrow(), Nullable: true}
	}
	return arrow.NewSchema(fields, nil)
}

// merge widens t (the type of key path) to hold the values of o too.
func (t *jsonType) merge(o *jsonType, path string) error {
	switch {
	case o.kind == "null":
		return nil
	case t.kind == "null":
		*t = *o
		return nil
	case t.kind == "int" && o.kind == "float":
		t.kind = "float"
	case t.kind == "float" && o.kind == "int":
	case t.kind != o.kind:
		return fmt.Errorf("key %q holds both %s and %s values", path, t.kind, o.kind)
	}
	switch t.kind {
	case "list":
		return t.elem.merge(o.elem, path+"[]")
	case "object":
		for _, n := range o.names {
			ft := t.fields[n]
			if ft == nil {
				ft = &jsonType{kind: "null"}
				t.fields[n] = ft
				t.names = append(t.names, n)
			}
			if err := ft.merge(o.fields[n], childPath(path, n)); err != nil {
				return err
			}
		}
	}
	return nil
}

// mergeNext reads the next value from dec and widens t (the type of key
// path) to hold it.
func (t *jsonType) mergeNext(dec *json.Decoder, path string) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	var kind string
	switch x := tok.(type) {
	case nil:
		return nil
	case bool:
		kind = "bool"
	case string:
		kind = "string"
	case json.Number:
		kind = "float"
		if _, err := x.Int64(); err == nil {
			kind = "int"
		}
	case json.Delim:
		kind = map[json.Delim]string{'{': "object", '[': "list"}[x]
	}
	if path == "" && kind != "object" {
		return fmt.Errorf("not a JSON object")
	}
	switch {
	case t.kind == "null":
		t.kind = kind
		if kind == "list" {
			t.elem = &jsonType{kind: "null"}
		}
		if kind == "object" {
			t.fields = map[string]*jsonType{}
		}
	case t.kind == "int" && kind == "float":
		t.kind = "float"
	case t.kind == "float" && kind == "int":
	case t.kind != kind:
		return fmt.Errorf("key %q holds both %s and %s values", path, t.kind, kind)
	}
	switch kind {
	case "list":
		for dec.More() {
			if err := t.elem.mergeNext(dec, path+"[]"); err != nil {
				return err
			}
		}
	case "object":
		for dec.More() {
			kt, err := dec.Token()
			if err != nil {
				return err
			}
			k, _ := kt.(string)
			ft := t.fields[k]
			if ft == nil {
				ft = &jsonType{kind: "null"}
				t.fields[k] = ft
				t.names = append(t.names, k)
			}
			if err := ft.mergeNext(dec, childPath(path, k)); err != nil {
				return err
			}
		}
	default:
		return nil
	}
	_, err = dec.Token() // the closing ] or }
	return err
}

func (t *jsonType) arrow() arrow.DataType {
	switch t.kind {
	case "bool":
		return arrow.FixedWidthTypes.Boolean
	case "int":
		return arrow.PrimitiveTypes.Int64
	case "float":
		return arrow.PrimitiveTypes.Float64
	case "list":
		return arrow.ListOf(t.elem.arrow())
	case "object":
		fs := make([]arrow.Field, len(t.names))
		for i, n := range t.names {
			fs[i] = arrow.Field{Name: n, Type: t.fields[n].arrow(), Nullable: true}
		}
		return arrow.StructOf(fs...)
	}
	return arrow.BinaryTypes.String // string, or only nulls
}
