package main

import (
	"bytes"
	"io"
	"os"
	"testing"

	"github.com/atoll-runtime/atoll/internal/benchfmt"
	"github.com/atoll-runtime/atoll/internal/shmfloor"
)

func TestMain(m *testing.M) {
	if shmfloor.IsChild() { // a summing worker started again by Procs
		shmfloor.RunChild()
	}
	os.Exit(m.Run())
}

// TestShmfloorReportsVerifiedFiguresAsJSON runs the three ways on a small
// array: every record is present, positive and verified (every worker's
// sum matched), with its baseline.
func TestShmfloorReportsVerifiedFiguresAsJSON(t *testing.T) {
	var out bytes.Buffer
	if err := run(options{size: 8 << 20, sums: 2, repeat: 1, json: true, populate: true}, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	metrics, err := benchfmt.ByMetric(&out)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []string{"memfd_threads_sums_s", "memfd_procs_sums_s", "memfd_procs_vs_threads_sums_s", "memfd_procs_first_touch_s"} {
		rec, ok := metrics[m]
		if !ok {
			t.Fatalf("no %s line in %q", m, out.String())
		}
		if rec["value"].(float64) <= 0 || rec["ratio"].(float64) <= 0 || rec["bench"] != "shmfloor" {
			t.Errorf("%s: %v", m, rec)
		}
	}
	if metrics["memfd_procs_sums_s"]["verified"] != true {
		t.Errorf("memfd_procs_sums_s must be verified: %v", metrics["memfd_procs_sums_s"])
	}
}

// TestShmfloorRefusesBadOptions: a zero size or count is an error, not a
// division by zero.
func TestShmfloorRefusesBadOptions(t *testing.T) {
	for _, o := range []options{{size: 0, sums: 1, repeat: 1}, {size: 1 << 20, sums: 0, repeat: 1}, {size: 1 << 20, sums: 1, repeat: 0}} {
		if err := run(o, io.Discard, io.Discard); err == nil {
			t.Errorf("run(%+v) succeeded", o)
		}
	}
}
