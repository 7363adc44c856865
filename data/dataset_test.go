package data_test

import (
	"bufio"
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
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/atoll-runtime/atoll"
	"github.com/atoll-runtime/atoll/atolltest"
	"github.com/atoll-runtime/atoll/data"
	"github.com/atoll-runtime/atoll/data/expr"
)

// Functions the tests' datasets apply, registered at init so the worker
// processes (this test binary, re-executed) know them.
var (
	// double multiplies column "id" by two into column "x".
	double = data.RegisterBatchFunc("test.double", func(_ context.Context, rec arrow.RecordBatch) (arrow.RecordBatch, error) {
		ids := rec.Column(0).(*array.Int64)
		b := array.NewInt64Builder(memory.DefaultAllocator)
		defer b.Release()
		for i := range ids.Len() {
			b.Append(2 * ids.Value(i))
		}
		x := b.NewArray()
		defer x.Release()
		s := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}, {Name: "x", Type: arrow.PrimitiveTypes.Int64}}, nil)
		return array.NewRecordBatch(s, []arrow.Array{ids, x}, rec.NumRows()), nil
	})
	// batchRows replaces a batch by one row: its number of rows.
	batchRows = data.RegisterBatchFunc("test.batchRows", func(_ context.Context, rec arrow.RecordBatch) (arrow.RecordBatch, error) {
		b := array.NewInt64Builder(memory.DefaultAllocator)
		defer b.Release()
		b.Append(rec.NumRows())
		a := b.NewArray()
		defer a.Release()
		return array.NewRecordBatch(arrow.NewSchema([]arrow.Field{{Name: "n", Type: arrow.PrimitiveTypes.Int64}}, nil), []arrow.Array{a}, 1), nil
	})
	// pad adds a 1 KiB string column "pad" (to make blocks large).
	pad = data.RegisterColumnFunc("test.pad", func(_ context.Context, rec arrow.RecordBatch) (arrow.Array, error) {
		b := array.NewStringBuilder(memory.DefaultAllocator)
		defer b.Release()
		s := strings.Repeat("p", 1024)
		for range rec.NumRows() {
			b.Append(s)
		}
		return b.NewArray(), nil
	})
	even = data.RegisterPredicate("test.even", func(_ context.Context, r data.Row) (bool, error) {
		return r["id"].(int64)%2 == 0, nil
	})
	square = data.RegisterRowFunc("test.square", func(_ context.Context, r data.Row) (data.Row, error) {
		id := r["id"].(int64)
		return data.Row{"id": id, "sq": id * id, "name": fmt.Sprint("n", id)}, nil
	})
	failing = data.RegisterRowFunc("test.fail", func(_ context.Context, r data.Row) (data.Row, error) {
		return nil, errors.New("boom")
	})
	// inStore reports whether column 0's values buffer lies in a shared
	// memory mapping of this process (the object store's memfd arena):
	// the block was read in place, not copied.
	inStore = data.RegisterColumnFunc("test.inStore", func(_ context.Context, rec arrow.RecordBatch) (arrow.Array, error) {
		buf := rec.Column(0).Data().Buffers()[1].Bytes()
		p := uint64(uintptr(unsafe.Pointer(unsafe.SliceData(buf))))
		shared, err := inSharedMapping(p)
		if err != nil {
			return nil, err
		}
		b := array.NewBooleanBuilder(memory.DefaultAllocator)
		defer b.Release()
		for range rec.NumRows() {
			b.Append(shared)
		}
		return b.NewArray(), nil
	})
)

// inSharedMapping reports whether address p lies in a memfd mapping.
func inSharedMapping(p uint64) (bool, error) {
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		return false, err
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		fs := strings.Fields(s.Text())
		var lo, hi uint64
		if _, err := fmt.Sscanf(fs[0], "%x-%x", &lo, &hi); err != nil {
			continue
		}
		if p >= lo && p < hi {
			return len(fs) >= 6 && strings.Contains(fs[5], "memfd:"), nil
		}
	}
	return false, s.Err()
}

func ids(t *testing.T, rows []data.Row, col string) []int64 {
	t.Helper()
	out := make([]int64, len(rows))
	for i, r := range rows {
		v, ok := r[col].(int64)
		if !ok {
			t.Fatalf("row %d: %s is %T (%v)", i, col, r[col], r)
		}
		out[i] = v
	}
	return out
}

func TestRangeMapBatchesFilterSelect(t *testing.T) {
	ctx := start(t)
	ds := data.Range(1000).MapBatches(double).FilterFunc(even).Select("x")
	n, err := ds.Count(ctx)
	if err != nil || n != 500 {
		t.Fatalf("Count = %d, %v; want 500", n, err)
	}
	rows, err := ds.TakeAll(ctx)
	if err != nil {
		t.Fatal(err)
	}
	xs := ids(t, rows, "x")
	for i, x := range xs {
		if x != int64(4*i) || len(rows[i]) != 1 {
			t.Fatalf("row %d = %v, want {x: %d}", i, rows[i], 4*i)
		}
	}
	st := ds.Stats()
	if !strings.HasPrefix(st, "Stage 1 read->map_batches->filter->select: 16/16 blocks executed in ") ||
		!strings.Contains(st, "* Remote wall time: ") || !strings.Contains(st, "* Remote cpu time: ") ||
		!strings.Contains(st, "* Output num rows: 31 min, 32 max, 31 mean, 500 total") {
		t.Fatalf("Stats:\n%s", st)
	}
}

func TestMapAddColumnDropLimitTake(t *testing.T) {
	ctx := start(t)
	ds := data.Range(100).Map(square).AddColumn("pad", pad).Drop("pad")
	rows, err := ds.Take(ctx, 5)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 5 {
		t.Fatalf("Take(5) = %d rows", len(rows))
	}
	for i, r := range rows {
		if r["sq"] != int64(i*i) || r["name"] != fmt.Sprint("n", i) || r["pad"] != nil {
			t.Fatalf("row %d = %v", i, r)
		}
	}
	s, err := ds.Schema(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(s.Field(0).Name, s.Field(1).Name, s.Field(2).Name); s.NumFields() != 3 || got != "idnamesq" {
		t.Fatalf("schema %s", s)
	}
	// An aggregation's schema is its final columns, not the partial
	// states its reduce tasks combine: planned (no task runs), and run
	// (after Map, whose output the plan cannot know).
	for _, d := range []*data.Dataset{data.Range(100), ds} {
		s, err := d.GroupBy("id").NumPartitions(3).Aggregate(expr.Col("id").Mean().As("m")).Schema(ctx)
		if err != nil || s.NumFields() != 2 || s.Field(1).Name != "m" || s.Field(1).Type.ID() != arrow.FLOAT64 {
			t.Fatalf("an aggregation's schema: %v, %v; want id and m float64", s, err)
		}
	}
	var sb strings.Builder
	if err := ds.Show(ctx, &sb, 2); err != nil {
		t.Fatal(err)
	}
	if sb.String() != "{id: 0, name: n0, sq: 0}\n{id: 1, name: n1, sq: 1}\n" {
		t.Fatalf("Show:\n%s", sb.String())
	}
	// a limit in the middle: the maps after it see only its rows
	n, err := data.Range(100).Limit(37).MapBatches(double).Count(ctx)
	if err != nil || n != 37 {
		t.Fatalf("Limit(37).MapBatches.Count = %d, %v", n, err)
	}
}

type item struct {
	Name  string  `arrow:"name"`
	Score float64 `arrow:"score"`
	Age   int64
	skip  int
}

func TestFromItemsAndFromArrow(t *testing.T) {
	ctx := start(t)
	items := []item{{"a", 1.5, 10, 0}, {"b", 2.5, 20, 0}, {"c", 3.5, 30, 0}}
	ds, err := data.FromItems(ctx, items)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := ds.TakeAll(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 3 || rows[1]["name"] != "b" || rows[1]["score"] != 2.5 || rows[1]["Age"] != int64(20) || len(rows[1]) != 3 {
		t.Fatalf("rows %v", rows)
	}
	s, err := ds.Schema(ctx)
	if err != nil || s.Field(0).Name != "name" || s.Field(2).Name != "Age" {
		t.Fatalf("schema %v, %v", s, err)
	}
	maps, err := data.FromItems(ctx, []map[string]any{{"id": 1, "ok": true}, {"id": 2, "ok": nil}})
	if err != nil {
		t.Fatal(err)
	}
	rows, err = maps.Map(square).TakeAll(ctx)
	if err != nil || len(rows) != 2 || rows[1]["sq"] != int64(4) {
		t.Fatalf("maps: %v, %v", rows, err)
	}
	if _, err := data.FromItems(ctx, []int{1, 2}); !errors.Is(err, atoll.ErrInvalidArgument) {
		t.Fatalf("FromItems of ints: %v, want ErrInvalidArgument", err)
	}

	recs, err := data.Range(10).MapBatches(double).ToArrow(ctx)
	if err != nil {
		t.Fatal(err)
	}
	fa, err := data.FromArrow(ctx, recs...)
	for _, r := range recs {
		r.Release()
	}
	if err != nil {
		t.Fatal(err)
	}
	rows, err = fa.FilterFunc(even).TakeAll(ctx)
	if err != nil || !slices.Equal(ids(t, rows, "x"), []int64{0, 4, 8, 12, 16}) {
		t.Fatalf("FromArrow rows %v, %v", rows, err)
	}
}

func TestIterBatches(t *testing.T) {
	ctx := start(t)
	ds := data.Range(1000) // 16 blocks of 62 or 63 rows
	var sizes []int64
	var next int64
	for rec, err := range ds.IterBatches(ctx, 100) {
		if err != nil {
			t.Fatal(err)
		}
		col := rec.Column(0).(*array.Int64)
		for i := range col.Len() {
			if col.Value(i) != next {
				t.Fatalf("value %d, want %d", col.Value(i), next)
			}
			next++
		}
		sizes = append(sizes, rec.NumRows())
	}
	if len(sizes) != 10 || slices.ContainsFunc(sizes, func(n int64) bool { return n != 100 }) {
		t.Fatalf("batch sizes %v, want ten of 100", sizes)
	}
	// batches inside tasks: MapBatches(BatchSize) sees batches of at
	// most that size, cut within each task's block
	rows, err := data.Range(100).WithConfig(withParallelism(2)).MapBatches(batchRows, data.BatchSize(20)).TakeAll(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(t, rows, "n"); !slices.Equal(got, []int64{20, 20, 10, 20, 20, 10}) {
		t.Fatalf("batch sizes seen by tasks %v", got)
	}
	// stopping early
	seen := 0
	for r, err := range ds.Iter(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		if seen++; seen == 3 || r == nil {
			break
		}
	}
}

func withParallelism(p int) data.Config {
	c := data.DefaultConfig()
	c.Parallelism = p
	return c
}

func TestParquetAndCSV(t *testing.T) {
	ctx := start(t)
	dir := filepath.Join(t.TempDir(), "out")
	if err := data.Range(500).MapBatches(double).WriteParquet(ctx, dir); err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.parquet"))
	if len(files) != 16 {
		t.Fatalf("%d parquet files, want one per task (16)", len(files))
	}
	back := data.ReadParquet(dir)
	rows, err := back.FilterFunc(even).TakeAll(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 250 || rows[10]["x"] != int64(40) {
		t.Fatalf("read back %d rows, row 10 = %v", len(rows), rows[10])
	}
	one := data.ReadParquet(files[3])
	if n, err := one.Count(ctx); err != nil || n != 32 {
		t.Fatalf("one file: %d rows, %v", n, err)
	}

	csvDir := t.TempDir()
	for i, body := range []string{"id,name,score\n1,a,0.5\n2,b,1.5\n", "id,name,score\n3,c,2.5\n"} {
		if err := os.WriteFile(filepath.Join(csvDir, fmt.Sprintf("f%d.csv", i)), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	rows, err = data.ReadCSV(csvDir).Map(square).TakeAll(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(t, rows, "sq"); !slices.Equal(got, []int64{1, 4, 9}) {
		t.Fatalf("csv rows %v", rows)
	}
	if _, err := data.ReadCSV(filepath.Join(csvDir, "missing")).Count(ctx); !errors.Is(err, atoll.ErrInvalidArgument) {
		t.Fatalf("missing path: %v, want ErrInvalidArgument", err)
	}
}

func TestSortAndRepartition(t *testing.T) {
	ctx := start(t)
	items := make([]map[string]any, 2000)
	for i := range items {
		items[i] = map[string]any{"id": int64((i * 7919) % 2000), "tag": fmt.Sprint(i % 3)}
	}
	ds, err := data.FromItems(ctx, items)
	if err != nil {
		t.Fatal(err)
	}
	sorted := ds.FilterFunc(even).Sort("id", data.Partitions(4))
	rows, err := sorted.TakeAll(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := ids(t, rows, "id")
	if len(got) != 1000 || !slices.IsSorted(got) || got[0] != 0 || got[999] != 1998 {
		t.Fatalf("sorted %d rows: first %v", len(got), got[:min(10, len(got))])
	}
	st := sorted.Stats()
	for _, want := range []string{"Stage 1 from_items->filter->sort:", "Substage 0 sort_sample: 16/16 blocks", "Substage 1 sort_map: 16/16 blocks", "Substage 2 sort_reduce: 4/4 blocks"} {
		if !strings.Contains(st, want) {
			t.Fatalf("stats lack %q:\n%s", want, st)
		}
	}
	rows, err = ds.Sort("id", data.Descending()).Limit(3).TakeAll(ctx)
	if err != nil || !slices.Equal(ids(t, rows, "id"), []int64{1999, 1998, 1997}) {
		t.Fatalf("descending: %v, %v", rows, err)
	}

	re, err := ds.Repartition(5).Materialize(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if re.NumBlocks() != 5 {
		t.Fatalf("Repartition(5): %d blocks", re.NumBlocks())
	}
	var perBlock []int64
	for rec, err := range re.IterBatches(ctx, 0) {
		if err != nil {
			t.Fatal(err)
		}
		perBlock = append(perBlock, rec.NumRows())
	}
	if !slices.Equal(perBlock, []int64{400, 400, 400, 400, 400}) {
		t.Fatalf("rows per block %v", perBlock)
	}
	rows, err = re.TakeAll(ctx)
	if err != nil {
		t.Fatal(err)
	}
	all := ids(t, rows, "id")
	slices.Sort(all)
	for i, v := range all {
		if v != int64(i) {
			t.Fatalf("repartitioned rows lost or duplicated at %d: %d", i, v)
		}
	}
}

// TestBlockSplitting: a task whose output passes the target max block
// size returns several blocks.
func TestBlockSplitting(t *testing.T) {
	ctx := start(t)
	cfg := withParallelism(4)
	cfg.TargetMaxBlockSize = 64 << 10
	// 4 tasks of 250 rows each with a 1 KiB string: ~256 KiB per task
	ds, err := data.Range(1000).AddColumn("pad", pad).WithConfig(cfg).Materialize(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if nb := ds.NumBlocks(); nb < 16 {
		t.Fatalf("%d blocks, want >= 16 (four tasks of ~256 KiB, 64 KiB blocks)", nb)
	}
	var total int64
	for rec, err := range ds.IterBatches(ctx, 0) {
		if err != nil {
			t.Fatal(err)
		}
		total += rec.NumRows()
	}
	if total != 1000 {
		t.Fatalf("%d rows", total)
	}
	if n, err := ds.Count(ctx); err != nil || n != 1000 {
		t.Fatalf("Count after Materialize: %d, %v", n, err)
	}
}

// TestZeroCopyReads: a task reads its input block in place: the column
// buffers it sees lie in the worker's mapping of the object store.
func TestZeroCopyReads(t *testing.T) {
	ctx := start(t)
	// large enough blocks to live in shared memory (over 100 KiB each)
	ds, err := data.Range(200_000).WithConfig(withParallelism(2)).Materialize(ctx)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := ds.AddColumn("shared", inStore).Select("shared").Limit(1).TakeAll(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 || rows[0]["shared"] != true {
		t.Fatalf("the task's input buffers are not in shared memory: %v", rows)
	}
}

// TestInFlightBound: a pipeline over a dataset eight times the memory
// budget keeps the store's use under the budget.
func TestInFlightBound(t *testing.T) {
	ctx := start(t)
	cfg := data.DefaultConfig()
	cfg.MemoryBudget = 8 << 20
	cfg.Parallelism = 64
	var peak atomic.Uint64
	var wg sync.WaitGroup
	// the input: 64 blocks of 1000 ids (inline, 8 KB each); each task
	// adds 1 KiB a row, so the output is 64 blocks of ~1 MiB: 64 MiB
	padded, err := data.Range(64_000).WithConfig(cfg).Materialize(ctx)
	if err != nil {
		t.Fatal(err)
	}
	base, _ := atolltest.Memory(ctx)
	stop := make(chan struct{})
	wg.Go(func() {
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			if m, err := atolltest.Memory(ctx); err == nil && m.StoreUsed > peak.Load() {
				peak.Store(m.StoreUsed)
			}
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	})
	n, err := padded.AddColumn("pad", pad).Select("pad").Count(ctx) // 64 MiB of output blocks, 8x the budget
	close(stop)
	wg.Wait()
	if err != nil || n != 64_000 {
		t.Fatalf("Count = %d, %v", n, err)
	}
	if extra := int64(peak.Load()) - int64(base.StoreUsed); extra > cfg.MemoryBudget {
		t.Fatalf("store use rose by %d bytes, over the %d-byte budget", extra, cfg.MemoryBudget)
	} else {
		t.Logf("store use rose by at most %d bytes (budget %d, output 64 MiB)", extra, cfg.MemoryBudget)
	}
}

func TestErrors(t *testing.T) {
	ctx := start(t)
	for name, ds := range map[string]*data.Dataset{
		"Range(-1)":       data.Range(-1),
		"Limit(-1)":       data.Range(3).Limit(-1),
		"Repartition(0)":  data.Range(3).Repartition(0),
		"Sort no column":  data.Range(3).Sort(""),
		"bad config":      data.Range(3).WithConfig(data.Config{}),
		"MapBatches(nil)": data.Range(3).MapBatches(nil),
		"Select unknown":  data.Range(3).Select("nope"),
	} {
		if _, err := ds.Count(ctx); !errors.Is(err, atoll.ErrInvalidArgument) && !strings.Contains(fmt.Sprint(err), "no column") {
			t.Errorf("%s: %v, want ErrInvalidArgument", name, err)
		}
	}
	var te *atoll.TaskError
	if _, err := data.Range(3).Map(failing).Count(ctx); !errors.As(err, &te) || !strings.Contains(err.Error(), "boom") {
		t.Errorf("a failing map: %v, want a TaskError with boom", err)
	}
}

var perm = data.RegisterColumnFunc("test.perm", func(_ context.Context, rec arrow.RecordBatch) (arrow.Array, error) {
	ids := rec.Column(0).(*array.Int64)
	b := array.NewInt64Builder(memory.DefaultAllocator)
	defer b.Release()
	for i := range ids.Len() {
		b.Append(ids.Value(i) * 7919 % sortRows)
	}
	return b.NewArray(), nil
})

const sortRows = 24_000 // ~24 MiB with 1 KiB of padding a row

// checkPermSorted reads ds, rows of an id (column 0) and its perm key
// (column 1) sorted by key, and fails t unless the keys are 0 to rows-1
// in order, each beside its id.
func checkPermSorted(t *testing.T, ctx context.Context, ds *data.Dataset, rows int64) {
	t.Helper()
	var next int64
	for rec, err := range ds.IterBatches(ctx, 0) {
		if err != nil {
			t.Fatal(err)
		}
		ids, keys := rec.Column(0).(*array.Int64), rec.Column(1).(*array.Int64)
		for i := range keys.Len() {
			if keys.Value(i) != next || ids.Value(i)*7919%sortRows != next {
				t.Fatalf("row (id %d, key %d) at position %d", ids.Value(i), keys.Value(i), next)
			}
			next++
		}
	}
	if next != rows {
		t.Fatalf("%d rows sorted, want %d", next, rows)
	}
}

// TestSortLargerThanStore: a sort of ~24 MiB under an 8 MiB store; the
// map side's pieces spill and are restored for the reduces.
func TestSortLargerThanStore(t *testing.T) {
	ctx := start(t, atoll.WithObjectStoreMemory(8<<20))
	cfg := withParallelism(24)
	cfg.TargetMaxBlockSize = 2 << 20
	ds := data.Range(sortRows).AddColumn("key", perm).AddColumn("pad", pad).Sort("key", data.Partitions(24)).WithConfig(cfg)
	checkPermSorted(t, ctx, ds, sortRows)
	m, err := atolltest.Memory(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if m.SpilledBytesTotal == 0 {
		t.Fatalf("nothing spilled: the test no longer exceeds the store")
	}
	t.Logf("spilled %d bytes, restored %d\n%s", m.SpilledBytesTotal, m.RestoredBytesTotal, ds.Stats())
}

// TestShowKeepsStats: Show, Take and TakeAs run the dataset with a limit;
// its Stats describe that run (they were empty).
func TestShowKeepsStats(t *testing.T) {
	ctx := start(t)
	ds := data.Range(100).GroupBy("id").Count()
	var out strings.Builder
	if err := ds.Show(ctx, &out, 3); err != nil {
		t.Fatal(err)
	}
	if st := ds.Stats(); !strings.Contains(st, "limit") || !strings.Contains(st, "executed") {
		t.Fatalf("Stats after Show:\n%s", st)
	}
	taken := data.Range(10)
	if _, err := taken.Take(ctx, 2); err != nil {
		t.Fatal(err)
	}
	if st := taken.Stats(); !strings.Contains(st, "limit") {
		t.Fatalf("Stats after Take:\n%s", st)
	}
	typed := data.Range(10)
	type row struct {
		ID int64 `arrow:"id"`
	}
	if _, err := data.TakeAs[row](ctx, typed, 2); err != nil {
		t.Fatal(err)
	}
	if st := typed.Stats(); !strings.Contains(st, "limit") {
		t.Fatalf("Stats after TakeAs:\n%s", st)
	}
}
