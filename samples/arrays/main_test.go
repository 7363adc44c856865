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

// TestOutOfCoreArraysAreVerified runs the sample's computations on an x
// four times larger than the object store, in worker processes, and
// checks the report: both results verified against gonum, x spilled.
func TestOutOfCoreArraysAreVerified(t *testing.T) {
	var out bytes.Buffer
	// x is 1024² float64s = 8 MiB in 256x256 chunks of 512 KiB (stored,
	// not inlined), under a 2 MiB store; A is 384x384 in uneven chunks.
	opts := options{size: 1024, chunk: 256, matmulSize: 384, matmulChunk: 256, seed: 3, store: 2 << 20, workers: 2, mode: "process", json: true}
	if err := run(context.Background(), opts, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	metrics, err := benchfmt.ByMetric(&out)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []string{"mean_x_plus_xt_wall_s", "matmul_aat_sum_wall_s"} {
		if metrics[m]["verified"] != true {
			t.Fatalf("%s not verified: %v", m, metrics[m])
		}
		if metrics[m]["baseline_value"].(float64) <= 0 || metrics[m]["ratio"].(float64) <= 0 {
			t.Fatalf("%s has no baseline: %v", m, metrics[m])
		}
	}
	if metrics["x_bytes"]["ratio"].(float64) != 4 {
		t.Fatalf("x is %v times the store, want 4", metrics["x_bytes"]["ratio"])
	}
	if metrics["spilled_bytes"]["value"].(float64) <= 0 {
		t.Fatalf("x of 8 MiB under a 2 MiB store spilled nothing: %v", metrics["spilled_bytes"])
	}
	if metrics["peak_pss_bytes"]["value"].(float64) <= 0 {
		t.Fatal("no peak PSS measured")
	}
}

func TestCompareRejectsWrongResults(t *testing.T) {
	if compareMeans([]float64{1, 2}, []float64{1, 2}) != nil || compareTotal(10, 10) != nil {
		t.Fatal("equal results rejected")
	}
	if compareMeans([]float64{1, 2.001}, []float64{1, 2}) == nil || compareMeans([]float64{1}, []float64{1, 2}) == nil {
		t.Fatal("wrong means accepted")
	}
	if compareTotal(10.001, 10) == nil {
		t.Fatal("wrong total accepted")
	}
}
