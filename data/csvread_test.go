package data_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/atoll-runtime/atoll"
	"github.com/atoll-runtime/atoll/data"
	"github.com/atoll-runtime/atoll/data/expr"
)

// writeFiles writes name → content into a new directory and returns it.
func writeFiles(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// pastTheHead is header, then line as many times as it takes to pass
// the first MiB the driver infers a read's schema from, and the count of
// those lines.
func pastTheHead(header, line string) (string, int) {
	var b strings.Builder
	b.WriteString(header)
	n := 0
	for ; b.Len() <= 1<<20; n++ {
		b.WriteString(line)
	}
	return b.String(), n
}

// TestReadCSVTypesAcrossFiles: each column's type holds every file's
// values, so every block has one schema. A price of 10 in one file and
// 2.5 in another (or 10 then 2.5 in one file) is a float64 column, a
// column empty in one file takes the others' type, and one empty in
// every file is a string of nulls. A Sort across the files needs their
// blocks to share a schema: it failed when each file's task inferred
// its own ("blocks of different schemas"), and the file with 10 then
// 2.5 did not read at all (the type came from its first row).
func TestReadCSVTypesAcrossFiles(t *testing.T) {
	ctx := start(t)
	dir := writeFiles(t, map[string]string{
		"a.csv": "id,price,day,ok,at,utc,note\n1,10,2026-01-02,true,2026-01-02 10:00:00,2026-01-02T10:00:00Z,\n2,2.5,2026-01-03,false,2026-01-02,,\n",
		"b.csv": "id,price,day,ok,at,utc,note\n3,20,,,,,\n",
		"c.csv": "id,price,day,ok,at,utc,note\n4,,2026-02-01,t,2026-01-02T11:30:00,2026-01-02T11:00:00+01:00,\n",
	})
	ds := data.ReadCSV(dir)
	schema, err := ds.Schema(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]arrow.Type{"id": arrow.INT64, "price": arrow.FLOAT64, "day": arrow.DATE32, "ok": arrow.BOOL,
		"at": arrow.TIMESTAMP, "utc": arrow.TIMESTAMP, "note": arrow.STRING}
	for _, f := range schema.Fields() {
		if f.Type.ID() != want[f.Name] {
			t.Errorf("column %s is %s, want %s", f.Name, f.Type, want[f.Name])
		}
	}
	rows, err := ds.Sort("price").TakeAll(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var prices []any
	for _, r := range rows {
		prices = append(prices, r["price"])
	}
	if len(rows) != 4 || prices[0] != 2.5 || prices[1] != 10.0 || prices[2] != 20.0 || prices[3] != nil {
		t.Fatalf("sorted prices %v", prices)
	}
	if rows[0]["note"] != nil || rows[0]["ok"] != false {
		t.Fatalf("row %v", rows[0])
	}
	if tz := schema.Field(schema.FieldIndices("utc")[0]).Type.(*arrow.TimestampType).TimeZone; tz != "UTC" {
		t.Fatalf("utc's time zone is %q", tz)
	}
}

// TestReadCSVColumnCheckedBeforeAnyTask: a typo'd column in an
// expression over a CSV read is the plan's *expr.Error, returned before
// any task runs (not a failed task's error).
func TestReadCSVColumnCheckedBeforeAnyTask(t *testing.T) {
	ctx := start(t)
	dir := writeFiles(t, map[string]string{"a.csv": "id,price\n1,2\n"})
	ds := data.ReadCSV(dir).Filter(expr.Col("prize").Gt(1))
	_, err := ds.Count(ctx)
	var ee *expr.Error
	var te *atoll.TaskError
	if !errors.As(err, &ee) || errors.As(err, &te) || !strings.Contains(err.Error(), `no column "prize"`) {
		t.Fatalf("Count: %v, want the plan's expression error", err)
	}
	if st := ds.Stats(); strings.Contains(st, "executed") {
		t.Fatalf("tasks ran:\n%s", st)
	}
}

// TestReadCSVValuePastTheHead: a value past the first MiB of a file that
// its column's type does not hold fails the read with a FileError that
// names the line, the column and the value.
func TestReadCSVValuePastTheHead(t *testing.T) {
	ctx := start(t)
	head, n := pastTheHead("id,v\n", "12345,67890\n")
	dir := writeFiles(t, map[string]string{"a.csv": head + "1,2.5\n"})
	_, err := data.ReadCSV(dir).Count(ctx)
	var fe *data.FileError
	if !errors.As(err, &fe) {
		t.Fatalf("Count: %v, want a FileError", err)
	}
	for _, want := range []string{"line " + strconv.Itoa(n+2) + ":", `column "v" holds "2.5"`, "not int64"} {
		if !strings.Contains(err.Error(), want) {
			t.Fatalf("error %q does not say %q", err, want)
		}
	}
}

// TestReadCSVHeadersDiffer: files whose headers name other columns are
// a SchemaError naming both, before any task runs.
func TestReadCSVHeadersDiffer(t *testing.T) {
	ctx := start(t)
	dir := writeFiles(t, map[string]string{"a.csv": "id,price\n1,2\n", "b.csv": "id,cost\n1,2\n"})
	_, err := data.ReadCSV(dir).Count(ctx)
	var se *data.SchemaError
	if !errors.As(err, &se) || !strings.Contains(err.Error(), "a.csv: id, price") || !strings.Contains(err.Error(), "b.csv: id, cost") {
		t.Fatalf("Count: %v, want a SchemaError naming both headers", err)
	}
}

// TestReadCSVWith: semicolon-separated files with "NA" for nulls read
// with a zip code kept as text and a price given float64, whose first
// MiB holds whole numbers only and whose last line holds a fraction
// (inferred, it failed as int64). Options that cannot read fail before
// any task runs: a column no header has, a type a CSV column cannot
// have, a value in the first MiB that its given type does not hold, a
// quote for a delimiter.
func TestReadCSVWith(t *testing.T) {
	ctx := start(t)
	head, n := pastTheHead("zip;price;note\n", "02139;10;NA\n")
	dir := writeFiles(t, map[string]string{"a.csv": head + "NA;2.5;x\n", "b.csv": "zip;price;note\n00501;NA;\n"})
	opts := data.CSVOptions{Delimiter: ';', Nulls: []string{"", "NA"},
		Types: map[string]arrow.DataType{"zip": arrow.BinaryTypes.String, "price": arrow.PrimitiveTypes.Float64}}
	ds := data.ReadCSVWith(opts, dir)
	schema, err := ds.Schema(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := schema.String(); !strings.Contains(got, "zip: type=utf8") || !strings.Contains(got, "price: type=float64") || !strings.Contains(got, "note: type=utf8") {
		t.Fatalf("schema %s", got)
	}
	rows, err := ds.Sort("price").TakeAll(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != n+2 {
		t.Fatalf("%d rows, want %d", len(rows), n+2)
	}
	first, last := rows[0], rows[len(rows)-1]
	if first["price"] != 2.5 || first["zip"] != nil || first["note"] != "x" {
		t.Fatalf("first row %v", first)
	}
	if last["price"] != nil || last["zip"] != "00501" || last["note"] != nil {
		t.Fatalf("last row %v", last)
	}
	if rows[1]["zip"] != "02139" || rows[1]["price"] != 10.0 || rows[1]["note"] != nil {
		t.Fatalf("row %v", rows[1])
	}

	small := writeFiles(t, map[string]string{"a.csv": "id,v\n1,x\n"})
	for name, c := range map[string]struct {
		opts data.CSVOptions
		want string
	}{
		"no such column": {data.CSVOptions{Types: map[string]arrow.DataType{"w": arrow.PrimitiveTypes.Int64}}, `no column "w" (columns: id, v)`},
		"int32":          {data.CSVOptions{Types: map[string]arrow.DataType{"id": arrow.PrimitiveTypes.Int32}}, `column "id" of type int32 is not supported`},
		"head value":     {data.CSVOptions{Types: map[string]arrow.DataType{"v": arrow.PrimitiveTypes.Int64}}, `line 2: column "v" holds "x", which is not int64 (the type CSVOptions.Types gives it)`},
		"quote":          {data.CSVOptions{Delimiter: '"'}, "the delimiter"},
	} {
		ds := data.ReadCSVWith(c.opts, small)
		_, err := ds.Count(ctx)
		if !errors.Is(err, atoll.ErrInvalidArgument) && !errors.As(err, new(*data.FileError)) {
			t.Errorf("%s: %v, want an invalid argument or a FileError", name, err)
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want it to say %q", name, err, c.want)
		}
		if st := ds.Stats(); strings.Contains(st, "executed") {
			t.Errorf("%s: tasks ran:\n%s", name, st)
		}
	}
}

// TestReadCSVCustomDates: a CSV column of dates in another layout than
// ISO 8601 reads as strings, and ParseTime makes them dates to group by;
// a value not in the layout fails the run naming the value, the layout
// and the expression.
func TestReadCSVCustomDates(t *testing.T) {
	ctx := start(t)
	var b strings.Builder
	b.WriteString("day,amount\n")
	want := map[time.Time]int64{}
	for i := range 300 {
		d := time.Date(2026, 1, 1+i%40, 0, 0, 0, 0, time.UTC)
		fmt.Fprintf(&b, "%s,%d\n", d.Format("01/02/2006"), i)
		want[d]++
	}
	dir := writeFiles(t, map[string]string{"a.csv": b.String()})
	days := data.ReadCSV(dir).WithColumn("day", expr.Col("day").ParseTime("01/02/2006").Cast(arrow.FixedWidthTypes.Date32))
	type perDay struct {
		Day   time.Time `arrow:"day"`
		Count int64     `arrow:"count()"`
	}
	got, err := data.TakeAllAs[perDay](ctx, days.GroupBy("day").Count())
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("%d days, want %d", len(got), len(want))
	}
	for _, g := range got {
		if want[g.Day] != g.Count {
			t.Fatalf("day %v: %d rows, want %d", g.Day, g.Count, want[g.Day])
		}
	}

	bad := writeFiles(t, map[string]string{"a.csv": "day,amount\n11/27/2026,1\n2026-11-28,2\n"})
	_, err = data.ReadCSV(bad).WithColumn("day", expr.Col("day").ParseTime("01/02/2006")).TakeAll(ctx)
	if err == nil || !strings.Contains(err.Error(), `"2026-11-28" is not a time in the layout "01/02/2006"`) ||
		!strings.Contains(err.Error(), `parse_time`) {
		t.Fatalf("a date not in the layout: %v", err)
	}
}
