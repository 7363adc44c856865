package main

import (
	"bytes"
	"context"
	"io"
	"testing"
	"time"

	"github.com/atoll-runtime/atoll/internal/benchfmt"
	"github.com/atoll-runtime/atoll/internal/testmain"
)

func TestMain(m *testing.M) { testmain.Run(m) }

// TestFloodReportsFiguresAsJSON floods a few thousand tasks, then as many
// calls of one actor: every figure
// is there and positive, the results were checked, and the driver let go
// of every task and object (run waits for that before it reports).
func TestFloodReportsFiguresAsJSON(t *testing.T) {
	for _, calls := range []bool{false, true} {
		checkFlood(t, calls)
	}
}

func checkFlood(t *testing.T, calls bool) {
	var out bytes.Buffer
	if err := run(context.Background(), options{tasks: 3000, calls: calls, cpus: 2, store: 64 << 20, json: true, timeout: 5 * time.Minute}, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	metrics, err := benchfmt.ByMetric(&out)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []string{"submit_per_s", "wall_s", "driver_peak_rss_bytes", "driver_peak_bytes_per_task", "peak_pss_bytes",
		"driver_rss_after_drop_bytes", "driver_heap_after_drop_bytes"} {
		rec, ok := metrics[m]
		if !ok {
			t.Fatalf("no %s line in %q", m, out.String())
		}
		if rec["value"].(float64) <= 0 || rec["baseline_value"].(float64) <= 0 || rec["bench"] != "flood" {
			t.Errorf("%s: %v", m, rec)
		}
	}
	if metrics["wall_s"]["verified"] != true {
		t.Errorf("wall_s must be verified: %v", metrics["wall_s"])
	}
	if cfg := metrics["wall_s"]["config"].(map[string]any); cfg["tasks"].(float64) != 3000 || cfg["actor_calls"] != calls || cfg["worker_mode"] != "process" {
		t.Errorf("config: %v", cfg)
	}
}

// TestFloodRefusesBadOptions: no tasks or no CPUs is an error.
func TestFloodRefusesBadOptions(t *testing.T) {
	for _, o := range []options{{tasks: 0, cpus: 2}, {tasks: 10, cpus: 0}} {
		if err := run(context.Background(), o, io.Discard, io.Discard); err == nil {
			t.Errorf("run(%+v) succeeded", o)
		}
	}
}
