package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/atoll-runtime/atoll/internal/benchfmt"
	"github.com/atoll-runtime/atoll/internal/testmain"
)

func TestMain(m *testing.M) { testmain.Run(m) }

// TestExperimentReportsVerifiedFiguresAsJSON runs the experiment small: a
// two-node cluster per mode, the workload verified, three records, and
// each run's samples and plot written.
func TestExperimentReportsVerifiedFiguresAsJSON(t *testing.T) {
	dir := t.TempDir()
	var out bytes.Buffer
	opts := options{nodes: 2, cpus: 1, store: 64 << 20, phases: 3, size: 2 << 20, readers: 1, passes: 1, rounds: 1,
		sample: 50 * time.Millisecond, out: dir, json: true}
	if err := run(context.Background(), opts, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	got, err := benchfmt.ByMetric(&out)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []string{"peak_cluster_store_bytes", "peak_node_store_bytes", "wall_s"} {
		rec := got[m]
		if rec == nil {
			t.Fatalf("no %s record in:\n%s", m, out.String())
		}
		if v, _ := rec["value"].(float64); v <= 0 {
			t.Errorf("%s: value %v", m, rec["value"])
		}
		if b, _ := rec["baseline_value"].(float64); b <= 0 {
			t.Errorf("%s: baseline %v", m, rec["baseline_value"])
		}
	}
	// The sampler saw at least one block in the cluster's stores.
	if b := got["peak_cluster_store_bytes"]["baseline_value"].(float64); b < float64(opts.size) {
		t.Errorf("peak with the AMM off %v bytes: less than one block of %d bytes", b, int64(opts.size))
	}
	for _, f := range []string{"amm-off-1.csv", "amm-off-1.svg", "amm-on-1.csv", "amm-on-1.svg"} {
		if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
}
