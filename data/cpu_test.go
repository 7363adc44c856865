package data_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/atoll-runtime/atoll/internal/testutil"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/atoll-runtime/atoll"
	"github.com/atoll-runtime/atoll/atolltest"
	"github.com/atoll-runtime/atoll/data"
	"github.com/atoll-runtime/atoll/data/expr"
)

var (
	// holdUntil holds its resources until the file at path exists.
	holdUntil = atoll.NewFunc1("test.holdUntil", func(ctx context.Context, path string) (int, error) {
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for !exists(path) {
			select {
			case <-ctx.Done():
				return 0, ctx.Err()
			case <-tick.C:
			}
		}
		return 0, nil
	})
	// span records when the task computing the batch ran (a marker file
	// named by its start and end).
	span = data.RegisterColumnFunc("test.span", func(_ context.Context, rec arrow.RecordBatch) (arrow.Array, error) {
		start := time.Now().UnixNano()
		b := array.NewInt64Builder(memory.DefaultAllocator)
		defer b.Release()
		for range rec.NumRows() {
			b.Append(start)
		}
		name := fmt.Sprintf("span-%d-%d", start, time.Now().UnixNano())
		if err := os.WriteFile(filepath.Join(os.Getenv(markEnv), name), nil, 0o644); err != nil {
			return nil, err
		}
		return b.NewArray(), nil
	})
)

// TestCPUWaitReported: while a task of other work holds both CPUs, a
// dataset's stage waits; it is reported once on the logger and counted
// in its stats, and finishes when the CPUs are released.
func TestCPUWaitReported(t *testing.T) {
	ctx := start(t)
	release := filepath.Join(t.TempDir(), "release")
	hold := holdUntil.Remote(ctx, atoll.Value(release), atoll.WithTaskResources(atoll.Resources{CPU: 2}))
	testutil.Eventually(t, "the holder to take both CPUs", func() bool {
		s, err := atolltest.Status(ctx)
		return err == nil && s.Available["CPU"] == 0 && s.Running == 1
	})
	var logs testutil.LogBuffer
	cfg := data.DefaultConfig()
	cfg.CPUWaitWarning = 200 * time.Millisecond
	cfg.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	ds := data.Range(100).WithConfig(cfg).MapBatches(double)
	type result struct {
		n   int64
		err error
	}
	done := make(chan result, 1)
	go func() {
		n, err := ds.Count(ctx)
		done <- result{n, err}
	}()
	const warning = "data: stage read->map_batches has waited"
	testutil.Eventually(t, "the warning", func() bool { return strings.Contains(logs.String(), warning) })
	if err := os.WriteFile(release, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	res := <-done
	if res.err != nil || res.n != 100 {
		t.Fatalf("Count = %d, %v", res.n, res.err)
	}
	if _, err := atoll.Get(ctx, hold); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(logs.String(), warning); n != 1 {
		t.Fatalf("%d warnings, want one:\n%s", n, logs.String())
	}
	if !strings.Contains(logs.String(), "level=WARN") || !strings.Contains(logs.String(), "stage=read->map_batches") {
		t.Fatalf("warning:\n%s", logs.String())
	}
	if st := ds.Stats(); !strings.Contains(st, "* Waited for a CPU held by other work: 1 times, ") {
		t.Fatalf("stats:\n%s", st)
	}

	// with the CPUs free nothing is reported
	logs.Reset()
	if _, err := ds.Count(ctx); err != nil {
		t.Fatal(err)
	}
	if logs.String() != "" || strings.Contains(ds.Stats(), "Waited") {
		t.Fatalf("a run with free CPUs reported a wait:\n%s\n%s", logs.String(), ds.Stats())
	}
}

// TestCPUShare: with half of the node's two CPUs, a stage's tasks run
// one at a time (their spans do not overlap); a share out of [0, 1] is
// refused.
func TestCPUShare(t *testing.T) {
	dir := markDir(t)
	ctx := start(t)
	cfg := withParallelism(8)
	cfg.CPUShare = 0.5
	if n, err := data.Range(80).WithConfig(cfg).AddColumn("start", span).Count(ctx); err != nil || n != 80 {
		t.Fatalf("Count = %d, %v", n, err)
	}
	ms, _ := filepath.Glob(filepath.Join(dir, "span-*"))
	type interval struct{ start, end int64 }
	var spans []interval
	for _, m := range ms {
		var s interval
		if _, err := fmt.Sscanf(filepath.Base(m), "span-%d-%d", &s.start, &s.end); err != nil {
			t.Fatal(err)
		}
		spans = append(spans, s)
	}
	if len(spans) != 8 {
		t.Fatalf("%d task spans, want 8", len(spans))
	}
	slices.SortFunc(spans, func(a, b interval) int { return int(a.start - b.start) })
	for i := 1; i < len(spans); i++ {
		if spans[i].start < spans[i-1].end {
			t.Fatalf("tasks %d and %d overlap: %v", i-1, i, spans)
		}
	}
	bad := data.DefaultConfig()
	bad.CPUShare = 1.5
	if _, err := data.Range(3).WithConfig(bad).Count(ctx); !errors.Is(err, atoll.ErrInvalidArgument) {
		t.Fatalf("CPUShare 1.5: %v", err)
	}
}

// meet waits, in the task computing the batch, until as many tasks as
// the file named "want" in the marker directory says have started, or a
// few seconds pass; it returns whether they all met.
var meet = data.RegisterColumnFunc("test.meet", func(ctx context.Context, rec arrow.RecordBatch) (arrow.Array, error) {
	dir := os.Getenv(markEnv)
	first := rec.Column(0).(*array.Int64).Value(0)
	if err := os.WriteFile(filepath.Join(dir, fmt.Sprint("started-", first)), nil, 0o644); err != nil {
		return nil, err
	}
	want, err := os.ReadFile(filepath.Join(dir, "want"))
	if err != nil {
		return nil, err
	}
	met := false
	for deadline := time.Now().Add(3 * time.Second); !met && time.Now().Before(deadline); {
		ms, _ := filepath.Glob(filepath.Join(dir, "started-*"))
		if met = fmt.Sprint(len(ms)) == string(want); !met {
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(2 * time.Millisecond):
			}
		}
	}
	b := array.NewBooleanBuilder(memory.DefaultAllocator)
	defer b.Release()
	for range rec.NumRows() {
		b.Append(met)
	}
	return b.NewArray(), nil
})

// TestFirstWaveRunsTogether: a stage's first tasks, before any has
// finished, run one per free CPU (two here), not one at a time: each
// waits for the other to start. With half the CPUs (CPUShare 0.5) the
// first wave is one task: it waits alone, and only the second task,
// started after it, finds both started.
func TestFirstWaveRunsTogether(t *testing.T) {
	dir := markDir(t)
	ctx := start(t)
	for _, tc := range []struct {
		share float64
		met   int64 // rows whose task met the other
	}{{0, 20}, {0.5, 10}} {
		clearDir(t, dir)
		if err := os.WriteFile(filepath.Join(dir, "want"), []byte("2"), 0o644); err != nil {
			t.Fatal(err)
		}
		cfg := withParallelism(2)
		cfg.CPUShare = tc.share
		n, err := data.Range(20).WithConfig(cfg).AddColumn("met", meet).Filter(expr.Col("met")).Count(ctx)
		if err != nil || n != tc.met {
			t.Fatalf("CPU share %v: %d rows of 20 computed by tasks that met, %v; want %d", tc.share, n, err, tc.met)
		}
	}
}
