package data_test

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/atoll-runtime/atoll"
	"github.com/atoll-runtime/atoll/data"
	"github.com/atoll-runtime/atoll/data/expr"
)

// TestWriteJSON: a line per row, its columns in the schema's order, each
// value as JSON has it, and ReadJSON reads the files back.
func TestWriteJSON(t *testing.T) {
	ctx := start(t)
	type item struct {
		ID    int64
		Price float64
		Name  *string
		OK    bool
		At    time.Time
		Took  time.Duration
	}
	at := time.Date(2026, 11, 27, 10, 30, 0, 500_000_000, time.UTC)
	odd, path := "say \"hi\"\n\tté\x01 <b>", `C:\dir`
	items := []item{{1, 2.5, &odd, true, at, 90 * time.Second}, {2, math.NaN(), nil, false, at.Add(time.Hour), 0}, {3, math.Inf(1), &path, true, at, -time.Millisecond}}
	ds, err := data.FromItems(ctx, items)
	if err != nil {
		t.Fatal(err)
	}
	ds = ds.WithColumn("day", expr.Col("At").Cast(arrow.FixedWidthTypes.Date32))
	dir := filepath.Join(t.TempDir(), "json")
	if err := ds.WriteJSON(ctx, dir); err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*"))
	var lines []string
	for _, f := range files {
		if filepath.Ext(f) != ".json" {
			t.Fatalf("file %s", f)
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")...)
	}
	want := []string{
		`{"ID":1,"Price":2.5,"Name":"say \"hi\"\n\tté\u0001 <b>","OK":true,"At":"2026-11-27T10:30:00.5Z","Took":90000000000,"day":"2026-11-27"}`,
		`{"ID":2,"Price":null,"Name":null,"OK":false,"At":"2026-11-27T11:30:00.5Z","Took":0,"day":"2026-11-27"}`,
		`{"ID":3,"Price":null,"Name":"C:\\dir","OK":true,"At":"2026-11-27T10:30:00.5Z","Took":-1000000,"day":"2026-11-27"}`,
	}
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Fatalf("lines:\n%s\nwant:\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
	// read back, the times by their types
	back := data.ReadJSONWith(data.JSONOptions{Types: map[string]arrow.DataType{"At": arrow.FixedWidthTypes.Timestamp_us,
		"day": arrow.FixedWidthTypes.Date32}}, dir)
	rows, err := back.Sort("ID").TakeAll(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 3 || rows[0]["Name"] != odd || rows[1]["Name"] != nil || rows[2]["Name"] != path || rows[0]["Price"] != 2.5 || rows[1]["Price"] != nil ||
		!rows[1]["At"].(time.Time).Equal(at.Add(time.Hour)) || rows[2]["Took"] != int64(-1000000) {
		t.Fatalf("read back %v", rows)
	}
	if err := ds.WriteJSON(ctx, ""); !errors.Is(err, atoll.ErrInvalidArgument) {
		t.Fatalf("WriteJSON(\"\"): %v", err)
	}
}
