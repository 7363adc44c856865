package data_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/atoll-runtime/atoll"
	"github.com/atoll-runtime/atoll/data"
)

// TestReadJSON: newline-delimited JSON files of a directory, a task per
// file, one schema inferred from the files (ints widened to floats, nulls
// and missing keys, nested lists and objects), then Map over the rows.
func TestReadJSON(t *testing.T) {
	ctx := start(t)
	dir := t.TempDir()
	files := map[string]string{
		"a.json": `{"id": 1, "name": "a", "score": 1, "tags": ["x", "y"], "pos": {"x": 1.5, "y": 2}}
{"id": 2, "name": null, "score": 2.5, "tags": [], "pos": {"x": 3}}
`,
		"b.jsonl":  `{"name": "c", "id": 3, "ok": true}` + "\n",
		"skip.txt": `not json`,
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ds := data.ReadJSON(dir)
	rows, err := ds.TakeAll(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st := ds.Stats(); !strings.Contains(st, "Stage 1 read: 2/2 blocks") {
		t.Fatalf("want a task per file:\n%s", st)
	}
	if len(rows) != 3 {
		t.Fatalf("%d rows: %v", len(rows), rows)
	}
	r0, r1, r2 := rows[0], rows[1], rows[2]
	if r0["id"] != int64(1) || r0["name"] != "a" || r0["score"] != 1.0 || r1["score"] != 2.5 || r1["name"] != nil {
		t.Fatalf("rows of a.json: %v, %v", r0, r1)
	}
	if fmt.Sprint(r0["tags"]) != "[x y]" || fmt.Sprint(r0["pos"]) != "map[x:1.5 y:2]" || fmt.Sprint(r1["pos"]) != "map[x:3 y:<nil>]" {
		t.Fatalf("nested values: %v %v %v", r0["tags"], r0["pos"], r1["pos"])
	}
	if r2["id"] != int64(3) || r2["ok"] != true || r2["name"] != "c" || r2["score"] != nil || r0["ok"] != nil {
		t.Fatalf("row of b.jsonl: %v (and of a.json: %v)", r2, r0)
	}
	s, err := ds.Schema(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := s.String(); got != "schema:\n  fields: 6\n    - id: type=int64, nullable\n    - name: type=utf8, nullable\n    - score: type=float64, nullable\n    - tags: type=list<item: utf8, nullable>, nullable\n    - pos: type=struct<x: float64 nullable, y: int64 nullable>, nullable\n    - ok: type=bool, nullable" {
		t.Fatalf("schema of the read:\n%s", got)
	}
	if n, err := data.ReadJSON(filepath.Join(dir, "b.jsonl")).Map(square).Count(ctx); err != nil || n != 1 {
		t.Fatalf("one file: %d, %v", n, err)
	}

	bad := filepath.Join(t.TempDir(), "bad.json")
	if err := os.WriteFile(bad, []byte("{\"v\": 1}\n{\"v\": \"one\"}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var fe *data.FileError
	if _, err := data.ReadJSON(bad).Count(ctx); !errors.As(err, &fe) || fe.Path != bad || !strings.Contains(err.Error(), `key "v" holds both int and string values`) {
		t.Fatalf("conflicting types: %v", err)
	}
	if _, err := data.ReadJSON(filepath.Join(dir, "missing")).Count(ctx); !errors.Is(err, atoll.ErrInvalidArgument) {
		t.Fatalf("missing path: %v", err)
	}
}

// TestReadJSONTypesAcrossFiles: a key that is an integer in one file and
// has a fraction in another is a float64 column in every block, so a sort
// across the files works (each file's task inferred its own schema
// before: "blocks of different schemas"). A key first seen past the
// first MiB of a file, or a value there its column does not hold, fails
// the read naming the key.
func TestReadJSONTypesAcrossFiles(t *testing.T) {
	ctx := start(t)
	dir := writeFiles(t, map[string]string{
		"a.jsonl": `{"id": 1, "v": 10}` + "\n" + `{"id": 2, "v": 20}` + "\n",
		"b.jsonl": `{"id": 3, "v": 2.5}` + "\n" + `{"id": 4, "v": null}` + "\n",
	})
	rows, err := data.ReadJSON(dir).Sort("v").TakeAll(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 4 || rows[0]["v"] != 2.5 || rows[1]["v"] != 10.0 || rows[3]["v"] != nil {
		t.Fatalf("sorted rows %v", rows)
	}
	head, _ := pastTheHead("", `{"id": 1, "v": 10}`+"\n")
	for name, tail := range map[string]string{"new key": `{"id": 2, "w": 1}`, "wider value": `{"id": 2, "v": 2.5}`} {
		dir := writeFiles(t, map[string]string{"a.jsonl": head + tail + "\n"})
		_, err := data.ReadJSON(dir).Count(ctx)
		var fe *data.FileError
		if !errors.As(err, &fe) || !strings.Contains(err.Error(), "first MiB") {
			t.Fatalf("%s: %v, want a FileError about the first MiB", name, err)
		}
		t.Logf("%s: %v", name, err)
	}
}

// TestReadJSONWith: a key given float64 whose first MiB holds whole
// numbers and whose last line a fraction, and a key first seen past the
// first MiB, given its type, read; both failed inferred. A given type
// that does not hold a value in the first MiB, or that a JSON column
// cannot have, fails before any task runs.
func TestReadJSONWith(t *testing.T) {
	ctx := start(t)
	head, _ := pastTheHead("", `{"id": 1, "v": 10}`+"\n")
	dir := writeFiles(t, map[string]string{"a.jsonl": head + `{"id": 2, "v": 2.5, "w": ["a"]}` + "\n"})
	opts := data.JSONOptions{Types: map[string]arrow.DataType{"v": arrow.PrimitiveTypes.Float64, "w": arrow.ListOf(arrow.BinaryTypes.String)}}
	ds := data.ReadJSONWith(opts, dir)
	schema, err := ds.Schema(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if schema.NumFields() != 3 || schema.Field(2).Name != "w" {
		t.Fatalf("schema %s", schema)
	}
	rows, err := ds.Sort("v").Limit(2).TakeAll(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 || rows[0]["v"] != 2.5 || rows[0]["id"] != int64(2) || rows[1]["v"] != 10.0 || rows[1]["w"] != nil {
		t.Fatalf("rows %v", rows)
	}
	if w, ok := rows[0]["w"].([]any); !ok || len(w) != 1 || w[0] != "a" {
		t.Fatalf("w is %#v", rows[0]["w"])
	}

	// Text read as times: RFC 3339 timestamps (an offset taken to UTC)
	// and dates.
	timed := writeFiles(t, map[string]string{"a.jsonl": `{"at": "2026-01-02T10:00:00Z", "day": "2026-01-02"}` + "\n" +
		`{"at": "2026-01-02T11:30:00+01:00", "day": null}` + "\n"})
	type when struct {
		At  time.Time  `arrow:"at"`
		Day *time.Time `arrow:"day"`
	}
	ws, err := data.TakeAllAs[when](ctx, data.ReadJSONWith(data.JSONOptions{Types: map[string]arrow.DataType{
		"at": &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, "day": arrow.FixedWidthTypes.Date32}}, timed))
	if err != nil || len(ws) != 2 || !ws[0].At.Equal(time.Date(2026, 1, 2, 10, 0, 0, 0, time.UTC)) ||
		!ws[1].At.Equal(time.Date(2026, 1, 2, 10, 30, 0, 0, time.UTC)) || ws[0].Day == nil || ws[0].Day.Day() != 2 || ws[1].Day != nil {
		t.Fatalf("times read as %+v, %v", ws, err)
	}

	small := writeFiles(t, map[string]string{"a.jsonl": `{"id": 1, "v": 2.5}` + "\n"})
	for name, c := range map[string]struct {
		types map[string]arrow.DataType
		want  string
	}{
		"narrower": {map[string]arrow.DataType{"v": arrow.PrimitiveTypes.Int64}, `key "v" holds float values`},
		"int32":    {map[string]arrow.DataType{"v": arrow.PrimitiveTypes.Int32}, `column "v" of type int32 is not supported`},
	} {
		ds := data.ReadJSONWith(data.JSONOptions{Types: c.types}, small)
		_, err := ds.Count(ctx)
		if !errors.Is(err, atoll.ErrInvalidArgument) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an invalid argument saying %q", name, err, c.want)
		}
		if st := ds.Stats(); strings.Contains(st, "executed") {
			t.Errorf("%s: tasks ran:\n%s", name, st)
		}
	}
}
