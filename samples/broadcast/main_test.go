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

func TestBroadcastReportsVerifiedFiguresAsJSON(t *testing.T) {
	for _, mode := range []string{"inprocess", "process"} {
		t.Run(mode, func(t *testing.T) { checkBroadcast(t, mode) })
	}
}

func checkBroadcast(t *testing.T, mode string) {
	var out bytes.Buffer
	opts := options{size: 8 << 20, tasks: 6, workers: 2, repeat: 1, mode: mode, json: true}
	if err := run(context.Background(), opts, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	metrics, err := benchfmt.ByMetric(&out)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []string{"wall_s", "put_s", "tasks_s", "peak_pss_bytes", "wall_s_hugepage_baseline", "tasks_s_hugepage_baseline"} {
		rec, ok := metrics[m]
		if !ok {
			t.Fatalf("no %s line in %q", m, out.String())
		}
		if rec["value"].(float64) <= 0 || rec["bench"] != "broadcast" {
			t.Errorf("%s: %v", m, rec)
		}
	}
	if metrics["wall_s"]["verified"] != true || metrics["wall_s"]["ratio"].(float64) <= 0 {
		t.Errorf("wall_s must be verified and carry a ratio: %v", metrics["wall_s"])
	}
	cfg := metrics["wall_s"]["config"].(map[string]any)
	if cfg["size_bytes"].(float64) != 8<<20 || cfg["worker_mode"] != mode {
		t.Errorf("config: %v", cfg)
	}
}
