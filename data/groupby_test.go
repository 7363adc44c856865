package data_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/atoll-runtime/atoll"
	"github.com/atoll-runtime/atoll/atolltest"
	"github.com/atoll-runtime/atoll/data"
	"github.com/atoll-runtime/atoll/data/expr"
)

// groupRecords builds n rows in blocks of per: group columns of every
// supported type (k: int64 with nulls, s: string, i32, f64, f32) and
// values (x: int64 with nulls, y: float64, z: int32, w: float32, name:
// string), from a fixed formula.
func groupRecords(n, per int) []arrow.RecordBatch {
	mem := memory.DefaultAllocator
	s := arrow.NewSchema([]arrow.Field{
		{Name: "k", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "s", Type: arrow.BinaryTypes.String},
		{Name: "i32", Type: arrow.PrimitiveTypes.Int32},
		{Name: "f64", Type: arrow.PrimitiveTypes.Float64},
		{Name: "f32", Type: arrow.PrimitiveTypes.Float32},
		{Name: "x", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "y", Type: arrow.PrimitiveTypes.Float64},
		{Name: "z", Type: arrow.PrimitiveTypes.Int32},
		{Name: "w", Type: arrow.PrimitiveTypes.Float32},
		{Name: "name", Type: arrow.BinaryTypes.String},
	}, nil)
	var recs []arrow.RecordBatch
	for lo := 0; lo < n; lo += per {
		b := array.NewRecordBuilder(mem, s)
		for i := lo; i < min(n, lo+per); i++ {
			if i%11 == 0 {
				b.Field(0).AppendNull()
			} else {
				b.Field(0).(*array.Int64Builder).Append(int64(i % 7))
			}
			b.Field(1).(*array.StringBuilder).Append(fmt.Sprint("g", (i/3)%4))
			b.Field(2).(*array.Int32Builder).Append(int32(i%5 - 2))
			b.Field(3).(*array.Float64Builder).Append(float64(i%3) / 2)
			b.Field(4).(*array.Float32Builder).Append(float32(i%4) * 1.5)
			if i%13 == 0 {
				b.Field(5).AppendNull()
			} else {
				b.Field(5).(*array.Int64Builder).Append(int64((i*37)%1000 - 300))
			}
			b.Field(6).(*array.Float64Builder).Append(float64((i*53)%997) / 7)
			b.Field(7).(*array.Int32Builder).Append(int32((i * 17) % 101))
			b.Field(8).(*array.Float32Builder).Append(float32((i*29)%89) / 4)
			b.Field(9).(*array.StringBuilder).Append(fmt.Sprintf("n%04d", (i*7919)%5003))
		}
		recs = append(recs, b.NewRecordBatch())
		b.Release()
	}
	return recs
}

// want is one group's aggregates, computed in this goroutine from rows
// with two passes (the mean, then squared deviations from it) and a
// plain loop: independent of the tasks' one-pass partial states.
type want struct {
	count    int64
	sumX     any // int64, or nil for no value
	meanY    float64
	minX     any
	maxName  string
	stdY     any // float64, or nil for fewer than two values
	sumW     float64
	meanZ    float64
	minF32   float32
	maxI32   int32
	ys       []float64
	haveMinX bool
}

func keyOf(r data.Row, cols []string) string {
	var parts []string
	for _, c := range cols {
		parts = append(parts, fmt.Sprintf("%v", r[c]))
	}
	return strings.Join(parts, "|")
}

func expectGroups(rows []data.Row, cols []string) map[string]*want {
	out := map[string]*want{}
	for _, r := range rows {
		k := keyOf(r, cols)
		w := out[k]
		if w == nil {
			w = &want{maxName: "", minF32: float32(math.Inf(1)), maxI32: math.MinInt32}
			out[k] = w
		}
		w.count++
		if x, ok := r["x"].(int64); ok {
			s, _ := w.sumX.(int64)
			w.sumX = s + x
			if !w.haveMinX || x < w.minX.(int64) {
				w.minX, w.haveMinX = x, true
			}
		}
		y := r["y"].(float64)
		w.ys = append(w.ys, y)
		if n := r["name"].(string); n > w.maxName {
			w.maxName = n
		}
		w.sumW += float64(r["w"].(float32))
		w.meanZ += float64(r["z"].(int32))
		w.minF32 = min(w.minF32, r["f32"].(float32))
		w.maxI32 = max(w.maxI32, r["i32"].(int32))
	}
	for _, w := range out {
		var s float64
		for _, y := range w.ys {
			s += y
		}
		w.meanY = s / float64(len(w.ys))
		w.meanZ /= float64(w.count)
		if len(w.ys) > 1 {
			var ss float64
			for _, y := range w.ys {
				ss += (y - w.meanY) * (y - w.meanY)
			}
			w.stdY = math.Sqrt(ss / float64(len(w.ys)-1))
		}
		w.ys = nil
	}
	return out
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*max(1, math.Abs(a), math.Abs(b)) }

var allAggs = []data.Agg{data.Count(), data.Sum("x"), data.Mean("y"), data.Min("x"), data.Max("name"), data.Std("y"),
	data.Sum("w"), data.Mean("z"), data.Min("f32"), data.Max("i32")}

// checkGroups compares an aggregated dataset's rows with the groups
// computed in this goroutine.
func checkGroups(t *testing.T, got []data.Row, exp map[string]*want, cols []string) {
	t.Helper()
	if len(got) != len(exp) {
		t.Fatalf("%d groups, want %d", len(got), len(exp))
	}
	seen := map[string]bool{}
	for _, r := range got {
		k := keyOf(r, cols)
		w, ok := exp[k]
		if !ok || seen[k] {
			t.Fatalf("group %s unexpected or repeated: %v", k, r)
		}
		seen[k] = true
		stdOK := (w.stdY == nil && r["std(y)"] == nil) || (w.stdY != nil && r["std(y)"] != nil && near(r["std(y)"].(float64), w.stdY.(float64)))
		if r["count()"] != w.count || r["sum(x)"] != w.sumX || !near(r["mean(y)"].(float64), w.meanY) || r["min(x)"] != w.minX ||
			r["max(name)"] != w.maxName || !stdOK || !near(r["sum(w)"].(float64), w.sumW) || !near(r["mean(z)"].(float64), w.meanZ) ||
			r["min(f32)"] != w.minF32 || r["max(i32)"] != w.maxI32 {
			t.Fatalf("group %s:\n got %v\nwant %+v", k, r, *w)
		}
		if len(r) != len(cols)+len(allAggs) {
			t.Fatalf("group %s has columns %v", k, r)
		}
	}
}

// TestGroupByAggregate: groupings on one and on several columns of each
// supported type, every aggregation, over 12 blocks in worker processes,
// equal the same computation done in this goroutine; the aggregate fuses
// with the filter before it and runs a map and a reduce phase.
func TestGroupByAggregate(t *testing.T) {
	ctx := start(t)
	recs := groupRecords(6000, 500)
	ds, err := data.FromArrow(ctx, recs...)
	if err != nil {
		t.Fatal(err)
	}
	all, err := ds.TakeAll(ctx)
	if err != nil {
		t.Fatal(err)
	}
	releaseAll(recs)
	for _, cols := range [][]string{{"k"}, {"s"}, {"i32"}, {"f64"}, {"f32"}, {"k", "s"}, {"s", "i32", "f64"}} {
		t.Run(strings.Join(cols, ","), func(t *testing.T) {
			agg := ds.GroupBy(cols...).NumPartitions(3).Aggregate(allAggs...)
			got, err := agg.TakeAll(ctx)
			if err != nil {
				t.Fatal(err)
			}
			checkGroups(t, got, expectGroups(all, cols), cols)
		})
	}
	// fused with the maps before it; parts by default: one per CPU of the
	// node (2), as there are fewer CPUs than blocks
	kept := ds.FilterFunc(evenK).GroupBy("k", "s")
	agg := kept.Aggregate(allAggs...)
	got, err := agg.TakeAll(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var keptRows []data.Row
	for _, r := range all {
		if k, ok := r["k"].(int64); ok && k%2 == 0 {
			keptRows = append(keptRows, r)
		}
	}
	checkGroups(t, got, expectGroups(keptRows, []string{"k", "s"}), []string{"k", "s"})
	st := agg.Stats()
	for _, w := range []string{"Stage 1 from_arrow->filter->aggregate:", "Substage 0 aggregate_map: 12/12 blocks",
		"Substage 1 aggregate_reduce: 2/2 blocks"} {
		if !strings.Contains(st, w) {
			t.Fatalf("stats lack %q:\n%s", w, st)
		}
	}
	// each block sorted by the group columns
	n, err := kept.Count().Count(ctx)
	if err != nil || n != int64(len(got)) {
		t.Fatalf("GroupBy.Count: %d groups, %v; want %d", n, err, len(got))
	}
	for rec, err := range ds.GroupBy("s").NumPartitions(1).Count().IterBatches(ctx, 0) {
		if err != nil {
			t.Fatal(err)
		}
		ss := rec.Column(0).(*array.String)
		var keys []string
		for i := range ss.Len() {
			keys = append(keys, ss.Value(i))
		}
		if !slices.Equal(keys, []string{"g0", "g1", "g2", "g3"}) {
			t.Fatalf("one part's groups %v, want sorted g0..g3", keys)
		}
	}
}

var evenK = data.RegisterPredicate("test.evenK", func(_ context.Context, r data.Row) (bool, error) {
	k, ok := r["k"].(int64)
	return ok && k%2 == 0, nil
})

func releaseAll(recs []arrow.RecordBatch) {
	for _, r := range recs {
		r.Release()
	}
}

// TestGroupByErrors: bad groupings and aggregations are ErrInvalidArgument
// when built; a missing or unsupported column fails the run naming it.
func TestGroupByErrors(t *testing.T) {
	ctx := start(t)
	recs := groupRecords(100, 50)
	ds, err := data.FromArrow(ctx, recs...)
	releaseAll(recs)
	if err != nil {
		t.Fatal(err)
	}
	for name, bad := range map[string]*data.Dataset{
		"repeated column":   ds.GroupBy("k", "k").Count(),
		"no aggregation":    ds.GroupBy("k").Aggregate(),
		"same twice":        ds.GroupBy("k").Aggregate(data.Sum("x"), data.Sum("x")),
		"zero partitions":   ds.GroupBy("k").NumPartitions(0).Count(),
		"sum of no column":  ds.GroupBy("k").Sum(""),
		"aggregation named": ds.GroupBy("count()").Count(),
	} {
		if _, err := bad.Count(ctx); !errors.Is(err, atoll.ErrInvalidArgument) {
			t.Errorf("%s: %v, want ErrInvalidArgument", name, err)
		}
	}
	for name, c := range map[string]struct {
		ds   *data.Dataset
		want string
	}{
		"missing group column": {ds.GroupBy("nope").Count(), `no column "nope"`},
		"missing value column": {ds.GroupBy("k").Sum("nope"), `no column "nope"`},
		"sum of strings":       {ds.GroupBy("k").Sum("name"), `sum of column "name" of type utf8 is not supported`},
	} {
		if _, err := c.ds.Count(ctx); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error with %q", name, err, c.want)
		}
	}
}

var groupOf = data.RegisterColumnFunc("test.groupOf", func(_ context.Context, rec arrow.RecordBatch) (arrow.Array, error) {
	ids := rec.Column(0).(*array.Int64)
	b := array.NewInt64Builder(memory.DefaultAllocator)
	defer b.Release()
	for i := range ids.Len() {
		b.Append(ids.Value(i) * 7919 % sortRows % (sortRows / 2))
	}
	return b.NewArray(), nil
})

// TestGroupByLargerThanStore: 12,000 groups of two rows over ~24 MiB
// (1 KiB of padding a row, aggregated by Max) under an 8 MiB store: the
// partial aggregates are as large as the input, the map side's parts
// spill and are restored, the two parts planned (one per CPU) become as
// many as fit a reduce task once the first map tasks (one per CPU) show
// how large they get (they run again with the others), and every group
// is right.
func TestGroupByLargerThanStore(t *testing.T) {
	ctx := start(t, atoll.WithObjectStoreMemory(8<<20))
	cfg := withParallelism(24)
	cfg.TargetMaxBlockSize = 2 << 20
	ds := data.Range(sortRows).AddColumn("g", groupOf).AddColumn("pad", pad).
		GroupBy("g").Aggregate(data.Count(), data.Sum("id"), data.Max("pad")).WithConfig(cfg)
	want := make([]int64, sortRows/2)
	for id := range int64(sortRows) {
		want[id*7919%sortRows%(sortRows/2)] += id
	}
	groups := 0
	for rec, err := range ds.IterBatches(ctx, 0) {
		if err != nil {
			t.Fatal(err)
		}
		g, n, sum, p := rec.Column(0).(*array.Int64), rec.Column(1).(*array.Int64), rec.Column(2).(*array.Int64), rec.Column(3).(*array.String)
		for i := range g.Len() {
			if n.Value(i) != 2 || sum.Value(i) != want[g.Value(i)] || len(p.Value(i)) != 1024 {
				t.Fatalf("group %d: count %d, sum %d (want 2, %d), max(pad) of %d bytes", g.Value(i), n.Value(i), sum.Value(i), want[g.Value(i)], len(p.Value(i)))
			}
			groups++
		}
	}
	if groups != sortRows/2 {
		t.Fatalf("%d groups, want %d", groups, sortRows/2)
	}
	m, err := atolltest.Memory(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if m.SpilledBytesTotal == 0 {
		t.Fatalf("nothing spilled: the test no longer exceeds the store")
	}
	// 2 parts of ~12 MiB each planned: replanned, not cut again
	rerun := mapBlocks(t, ctx, 24)
	if st := ds.Stats(); !strings.Contains(st, rerun) || strings.Contains(st, "aggregate_split") ||
		strings.Contains(st, "aggregate_reduce: 2/2") {
		t.Fatalf("the parts were not replanned from the first map task:\n%s", st)
	}
	t.Logf("spilled %d bytes, restored %d\n%s", m.SpilledBytesTotal, m.RestoredBytesTotal, ds.Stats())
}

// mapBlocks is the map substage's line in the stats of a GroupBy of
// blocks read blocks whose parts were replanned: its first wave of map
// tasks (one per CPU, as the node has them free) ran twice.
func mapBlocks(t *testing.T, ctx context.Context, blocks int) string {
	t.Helper()
	s, err := atolltest.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	n := blocks + min(16, blocks, int(s.Available["CPU"]))
	return fmt.Sprintf("aggregate_map: %d/%d blocks", n, n)
}

// TestGroupByCutsWhileMapping: a GroupBy whose parts are larger than a
// reduce task should hold sizes its parts by its first map tasks' output
// when its map tasks read their input (they run again), and cuts
// them while the maps run when they take stored blocks (its split tasks
// overlap the maps in the stats); with NoOverlap it cuts them after the
// last map. The result is the same every way.
func TestGroupByCutsWhileMapping(t *testing.T) {
	ctx := start(t, atoll.WithObjectStoreMemory(64<<20))
	// Sized to run in seconds: CI runs the data package's two shares
	// beside the simulator on two cores, where a task takes ten times
	// its CPU time.
	const rows, groups, blocks = 600_000, 12_500, 24
	rerun := mapBlocks(t, ctx, blocks)
	for _, stored := range []bool{false, true} {
		for _, overlap := range []bool{true, false} {
			cfg := withParallelism(blocks)
			cfg.NoOverlap = !overlap
			cfg.MemoryBudget = 1 << 20 // the parts (~5 MB each) are larger than a reduce task may take
			in := data.Range(rows).WithConfig(cfg).WithColumn("g", expr.Col("id").Mod(groups))
			if stored {
				var err error
				if in, err = in.Materialize(ctx); err != nil {
					t.Fatal(err)
				}
			}
			ds := in.GroupBy("g").Aggregate(data.Count(), data.Sum("id")).WithConfig(cfg)
			seen := 0
			for rec, err := range ds.IterBatches(ctx, 0) {
				if err != nil {
					t.Fatal(err)
				}
				g, n, sum := rec.Column(0).(*array.Int64), rec.Column(1).(*array.Int64), rec.Column(2).(*array.Int64)
				for i := range g.Len() {
					// the ids k·groups + g for k < rows/groups
					const per = rows / groups
					if want := int64(per)*g.Value(i) + groups*int64(per*(per-1)/2); n.Value(i) != per || sum.Value(i) != want {
						t.Fatalf("stored %v, overlap %v: group %d: count %d, sum %d (want %d, %d)", stored, overlap, g.Value(i), n.Value(i), sum.Value(i), per, want)
					}
					seen++
				}
			}
			if seen != groups {
				t.Fatalf("stored %v, overlap %v: %d groups, want %d", stored, overlap, seen, groups)
			}
			st := ds.Stats()
			replanned := !stored && overlap
			if strings.Contains(st, rerun) != replanned || strings.Contains(st, "aggregate_split") == replanned ||
				strings.Contains(st, "* Overlapped substage 0") != (stored && overlap) {
				t.Fatalf("stored %v, overlap %v, but the stats say otherwise:\n%s", stored, overlap, st)
			}
			t.Logf("stored %v, overlap %v:\n%s", stored, overlap, st)
		}
	}
}

// TestAggregateOverAllRows: Dataset.Aggregate (and GroupBy with no
// column) folds every row into one, over many read tasks, over stored
// blocks and with several parts asked for; an empty dataset gives no row.
// GroupBy() was an error before, and a total needed a constant column.
func TestAggregateOverAllRows(t *testing.T) {
	ctx := start(t)
	const n = 100_000
	want := map[string]any{"count()": int64(n), "sum(id)": int64(n * (n - 1) / 2), "max(id)": int64(n - 1), `sum(col("id") * 2)`: int64(n * (n - 1))}
	aggs := []data.Agg{data.Count(), data.Sum("id"), expr.Col("id").Max(), expr.Col("id").Mul(2).Sum()}
	for name, ds := range map[string]*data.Dataset{
		"read tasks":    data.Range(n).WithConfig(withParallelism(8)).Aggregate(aggs...),
		"stored blocks": data.Range(n).Repartition(7).Aggregate(aggs...),
		"three parts":   data.Range(n).WithConfig(withParallelism(8)).GroupBy().NumPartitions(3).Aggregate(aggs...),
	} {
		rows, err := ds.TakeAll(ctx)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(rows) != 1 {
			t.Fatalf("%s: %d rows: %v", name, len(rows), rows)
		}
		for k, v := range want {
			if rows[0][k] != v {
				t.Errorf("%s: %s = %v, want %v (row %v)", name, k, rows[0][k], v, rows[0])
			}
		}
	}
	rows, err := data.Range(n).Filter(expr.Col("id").Lt(0)).Aggregate(data.Count()).TakeAll(ctx)
	if err != nil || len(rows) != 0 {
		t.Fatalf("empty: %v, %v", rows, err)
	}
	if _, err := data.Range(3).Aggregate().Count(ctx); !errors.Is(err, atoll.ErrInvalidArgument) {
		t.Fatalf("no aggregation: %v", err)
	}
}
