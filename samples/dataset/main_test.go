package main

import (
	"bytes"
	"context"
	"io"
	"testing"

	"github.com/atoll-runtime/atoll/internal/benchfmt"
	"github.com/atoll-runtime/atoll/internal/testmain"
)

func TestMain(m *testing.M) { testmain.Run(m) }

// TestPipelinesAreVerified runs the pipelines on 24 MiB of Parquet under
// an 8 MiB store, in worker processes, and checks the report: A's
// per-key totals (streaming, without pushdown and materialized) and J's
// per-category totals (a shuffled join: the dimension is over the
// budget) and G's per-group totals, cut while mapping and after, equal the
// baselines', B's output is sorted and holds every
// row, and the sort spilled.
func TestPipelinesAreVerified(t *testing.T) {
	var out bytes.Buffer
	opts := options{genSize: 24 << 20, store: 8 << 20, baselineMax: 24 << 20, files: 3, rowsPerGroup: 8192, seed: 7,
		workers: 2, mode: "process", dir: t.TempDir(), materialize: true, pipelines: "a,j,b,g", turns: 1, json: true}
	if err := run(context.Background(), opts, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	metrics, err := benchfmt.ByMetric(&out)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []string{"a_wall_s", "a_wall_s_vs_parallel", "a_no_pushdown_wall_s", "a_materialized_wall_s", "j_wall_s", "b_wall_s", "g_wall_s", "g_no_overlap_wall_s"} {
		if metrics[m]["verified"] != true {
			t.Fatalf("%s not verified: %v", m, metrics[m])
		}
	}
	if metrics["b_spilled_bytes"]["value"].(float64) <= 0 {
		t.Fatalf("sorting 24 MiB under an 8 MiB store spilled nothing: %v", metrics["b_spilled_bytes"])
	}
}

func TestDigestDetectsLossAndChange(t *testing.T) {
	a := rowHash(1, 2, 3, "x")
	if a == rowHash(1, 2, 3, "y") || a == rowHash(1, 2, 4, "x") || a == rowHash(2, 2, 3, "x") || a == rowHash(1, 3, 3, "x") {
		t.Fatal("the row hash missed a changed field")
	}
}
