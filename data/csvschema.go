package data

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/atoll-runtime/atoll/internal/errs"
)

// A CSV read's schema is the driver's, made before any task runs: the
// first sniffBytes of every file are parsed, each column takes the
// narrowest type that holds every value seen in any file, and every read
// task parses its file with that schema. A task inferring its own file's
// types would give two files two schemas (an integer column in one, a
// float column in the other), which no later operation could combine;
// arrow-go's inferring reader also takes each column's type from the
// first row alone, so "10" then "2.5" failed the read.

// sniffBytes is how much of each CSV or JSON file the driver reads to
// infer a read's schema.
const sniffBytes = 1 << 20

// csvKind is an inferred CSV column type, from narrowest to widest
// where one holds another's values (csvInt in csvFloat, csvDate in
// csvTimestamp); any two kinds that do not nest widen to csvString (a
// timestamp with a zone offset and one without, too: Arrow's CSV parser
// takes a zone offset only in a column with a time zone, and requires
// it there).
type csvKind uint8

const (
	csvNull csvKind = iota // only empty values so far
	csvInt
	csvFloat
	csvBool
	csvDate
	csvTimestamp
	csvTimestampUTC // a timestamp with a zone offset
	csvString
)

// csvField is a column of a CSV read: its name and its inferred kind
// (a task's spec carries them as an Arrow schema, csvArrowSchema).
type csvField struct {
	Name  string
	Kind  csvKind
	Given bool // the kind is CSVOptions.Types', not inferred (the driver's only)
}

// csvDialect is how a CSV read's files are written: what separates a
// line's values and which values are nulls. Its zero value is a comma
// and the empty value.
type csvDialect struct {
	Delimiter rune     // 0: a comma
	Nulls     []string // none: the empty value alone
}

func (d csvDialect) comma() rune {
	if d.Delimiter == 0 {
		return ','
	}
	return d.Delimiter
}

func (d csvDialect) nulls() []string {
	if len(d.Nulls) == 0 {
		return []string{""}
	}
	return d.Nulls
}

// null reports whether v is read as a null.
func (d csvDialect) null(v string) bool {
	if len(d.Nulls) == 0 {
		return v == ""
	}
	return slices.Contains(d.Nulls, v)
}

// reader is a reader of the CSV file b's records.
func (d csvDialect) reader(b []byte) *csv.Reader {
	r := csv.NewReader(bytes.NewReader(b))
	r.Comma = d.comma()
	r.ReuseRecord = true
	return r
}

// check is nil when d is a dialect the readers take: a delimiter
// encoding/csv takes (not a quote, a line end or an invalid rune), and
// a bounded list of nulls.
func (d csvDialect) check() error {
	if c := d.comma(); c == '"' || c == '\r' || c == '\n' || c == utf8.RuneError || !utf8.ValidRune(c) {
		return fmt.Errorf("the delimiter %q", c)
	}
	if len(d.Nulls) > maxNames {
		return fmt.Errorf("%d null values", len(d.Nulls))
	}
	for _, v := range d.Nulls {
		if len(v) > maxString {
			return fmt.Errorf("a null value of %d bytes", len(v))
		}
	}
	return nil
}

func (k csvKind) arrow() arrow.DataType {
	switch k {
	case csvInt:
		return arrow.PrimitiveTypes.Int64
	case csvFloat:
		return arrow.PrimitiveTypes.Float64
	case csvBool:
		return arrow.FixedWidthTypes.Boolean
	case csvDate:
		return arrow.FixedWidthTypes.Date32
	case csvTimestamp:
		return &arrow.TimestampType{Unit: arrow.Nanosecond}
	case csvTimestampUTC:
		return &arrow.TimestampType{Unit: arrow.Nanosecond, TimeZone: "UTC"}
	}
	return arrow.BinaryTypes.String // a column of nulls only, too
}

// classify returns the narrowest kind that holds v, a value that is not
// empty. The order of the tries is arrow-go's CSV parsers' (an integer
// before a bool, so "1" is an integer).
func classify(v string) csvKind {
	for _, k := range classifyOrder {
		if fits(k, v) {
			return k
		}
	}
	return csvString
}

// classifyOrder is the order classify tries the kinds in: arrow-go's
// CSV inference's (a date before a timestamp, which also takes a bare
// date).
var classifyOrder = [...]csvKind{csvInt, csvBool, csvDate, csvFloat, csvTimestamp, csvTimestampUTC}

// fits reports whether a column of kind k holds v, a value that is not
// empty (what Arrow's CSV parser of k's type accepts). Most values fit
// their column's kind: checking it first keeps the sniff at one parse a
// value.
func fits(k csvKind, v string) bool {
	switch k {
	case csvNull:
		return false
	case csvInt:
		_, err := strconv.ParseInt(v, 10, 64)
		return err == nil
	case csvFloat:
		_, err := strconv.ParseFloat(v, 64)
		return err == nil
	case csvBool:
		_, err := strconv.ParseBool(v)
		return err == nil
	case csvDate:
		_, err := time.Parse("2006-01-02", v)
		return err == nil
	case csvTimestamp, csvTimestampUTC:
		_, zoned, err := arrow.TimestampFromStringInLocation(v, arrow.Nanosecond, time.UTC)
		return err == nil && zoned == (k == csvTimestampUTC)
	}
	return true // csvString
}

// widenKind is the narrowest kind holding the values of both a and b.
func widenKind(a, b csvKind) csvKind {
	switch {
	case a == b || b == csvNull:
		return a
	case a == csvNull:
		return b
	case a == csvInt && b == csvFloat, a == csvFloat && b == csvInt:
		return csvFloat
	case a == csvDate && b == csvTimestamp, a == csvTimestamp && b == csvDate:
		return csvTimestamp
	}
	return csvString
}

// sniffCSV reads the header of the CSV file path and the kinds of its
// columns' values in its first sniffBytes; a column that given names
// keeps the given kind, and a value there it does not hold is an error.
func sniffCSV(path string, d csvDialect, given map[string]csvKind) ([]csvField, error) {
	// Whole lines only: a quoted field may still hold a newline, and the
	// parser then reports the cut as an error, which ends the sniff.
	head, err := sniffHead(path)
	if err != nil {
		return nil, err
	}
	r := d.reader(head)
	header, err := r.Read()
	if err != nil {
		if errors.Is(err, io.EOF) {
			return nil, errors.New("no header line")
		}
		return nil, err
	}
	fields := make([]csvField, len(header))
	seen := make(map[string]bool, len(header))
	for i, name := range header {
		if seen[name] {
			return nil, fmt.Errorf("column %q twice in the header", name)
		}
		seen[name] = true
		fields[i].Name = name
		fields[i].Kind, fields[i].Given = given[name]
	}
	for {
		rec, err := r.Read()
		if err != nil {
			break // io.EOF, or a line cut by the sniff's end
		}
		for i, v := range rec[:min(len(rec), len(fields))] {
			f := &fields[i]
			if fits(f.Kind, v) || d.null(v) {
				continue
			}
			if f.Given {
				line, _ := r.FieldPos(i)
				return nil, valueError(line, f, v)
			}
			f.Kind = widenKind(f.Kind, classify(v))
		}
	}
	return fields, nil
}

// valueError says that column f does not hold the value v on a line.
func valueError(line int, f *csvField, v string) error {
	why := "each column's type is inferred from the first MiB of every file, unless CSVOptions.Types gives it"
	if f.Given {
		why = "the type CSVOptions.Types gives it"
	}
	return fmt.Errorf("line %d: column %q holds %q, which is not %s (%s)", line, f.Name, clipValue(v), f.Kind.arrow(), why)
}

// csvSchema infers the columns of the CSV files paths: every file's
// header must name the same columns in the same order, and each column
// takes the narrowest kind holding what every file's first rows hold,
// or the kind given names for it.
func csvSchema(paths []string, d csvDialect, given map[string]csvKind) ([]csvField, error) {
	sniffed, err := sniffFiles(paths, func(path string) ([]csvField, error) { return sniffCSV(path, d, given) })
	if err != nil {
		return nil, err
	}
	out := sniffed[0]
	for name := range given {
		if !slices.ContainsFunc(out, func(f csvField) bool { return f.Name == name }) {
			return nil, &ColumnError{Column: name, Columns: strings.Split(schemaNames(csvArrowSchema(out)), ", ")}
		}
	}
	for i, fields := range sniffed[1:] {
		if !sameNames(out, fields) {
			return nil, &SchemaError{What: "CSV files", A: paths[0] + ": " + schemaNames(csvArrowSchema(out)), B: paths[i+1] + ": " + schemaNames(csvArrowSchema(fields))}
		}
		for j := range out {
			out[j].Kind = widenKind(out[j].Kind, fields[j].Kind)
		}
	}
	return out, nil
}

// sniffFiles runs sniff on every path (a goroutine per CPU) and returns
// the results in paths' order, or the first path's error as a FileError.
func sniffFiles[T any](paths []string, sniff func(path string) (T, error)) ([]T, error) {
	out := make([]T, len(paths))
	errList := make([]error, len(paths))
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(len(paths), runtime.GOMAXPROCS(0)) {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < len(paths); i = int(next.Add(1) - 1) {
				out[i], errList[i] = sniff(paths[i])
			}
		})
	}
	wg.Wait()
	for i, err := range errList {
		if err != nil {
			return nil, fileError("read", paths[i], err)
		}
	}
	return out, nil
}

// sniffHead reads the first sniffBytes of the file path, cut after its
// last whole line when the file is longer; a first line longer than
// that (a large JSON object) is read whole, up to maxSniffLine.
func sniffHead(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 64<<10)
	head, err := io.ReadAll(io.LimitReader(r, sniffBytes+1))
	if err != nil {
		return nil, err
	}
	if len(head) <= sniffBytes {
		return head, nil // the whole file
	}
	if cut := bytes.LastIndexByte(head[:sniffBytes], '\n'); cut >= 0 {
		return head[:cut+1], nil
	}
	// no line ends in the first sniffBytes: read on to the first end
	for len(head) <= maxSniffLine {
		line, err := r.ReadSlice('\n')
		head = append(head, line...)
		switch {
		case err == nil || errors.Is(err, io.EOF):
			return head, nil
		case !errors.Is(err, bufio.ErrBufferFull):
			return nil, err
		}
	}
	return nil, fmt.Errorf("its first line is longer than %d MiB", maxSniffLine>>20)
}

// maxSniffLine bounds the first line sniffHead reads whole.
const maxSniffLine = 64 << 20

func sameNames(a, b []csvField) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Name != b[i].Name {
			return false
		}
	}
	return true
}

// csvFieldsOf decodes a CSV read's columns from a task's spec (an Arrow
// IPC schema): a type that is not one of the kinds' is malformed (the
// CSV parser panics on some).
func csvFieldsOf(b []byte) ([]csvField, error) {
	s, err := decodeSchema(b)
	if err != nil {
		return nil, errs.Malformedf(specWhat, "a CSV read's columns: %v", err)
	}
	if s.NumFields() == 0 || s.NumFields() > maxNames {
		return nil, errs.Malformedf(specWhat, "a CSV read of %d columns", s.NumFields())
	}
	fs := make([]csvField, s.NumFields())
	for i, f := range s.Fields() {
		k, ok := csvKindOf(f.Type)
		if !ok || f.Name == "" {
			return nil, errs.Malformedf(specWhat, "CSV column %q of type %s", clipName(f.Name), f.Type)
		}
		fs[i] = csvField{Name: f.Name, Kind: k}
	}
	return fs, nil
}

// csvKindOf is the kind whose Arrow type is t, if any.
func csvKindOf(t arrow.DataType) (csvKind, bool) {
	for k := csvInt; k <= csvString; k++ {
		if arrow.TypeEqual(k.arrow(), t) {
			return k, true
		}
	}
	return 0, false
}

// csvTypes are the Arrow types a CSV column may have, for errors.
const csvTypes = "a CSV column is int64, float64, bool, date32, timestamp[ns], timestamp[ns, tz=UTC] or string"

// csvArrowSchema is the Arrow schema of a CSV read's columns.
func csvArrowSchema(fs []csvField) *arrow.Schema {
	fields := make([]arrow.Field, len(fs))
	for i, f := range fs {
		fields[i] = arrow.Field{Name: f.Name, Type: f.Kind.arrow(), Nullable: true}
	}
	return arrow.NewSchema(fields, nil)
}

// csvValueError finds the first value of the CSV file b that the read's
// columns do not hold (a row past the sniffed head), for an error that
// names it; nil when every value fits (the parser failed for another
// reason).
func csvValueError(b []byte, d csvDialect, fs []csvField) error {
	r := d.reader(b)
	if _, err := r.Read(); err != nil {
		return nil
	}
	for {
		rec, err := r.Read()
		if err != nil {
			return nil
		}
		for i, v := range rec[:min(len(rec), len(fs))] {
			if fits(fs[i].Kind, v) || d.null(v) {
				continue
			}
			line, _ := r.FieldPos(i)
			return valueError(line, &fs[i], v)
		}
	}
}

func clipValue(v string) string {
	if len(v) > 64 {
		return v[:64] + "..."
	}
	return v
}
