package data

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// ReadJSON reads newline-delimited JSON files, one object per line (paths
// of files or of directories, whose *.json, *.jsonl and *.ndjson files
// are read), one task per file. Each file's schema is inferred from all
// of its lines (keys in order of first appearance; a key missing from a
// line is a null): integers are int64 (float64 if any value of the key
// has a fraction or an exponent), strings, booleans, arrays are lists of
// their elements' type, objects are structs of their keys; a key whose
// values are only null is a string column. A key whose values have
// different types (a string and a number, say) fails the read naming
// the key. The rows are decoded by arrow-go's JSON reader.
func ReadJSON(paths ...string) *Dataset {
	return newDataset(&source{open: func(Config) (readSource, error) {
		us, err := jsonUnits(paths)
		return &fileSource{kind: "json", us: us}, err
	}}, "read", nil)
}

func jsonUnits(paths []string) ([]readUnit, error) {
	return fileUnits(paths, "json", ".json", ".jsonl", ".ndjson")
}

// readJSONFile reads one newline-delimited JSON file.
func readJSONFile(path string) ([]arrow.RecordBatch, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	schema, err := inferJSONSchema(b)
	if err != nil {
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

// jsonType is an inferred type: a kind, and for lists the element, for
// objects the fields in order of first appearance.
type jsonType struct {
	kind   string // null, bool, int, float, string, list, object
	elem   *jsonType
	names  []string
	fields map[string]*jsonType
}

// inferJSONSchema infers the schema of newline-delimited JSON objects,
// reading tokens so that keys keep the order they appear in.
func inferJSONSchema(b []byte) (*arrow.Schema, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	top := &jsonType{kind: "object", fields: map[string]*jsonType{}}
	for line := 1; dec.More(); line++ {
		if err := top.mergeNext(dec, ""); err != nil {
			return nil, fmt.Errorf("object %d: %w", line, err)
		}
	}
	fields := make([]arrow.Field, len(top.names))
	for i, n := range top.names {
		fields[i] = arrow.Field{Name: n, Type: top.fields[n].arrow(), Nullable: true}
	}
	return arrow.NewSchema(fields, nil), nil
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
			p := k
			if path != "" {
				p = path + "." + k
			} else if k == "" {
				p = `""` // a top-level key "" is not the top level
			}
			if err := ft.mergeNext(dec, p); err != nil {
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
