package data_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/atoll-runtime/atoll"
	"github.com/atoll-runtime/atoll/data"
)

// TestReadJSON: newline-delimited JSON files of a directory, a task per
// file, the schema inferred per file (ints widened to floats, nulls and
// missing keys, nested lists and objects), then Map over the rows.
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
	if fmt.Sprintf("%s", r0["tags"]) != `["x","y"]` || fmt.Sprint(r0["pos"]) != "map[x:1.5 y:2]" || fmt.Sprint(r1["pos"]) != "map[x:3 y:<nil>]" {
		t.Fatalf("nested values: %v %v %v", r0["tags"], r0["pos"], r1["pos"])
	}
	if r2["id"] != int64(3) || r2["ok"] != true || r2["name"] != "c" {
		t.Fatalf("row of b.jsonl: %v", r2)
	}
	s, err := ds.Schema(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := s.String(); got != "schema:\n  fields: 5\n    - id: type=int64, nullable\n    - name: type=utf8, nullable\n    - score: type=float64, nullable\n    - tags: type=list<item: utf8, nullable>, nullable\n    - pos: type=struct<x: float64 nullable, y: int64 nullable>, nullable" {
		t.Fatalf("schema of a.json:\n%s", got)
	}
	if n, err := data.ReadJSON(filepath.Join(dir, "b.jsonl")).Map(square).Count(ctx); err != nil || n != 1 {
		t.Fatalf("one file: %d, %v", n, err)
	}

	bad := filepath.Join(t.TempDir(), "bad.json")
	if err := os.WriteFile(bad, []byte("{\"v\": 1}\n{\"v\": \"one\"}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var te *atoll.TaskError
	if _, err := data.ReadJSON(bad).Count(ctx); !errors.As(err, &te) || !strings.Contains(err.Error(), `key "v" holds both int and string values`) {
		t.Fatalf("conflicting types: %v", err)
	}
	if _, err := data.ReadJSON(filepath.Join(dir, "missing")).Count(ctx); !errors.Is(err, atoll.ErrInvalidArgument) {
		t.Fatalf("missing path: %v", err)
	}
}
