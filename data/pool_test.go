package data_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/atoll-runtime/atoll/internal/testutil"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/atoll-runtime/atoll"
	"github.com/atoll-runtime/atoll/atolltest"
	"github.com/atoll-runtime/atoll/data"
)

// model is a BatchClass's state: which actor it lives in and how many
// batches it mapped.
type model struct {
	id    int64 // unique per setup: pid and a clock
	calls int64
}

// setupModel leaves a marker file per setup (counted by the tests).
func setupModel(context.Context) (*model, error) {
	id := int64(os.Getpid())<<20 | time.Now().UnixNano()&(1<<20-1)
	if err := os.WriteFile(filepath.Join(os.Getenv(markEnv), fmt.Sprint("setup-", id)), nil, 0o644); err != nil {
		return nil, err
	}
	return &model{id: id}, nil
}

// tagBatch adds columns "actor" (the state's id) and "call" (the
// state's call count) to rec.
func tagBatch(m *model, rec arrow.RecordBatch) arrow.RecordBatch {
	m.calls++
	ab, cb := array.NewInt64Builder(memory.DefaultAllocator), array.NewInt64Builder(memory.DefaultAllocator)
	defer ab.Release()
	defer cb.Release()
	for range rec.NumRows() {
		ab.Append(m.id)
		cb.Append(m.calls)
	}
	a, c := ab.NewArray(), cb.NewArray()
	defer a.Release()
	defer c.Release()
	fields := append(rec.Schema().Fields(), arrow.Field{Name: "actor", Type: arrow.PrimitiveTypes.Int64}, arrow.Field{Name: "call", Type: arrow.PrimitiveTypes.Int64})
	return array.NewRecordBatch(arrow.NewSchema(fields, nil), append(rec.Columns(), a, c), rec.NumRows())
}

var (
	tagger = data.RegisterBatchClass("test.tagger", setupModel, func(_ context.Context, m *model, rec arrow.RecordBatch) (arrow.RecordBatch, error) {
		return tagBatch(m, rec), nil
	})
	// fragile kills its own process the first time it sees id 0 (a
	// marker file says it did): the actor dies in the middle of a call.
	fragile = data.RegisterBatchClass("test.fragile", setupModel, func(_ context.Context, m *model, rec arrow.RecordBatch) (arrow.RecordBatch, error) {
		crashed := filepath.Join(os.Getenv(markEnv), "crashed")
		if rec.Column(0).(*array.Int64).Value(0) == 0 {
			if _, err := os.Stat(crashed); err != nil {
				if err := os.WriteFile(crashed, nil, 0o644); err != nil {
					return nil, err
				}
				os.Exit(3)
			}
		}
		return tagBatch(m, rec), nil
	})
	badSetup = data.RegisterBatchClass("test.badSetup", func(context.Context) (*model, error) { return nil, errors.New("no model") },
		func(_ context.Context, m *model, rec arrow.RecordBatch) (arrow.RecordBatch, error) {
			return tagBatch(m, rec), nil
		})
)

// setups counts the setup marker files.
func setups(t *testing.T, dir string) int {
	t.Helper()
	ms, err := filepath.Glob(filepath.Join(dir, "setup-*"))
	if err != nil {
		t.Fatal(err)
	}
	return len(ms)
}

// checkTagged checks rows 0..n-1 in order, mapped by at most maxActors
// states, each state's calls numbered 1, 2, ... in the order its blocks
// come; it returns the number of states seen and of batches.
func checkTagged(t *testing.T, rows []data.Row, n int, maxActors int) (actors, batches int) {
	t.Helper()
	if got := ids(t, rows, "id"); len(got) != n || !slices.IsSorted(got) || got[0] != 0 || got[n-1] != int64(n-1) {
		t.Fatalf("ids %v, want 0..%d in order", got, n-1)
	}
	calls := map[int64][]int64{} // per state: its call numbers, block by block
	for _, r := range rows {
		a, c := r["actor"].(int64), r["call"].(int64)
		cs := calls[a]
		if len(cs) == 0 || cs[len(cs)-1] != c {
			calls[a] = append(cs, c)
			batches++
		}
	}
	if len(calls) > maxActors {
		t.Fatalf("%d states mapped batches, want at most %d", len(calls), maxActors)
	}
	for a, cs := range calls {
		slices.Sort(cs)
		for i, c := range cs {
			if c != int64(i+1) {
				t.Fatalf("state %x: calls %v, want 1..%d: its state was not kept across batches", a, cs, len(cs))
			}
		}
	}
	return len(calls), batches
}

// TestActorPoolMapBatches: a BatchClass on ActorPool(1, 2) over 20
// blocks: setup runs once per actor (two setups for twenty batches), the
// pool grows to its max and never past it, rows come out right and in
// order, and the actors are gone when the run ends.
func TestActorPoolMapBatches(t *testing.T) {
	dir := markDir(t)
	ctx := start(t)
	ds := data.Range(200).WithConfig(withParallelism(20)).MapBatches(tagger, data.ActorPool(1, 2)).FilterFunc(even)

	var peak atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			if s, err := atolltest.Status(ctx); err == nil && int64(s.Actors) > peak.Load() {
				peak.Store(int64(s.Actors))
			}
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	})
	rows, err := data.Range(200).WithConfig(withParallelism(20)).MapBatches(tagger, data.ActorPool(1, 2)).TakeAll(ctx)
	close(stop)
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	actors, batches := checkTagged(t, rows, 200, 2)
	if batches != 20 || actors != 2 {
		t.Fatalf("%d batches on %d actors, want 20 on 2 (the pool grows while blocks wait)", batches, actors)
	}
	if n := setups(t, dir); n != 2 {
		t.Fatalf("setup ran %d times for %d batches, want once per actor (2)", n, batches)
	}
	if p := peak.Load(); p > 2 {
		t.Fatalf("the node hosted %d actors at once, want at most 2", p)
	}
	testutil.Eventually(t, "the pool's actors to be gone", func() bool {
		s, err := atolltest.Status(ctx)
		return err == nil && s.Actors == 0
	})

	// fused: the filter runs in its own stage on tasks, after the pool
	rows, err = ds.TakeAll(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 100 || rows[99]["id"] != int64(198) {
		t.Fatalf("%d rows after the filter", len(rows))
	}
	st := ds.Stats()
	for _, want := range []string{"Stage 1 read: 20/20 blocks", "Stage 2 map_batches: 20/20 blocks", "* Actors: 2 started (pool of 1 to 2, at most 2 at once)", "Stage 3 filter: 20/20 blocks"} {
		if !strings.Contains(st, want) {
			t.Fatalf("stats lack %q:\n%s", want, st)
		}
	}
	testutil.Eventually(t, "the pool's actors to be gone", func() bool {
		s, err := atolltest.Status(ctx)
		return err == nil && s.Actors == 0
	})
}

// TestActorPoolActorDies: an actor that dies in the middle of a block
// has the block retried on another actor; nothing is lost or repeated.
func TestActorPoolActorDies(t *testing.T) {
	dir := markDir(t)
	ctx := start(t)
	ds := data.Range(100).WithConfig(withParallelism(10)).MapBatches(fragile, data.ActorPool(2, 2))
	rows, err := ds.TakeAll(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !exists(filepath.Join(dir, "crashed")) {
		t.Fatal("the actor did not crash")
	}
	if _, batches := checkTagged(t, rows, 100, 3); batches != 10 {
		t.Fatalf("%d batches, want 10", batches)
	}
	if st := ds.Stats(); !strings.Contains(st, "1 blocks retried after their actor died") {
		t.Fatalf("stats:\n%s", st)
	}
	t.Logf("setups: %d (two actors, one restarted)\n%s", setups(t, dir), ds.Stats())
	testutil.Eventually(t, "the pool's actors to be gone", func() bool {
		s, err := atolltest.Status(ctx)
		return err == nil && s.Actors == 0
	})
}

// TestActorPoolStopsEarly: a consumer that stops early, and a failing
// setup, leave no actor behind; bad pools are refused.
func TestActorPoolStopsEarly(t *testing.T) {
	markDir(t)
	ctx := start(t)
	ds := data.Range(1000).WithConfig(withParallelism(50)).MapBatches(tagger, data.ActorPool(2, 3))
	n := 0
	for _, err := range ds.Iter(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		if n++; n == 30 {
			break
		}
	}
	testutil.Eventually(t, "the pool's actors to be gone after an early stop", func() bool {
		s, err := atolltest.Status(ctx)
		return err == nil && s.Actors == 0
	})
	rows, err := ds.Take(ctx, 5)
	if err != nil || len(rows) != 5 {
		t.Fatalf("Take(5): %d rows, %v", len(rows), err)
	}

	bad := data.Range(10).MapBatches(badSetup, data.ActorPool(1, 1))
	_, err = bad.Count(ctx)
	if err == nil || !strings.Contains(err.Error(), "no model") {
		t.Fatalf("a failing setup: %v", err)
	}
	var fe *data.FunctionError
	if !errors.As(err, &fe) || fe.Op != "setup" || fe.Func != "test.badSetup" {
		t.Fatalf("a failing setup: %v, want a FunctionError of the setup", err)
	}
	if st := bad.Stats(); !strings.Contains(st, "* Actors: 1 started") || strings.Contains(st, "retried") {
		t.Fatalf("a failing setup was retried:\n%s", st)
	}
	testutil.Eventually(t, "the pool's actors to be gone after a failed setup", func() bool {
		s, err := atolltest.Status(ctx)
		return err == nil && s.Actors == 0
	})
	for name, ds := range map[string]*data.Dataset{
		"class without a pool": data.Range(3).MapBatches(tagger),
		"ActorPool(0, 1)":      data.Range(3).MapBatches(tagger, data.ActorPool(0, 1)),
		"ActorPool(2, 1)":      data.Range(3).MapBatches(double, data.ActorPool(2, 1)),
	} {
		if _, err := ds.Count(ctx); !errors.Is(err, atoll.ErrInvalidArgument) {
			t.Errorf("%s: %v, want ErrInvalidArgument", name, err)
		}
	}
	// a plain function runs on a pool too, and so does a filter on a
	// pool of the same size: in the same actors
	two := data.Range(10).MapBatches(double, data.ActorPool(1, 1)).FilterFunc(even, data.ActorPool(1, 1))
	rows, err = two.TakeAll(ctx)
	if err != nil || len(rows) != 5 || rows[4]["x"] != int64(16) {
		t.Fatalf("BatchFunc and Filter on a pool: %v, %v", rows, err)
	}
	if st := two.Stats(); !strings.Contains(st, "Stage 2 map_batches->filter: 10/10 blocks") || !strings.Contains(st, "* Actors: 1 started") {
		t.Fatalf("stats:\n%s", st)
	}
}

// TestActorPoolCPUsAndCancel: actors holding a CPU each on a two-CPU
// node: the pool does not grow onto the last free CPU (the reads that
// feed it would starve); a cancelled run kills its actors.
func TestActorPoolCPUsAndCancel(t *testing.T) {
	markDir(t)
	ctx := start(t)
	ds := data.Range(100).WithConfig(withParallelism(10)).MapBatches(tagger, data.ActorPool(1, 2), data.WithResources(atoll.Resources{CPU: 1}))
	rows, err := ds.TakeAll(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if actors, _ := checkTagged(t, rows, 100, 1); actors != 1 {
		t.Fatalf("%d actors", actors)
	}
	if st := ds.Stats(); !strings.Contains(st, "* Actors: 1 started (pool of 1 to 2, at most 1 at once)") {
		t.Fatalf("stats:\n%s", st)
	}

	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var got error
	n := 0
	for _, err := range data.Range(1000).WithConfig(withParallelism(50)).MapBatches(tagger, data.ActorPool(2, 2)).Iter(cctx) {
		if err != nil {
			got = err
			break
		}
		if n++; n == 10 {
			testutil.Eventually(t, "the pool's two actors", func() bool {
				s, err := atolltest.Status(ctx)
				return err == nil && s.Actors == 2
			})
			cancel()
		}
	}
	if !errors.Is(got, context.Canceled) {
		t.Fatalf("after cancel: %v, want context.Canceled", got)
	}
	testutil.Eventually(t, "the pool's actors to be gone after a cancel", func() bool {
		s, err := atolltest.Status(ctx)
		return err == nil && s.Actors == 0
	})
}
