package main

import (
	"bytes"
	"context"
	"io"
	"testing"

	"github.com/atoll-runtime/atoll/internal/benchfmt"
)

// TestRunJSON runs the benchmark small, on in-process workers, and checks
// its JSON records.
func TestRunJSON(t *testing.T) {
	var out bytes.Buffer
	opts := options{leaves: 50, partitions: 3, rows: 100, workers: 2, mode: "inprocess", repeat: 1, json: true}
	if err := run(context.Background(), opts, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	got := map[string]map[string]any{}
	recs, err := benchfmt.ParseLines(&out)
	if err != nil {
		t.Fatal(err)
	}
	for _, rec := range recs {
		got[rec["bench"].(string)+"/"+rec["metric"].(string)] = rec
	}
	for _, m := range []string{"graph_tree/wall_s", "graph_tree/per_task_us", "graph_tree/tasks_per_s", "graph_shuffle/wall_s", "graph_shuffle/tasks"} {
		if got[m] == nil || got[m]["ratio"] == nil {
			t.Errorf("no record %s with a ratio: %v", m, got)
		}
	}
	if r := got["graph_shuffle/tasks"]; r["value"] != 6.0 || r["baseline_value"] != 15.0 {
		t.Errorf("shuffle tasks %v vs %v, want 6 vs 15", r["value"], r["baseline_value"])
	}
}
