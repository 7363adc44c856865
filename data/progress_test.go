package data_test

import (
	"strings"
	"testing"
	"time"

	"github.com/atoll-runtime/atoll/internal/testutil"

	"github.com/atoll-runtime/atoll"
	"github.com/atoll-runtime/atoll/data"
)

// TestProgress: progress enabled into a buffer: a line per stage, drawn
// at most every interval, the last one the final state.
func TestProgress(t *testing.T) {
	ctx := start(t)
	var out testutil.LogBuffer
	cfg := withParallelism(8)
	cfg.Progress = &out
	cfg.ProgressInterval = 20 * time.Millisecond
	// two stages: the filter needs other resources
	ds := data.Range(800).WithConfig(cfg).MapBatches(double).FilterFunc(even, data.WithResources(atoll.Resources{CPU: 0.5}))
	began := time.Now()
	if n, err := ds.Count(ctx); err != nil || n != 400 {
		t.Fatalf("Count = %d, %v", n, err)
	}
	elapsed := time.Since(began)
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines)%2 != 0 {
		t.Fatalf("progress is not drawn two lines (stages) at a time:\n%s", out.String())
	}
	final := strings.Join(lines[len(lines)-2:], "\n")
	want := "Stage 1 read->map_batches: 8/8 blocks done, 0 in flight, 800 rows\n" +
		"Stage 2 filter: 8/8 blocks done, 0 in flight, 400 rows"
	if final != want {
		t.Fatalf("final progress:\n%s\nwant:\n%s", final, want)
	}
	if draws := len(lines) / 2; draws > int(elapsed/cfg.ProgressInterval)+1 {
		t.Fatalf("%d draws in %s, more than one per %s", draws, elapsed, cfg.ProgressInterval)
	}
	if strings.Contains(out.String(), "\x1b[") {
		t.Fatalf("terminal escapes written to a buffer:\n%q", out.String())
	}
}
