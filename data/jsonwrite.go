package data

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// WriteJSON writes the dataset to dir as newline-delimited JSON files
// part-NNNNN.json (what ReadJSON reads), one per task of the last stage,
// written by the tasks themselves as WriteCSV's are: a line per row, an
// object of the row's columns in the schema's order. Nulls are null, as
// are NaN and infinite floats (JSON has no number for them); timestamps
// are RFC 3339 text (with their zone's offset, none for a timestamp in
// no zone), dates 2006-01-02, durations a whole number of their unit,
// binary values base64, lists arrays and structs objects. ReadJSON reads
// times back as text unless ReadJSONWith gives their columns' types.
func (d *Dataset) WriteJSON(ctx context.Context, dir string) error {
	return d.writeFiles(ctx, "WriteJSON", "write_json", dir)
}

// writeJSONFile writes recs to path as newline-delimited JSON (through a
// temporary file, as writeCSVFile).
func writeJSONFile(path string, recs []arrow.RecordBatch) error {
	return writeFileAtomic(path, recs, func(f io.Writer) error {
		w := bufio.NewWriterSize(f, 1<<20)
		var line []byte
		for _, rec := range recs {
			names := make([][]byte, rec.NumCols())
			for j, fd := range rec.Schema().Fields() {
				names[j] = appendJSONString(nil, fd.Name)
			}
			for i := range int(rec.NumRows()) {
				line = append(line[:0], '{')
				for j, c := range rec.Columns() {
					if j > 0 {
						line = append(line, ',')
					}
					line = append(append(line, names[j]...), ':')
					var err error
					if line, err = appendJSONValue(line, c, i); err != nil {
						return fmt.Errorf("column %q, row %d: %w", rec.Schema().Field(j).Name, i, err)
					}
				}
				if _, err := w.Write(append(line, '}', '\n')); err != nil {
					return err
				}
			}
		}
		return w.Flush()
	})
}

// appendJSONValue appends value i of c as JSON.
func appendJSONValue(b []byte, c arrow.Array, i int) ([]byte, error) {
	if c.IsNull(i) {
		return append(b, "null"...), nil
	}
	switch a := c.(type) {
	case *array.Int64:
		return strconv.AppendInt(b, a.Value(i), 10), nil
	case *array.Int32:
		return strconv.AppendInt(b, int64(a.Value(i)), 10), nil
	case *array.Int16:
		return strconv.AppendInt(b, int64(a.Value(i)), 10), nil
	case *array.Int8:
		return strconv.AppendInt(b, int64(a.Value(i)), 10), nil
	case *array.Uint64:
		return strconv.AppendUint(b, a.Value(i), 10), nil
	case *array.Uint32:
		return strconv.AppendUint(b, uint64(a.Value(i)), 10), nil
	case *array.Uint16:
		return strconv.AppendUint(b, uint64(a.Value(i)), 10), nil
	case *array.Uint8:
		return strconv.AppendUint(b, uint64(a.Value(i)), 10), nil
	case *array.Float64:
		return appendJSONFloat(b, a.Value(i), 64), nil
	case *array.Float32:
		return appendJSONFloat(b, float64(a.Value(i)), 32), nil
	case *array.Boolean:
		return strconv.AppendBool(b, a.Value(i)), nil
	case *array.String:
		return appendJSONString(b, a.Value(i)), nil
	case *array.LargeString:
		return appendJSONString(b, a.Value(i)), nil
	case *array.Timestamp:
		t := a.DataType().(*arrow.TimestampType)
		layout := "2006-01-02T15:04:05.999999999"
		loc := time.UTC
		if t.TimeZone != "" {
			var err error
			if loc, err = t.GetZone(); err != nil {
				return b, err
			}
			layout = time.RFC3339Nano
		}
		at := a.Value(i).ToTime(t.Unit).In(loc)
		return append(at.AppendFormat(append(b, '"'), layout), '"'), nil
	case *array.Date32:
		return append(a.Value(i).ToTime().AppendFormat(append(b, '"'), time.DateOnly), '"'), nil
	case *array.Date64:
		return append(a.Value(i).ToTime().AppendFormat(append(b, '"'), time.DateOnly), '"'), nil
	case *array.Duration:
		return strconv.AppendInt(b, int64(a.Value(i)), 10), nil
	}
	v, err := json.Marshal(c.GetOneForMarshal(i))
	if err != nil {
		return b, err
	}
	return append(b, v...), nil
}

// appendJSONFloat appends f, or null for NaN and the infinities.
func appendJSONFloat(b []byte, f float64, bits int) []byte {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return append(b, "null"...)
	}
	return strconv.AppendFloat(b, f, 'g', -1, bits)
}

// appendJSONString appends s as a JSON string: printable ASCII as it is,
// anything else through encoding/json (its escapes; invalid UTF-8
// becomes U+FFFD).
func appendJSONString(b []byte, s string) []byte {
	plain := true
	for i := range len(s) {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			plain = false
			break
		}
	}
	if plain {
		return append(append(append(b, '"'), s...), '"')
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	return append(b, bytes.TrimSuffix(buf.Bytes(), []byte{'\n'})...)
}
