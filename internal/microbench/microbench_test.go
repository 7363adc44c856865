package microbench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/atoll-runtime/atoll"
	"github.com/atoll-runtime/atoll/internal/benchfmt"
)

func TestMain(m *testing.M) {
	if atoll.IsWorker() {
		// The raylet re-executed this test binary as a worker process.
		_ = atoll.Init(context.Background())
	}
	os.Exit(m.Run())
}

// tinyShapes run every metric in well under a second, even under -race,
// with the large puts still above the inline threshold (100 KiB) so that
// they go through the shared-memory store.
var tinyShapes = shapes{
	batch: 20, multiTaskClients: 2, multiTasksPerClient: 10, concurrency: 4,
	oneNCalls: 10, nnClients: 2, nnCalls: 10, nnArgCalls: 10,
	putClients: 3, putsPerClient: 5, largeElems: 32 << 10,
	largeClients: 3, largePuts: 2, largeClientElems: 16 << 10, containedRefs: 50,
	placementGroups: 5,
}

func tinyOptions(mode atoll.WorkerMode) Options {
	return Options{Mode: mode, Repeat: 1, Duration: 0, JSON: true, shapes: &tinyShapes}
}

func testContext(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// parseRecords reads JSON lines and checks each is a well-formed record of
// this benchmark with a positive rate, a positive baseline and its ratio.
func parseRecords(t *testing.T, out string, mode atoll.WorkerMode) []benchfmt.Record {
	t.Helper()
	var recs []benchfmt.Record
	for line := range strings.Lines(out) {
		var raw map[string]any
		if err := json.Unmarshal([]byte(line), &raw); err != nil {
			t.Fatalf("not a JSON line: %q: %v", line, err)
		}
		for _, k := range []string{"bench", "metric", "value", "unit", "baseline", "baseline_value", "ratio", "config"} {
			if _, ok := raw[k]; !ok {
				t.Errorf("%s: no %q in %s", raw["metric"], k, line)
			}
		}
		var r benchfmt.Record
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatal(err)
		}
		if r.Bench != bench || r.Value <= 0 || r.BaselineValue <= 0 || r.Ratio <= 0 || r.Baseline == "" {
			t.Errorf("%s: bench %q value %v baseline %q %v ratio %v", r.Metric, r.Bench, r.Value, r.Baseline, r.BaselineValue, r.Ratio)
		}
		if r.Unit != "1/s" && r.Unit != "GB/s" {
			t.Errorf("%s: unit %q", r.Metric, r.Unit)
		}
		for _, k := range []string{"min", "max", "baseline_min", "baseline_max", "repetitions", "worker_mode", "atoll_version", "cpus", "units_per_op"} {
			if _, ok := r.Config[k]; !ok {
				t.Errorf("%s: config has no %q: %v", r.Metric, k, r.Config)
			}
		}
		if r.Config["worker_mode"] != mode.String() {
			t.Errorf("%s: worker_mode %v, want %s", r.Metric, r.Config["worker_mode"], mode)
		}
		if lo, hi := r.Config["min"].(float64), r.Config["max"].(float64); lo > r.Value || r.Value > hi {
			t.Errorf("%s: median %v outside [%v, %v]", r.Metric, r.Value, lo, hi)
		}
		recs = append(recs, r)
	}
	return recs
}

// TestEveryMetric runs a tiny configuration of every metric in both
// worker modes.
func TestEveryMetric(t *testing.T) {
	for _, mode := range []atoll.WorkerMode{atoll.InProcessWorkers, atoll.ProcessWorkers} {
		t.Run(mode.String(), func(t *testing.T) {
			var out, progress bytes.Buffer
			if err := Run(testContext(t), tinyOptions(mode), &out, &progress); err != nil {
				t.Fatalf("Run: %v\nprogress:\n%s", err, progress.String())
			}
			recs := parseRecords(t, out.String(), mode)
			var got []string
			for _, r := range recs {
				got = append(got, r.Metric)
			}
			if !slices.Equal(got, Names()) {
				t.Fatalf("metrics %v\nwant %v", got, Names())
			}
		})
	}
}

func TestFilterAndTable(t *testing.T) {
	opts := tinyOptions(atoll.InProcessWorkers)
	opts.JSON = false
	opts.Repeat = 3
	opts.Filter = regexp.MustCompile(`^single_client_(get|put)_calls$`)
	var out, progress bytes.Buffer
	if err := Run(testContext(t), opts, &out, &progress); err != nil {
		t.Fatalf("Run: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 4 || !strings.HasPrefix(lines[1], "metric ") ||
		!strings.HasPrefix(lines[2], "single_client_get_calls ") || !strings.HasPrefix(lines[3], "single_client_put_calls ") {
		t.Fatalf("table:\n%s", out.String())
	}
	if !strings.Contains(progress.String(), "repetition 3/3") {
		t.Fatalf("progress:\n%s", progress.String())
	}
}

func TestInvalidOptions(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*Options)
		want string
	}{
		{"repeat", func(o *Options) { o.Repeat = 0 }, "-repeat 0: want at least 1"},
		{"duration", func(o *Options) { o.Duration = -time.Second }, "-duration -1s: must not be negative"},
		{"filter", func(o *Options) { o.Filter = regexp.MustCompile("^nothing$") }, `-filter "^nothing$": no metric matches`},
		{"mode", func(o *Options) { o.Mode = 7 }, "unknown worker mode 7"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := tinyOptions(atoll.InProcessWorkers)
			tc.edit(&opts)
			var out bytes.Buffer
			err := Run(testContext(t), opts, &out, &out)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
			if out.Len() != 0 {
				t.Fatalf("output before failing: %q", out.String())
			}
		})
	}
	opts := tinyOptions(atoll.InProcessWorkers)
	opts.Filter = regexp.MustCompile("^nothing$")
	if err := Run(testContext(t), opts, &bytes.Buffer{}, &bytes.Buffer{}); !errors.Is(err, ErrNoMetric) {
		t.Fatalf("error %v, want ErrNoMetric", err)
	}
}

// TestRunFailsWhileAtollRuns: a second cluster in the same process is
// refused, and the error says so.
func TestRunFailsWhileAtollRuns(t *testing.T) {
	ctx := testContext(t)
	if err := atoll.Init(ctx, atoll.WithWorkerMode(atoll.InProcessWorkers)); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = atoll.Shutdown(ctx) }()
	err := Run(ctx, tinyOptions(atoll.InProcessWorkers), &bytes.Buffer{}, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "start atoll") {
		t.Fatalf("error %v", err)
	}
}
