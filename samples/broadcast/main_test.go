package main

import (
	"bytes"
	"context"
	"io"
	"testing"

	"github.com/atoll-runtime/atoll/internal/benchfmt"
	"github.com/atoll-runtime/atoll/internal/objectstore"
	"github.com/atoll-runtime/atoll/internal/shmfloor"
	"github.com/atoll-runtime/atoll/internal/testmain"
)

func TestMain(m *testing.M) {
	if shmfloor.IsChild() { // a worker of the memfd floor
		shmfloor.RunChild()
	}
	testmain.Run(m)
}

func TestBroadcastReportsVerifiedFiguresAsJSON(t *testing.T) {
	for _, mode := range []string{"inprocess", "process"} {
		t.Run(mode, func(t *testing.T) { checkBroadcast(t, mode) })
	}
}

func checkBroadcast(t *testing.T, mode string) {
	var out bytes.Buffer
	opts := options{size: 8 << 20, tasks: 6, workers: 2, repeat: 1, mode: mode, huge: "auto", json: true}
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
	// Process mode is also measured against its floor: worker processes
	// summing a memfd with no atoll.
	for _, m := range []string{"wall_s_memfd_floor", "tasks_s_memfd_floor"} {
		rec, ok := metrics[m]
		if ok != (mode == "process") {
			t.Fatalf("%s mode: %s present %v", mode, m, ok)
		}
		if ok && (rec["ratio"].(float64) <= 0 || rec["config"].(map[string]any)["floor_sums_per_worker"].(float64) != 3) {
			t.Errorf("%s: %v", m, rec)
		}
	}
	if metrics["wall_s"]["verified"] != true || metrics["wall_s"]["ratio"].(float64) <= 0 {
		t.Errorf("wall_s must be verified and carry a ratio: %v", metrics["wall_s"])
	}
	cfg := metrics["wall_s"]["config"].(map[string]any)
	if cfg["size_bytes"].(float64) != 8<<20 || cfg["worker_mode"] != mode || cfg["store_huge_pages"] != "auto" {
		t.Errorf("config: %v", cfg)
	}
	// Where the system gives shared memory huge pages, the object is on
	// them (the store backs its range through a mapping that asks).
	share, _ := cfg["store_huge_page_share"].(float64)
	if allowed, policy, _ := objectstore.ShmemHugePages(); allowed && share < 0.5 {
		t.Errorf("shmem_enabled is %q, and %.0f%% of the object is on huge pages", policy, 100*share)
	} else if share < 0 || share > 1 {
		t.Errorf("store_huge_page_share %v", share)
	}
}
