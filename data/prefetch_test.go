package data_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/atoll-runtime/atoll/internal/testutil"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/atoll-runtime/atoll"
	"github.com/atoll-runtime/atoll/atolltest"
	"github.com/atoll-runtime/atoll/data"
)

// markEnv names the directory where test functions running in worker
// processes leave marker files (the workers inherit the driver's
// environment).
const markEnv = "ATOLL_DATA_TEST_MARKS"

// markDir makes a fresh marker directory for this test; call it before
// start (worker processes may start with atoll).
func markDir(t *testing.T) string {
	dir := t.TempDir()
	t.Setenv(markEnv, dir)
	return dir
}

// touch leaves a marker file named by the batch's first id: the task
// that computes that block ran.
var touch = data.RegisterColumnFunc("test.touch", func(_ context.Context, rec arrow.RecordBatch) (arrow.Array, error) {
	first := rec.Column(0).(*array.Int64).Value(0)
	if err := os.WriteFile(filepath.Join(os.Getenv(markEnv), fmt.Sprint("block-", first)), nil, 0o644); err != nil {
		return nil, err
	}
	b := array.NewBooleanBuilder(memory.DefaultAllocator)
	defer b.Release()
	for range rec.NumRows() {
		b.Append(true)
	}
	return b.NewArray(), nil
})

func clearDir(t *testing.T, dir string) {
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range es {
		if err := os.Remove(filepath.Join(dir, e.Name())); err != nil {
			t.Fatal(err)
		}
	}
}

func exists(path string) bool { _, err := os.Stat(path); return err == nil }

// TestIterBatchesPrefetch: with a budget that lets one task run at a
// time, the run advances during the loop body only with Prefetch: with
// Prefetch(2) the tasks of the next two blocks run while the body holds
// the first, and not the third's; without it, not even the next.
func TestIterBatchesPrefetch(t *testing.T) {
	dir := markDir(t)
	ctx := start(t)
	cfg := withParallelism(6) // blocks of ids 0-9, 10-19, ... 50-59
	cfg.MemoryBudget = 1      // one task at a time, submitted when pulled
	ds := data.Range(60).WithConfig(cfg).AddColumn("touched", touch)
	mark := func(first int) string { return filepath.Join(dir, fmt.Sprint("block-", first)) }

	var seen int64
	for rec, err := range ds.IterBatches(ctx, 0, data.Prefetch(2)) {
		if err != nil {
			t.Fatal(err)
		}
		if seen == 0 {
			testutil.Eventually(t, "blocks 2 and 3 fetched while the body runs", func() bool { return exists(mark(10)) && exists(mark(20)) })
			if exists(mark(30)) {
				t.Fatal("block 4 was computed: more than two blocks fetched ahead")
			}
		}
		seen += rec.NumRows()
	}
	if seen != 60 {
		t.Fatalf("%d rows, want 60", seen)
	}

	clearDir(t, dir)
	seen = 0
	for rec, err := range ds.IterBatches(ctx, 0) {
		if err != nil {
			t.Fatal(err)
		}
		if seen == 0 && (!exists(mark(0)) || exists(mark(10))) {
			t.Fatal("without Prefetch the next block was computed during the body")
		}
		seen += rec.NumRows()
	}
	if seen != 60 {
		t.Fatalf("%d rows, want 60", seen)
	}

	// stopping early with blocks queued releases them and ends the run
	n := 0
	for r, err := range ds.Iter(ctx, data.Prefetch(3)) {
		if err != nil {
			t.Fatal(err)
		}
		if n++; n == 15 || r == nil {
			break
		}
	}
	testutil.Eventually(t, "the early stop's blocks to be released", func() bool {
		m, err := atolltest.Memory(ctx)
		return err == nil && m.OwnedObjects == 0 && m.PendingTasks == 0
	})
	var got error
	for _, err := range ds.IterBatches(ctx, 0, data.Prefetch(-1)) {
		got = err
	}
	if !errors.Is(got, atoll.ErrInvalidArgument) {
		t.Fatalf("Prefetch(-1): %v", got)
	}
}
