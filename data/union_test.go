package data_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/atoll-runtime/atoll"
	"github.com/atoll-runtime/atoll/data"
	"github.com/atoll-runtime/atoll/data/expr"
)

func seq(lo, hi int64) []int64 {
	var out []int64
	for i := lo; i < hi; i++ {
		out = append(out, i)
	}
	return out
}

// TestUnion: the rows of each input in turn, inputs of any kind (reads,
// stored blocks, a sorted dataset), the maps after the union fused into
// one stage over the inputs' blocks; inputs of different schemas fail.
func TestUnion(t *testing.T) {
	ctx := start(t)
	stored, err := data.Range(30).Materialize(ctx)
	if err != nil {
		t.Fatal(err)
	}
	u := data.Range(10).Union(stored, data.Range(5).Sort("id", data.Descending()))
	rows, err := u.TakeAll(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := append(append(seq(0, 10), seq(0, 30)...), 4, 3, 2, 1, 0)
	if got := ids(t, rows, "id"); !slices.Equal(got, want) {
		t.Fatalf("union rows %v, want %v", got, want)
	}
	f := u.FilterFunc(even).MapBatches(double)
	n, err := f.Count(ctx)
	if err != nil || n != 5+15+3 {
		t.Fatalf("union then filter: %d rows, %v; want 23", n, err)
	}
	if st := f.Stats(); !strings.Contains(st, "union->filter->map_batches:") || !strings.Contains(st, "read->sort:") {
		t.Fatalf("stats:\n%s", st)
	}
	_, err = data.Range(3).Union(data.Range(3).MapBatches(double)).TakeAll(ctx)
	if !errors.Is(err, atoll.ErrInvalidArgument) || !strings.Contains(err.Error(), "different schemas: (id int64 not null) and (id int64 not null, x int64") {
		t.Fatalf("union of different schemas: %v", err)
	}

	// Plans that tell their schemas are compared, and the operations
	// after the union checked against theirs, before any task runs.
	for name, ds := range map[string]*data.Dataset{
		"two schemas":  data.Range(3).Union(data.Range(3).WithColumn("x", expr.Col("id").Mul(2))),
		"a typo after": data.Range(3).Union(data.Range(4)).Filter(expr.Col("idd").Gt(1)),
	} {
		_, err := ds.Count(ctx)
		var se *data.SchemaError
		var ee *expr.Error
		if !errors.As(err, &se) && !errors.As(err, &ee) {
			t.Fatalf("%s: %v, want a SchemaError or an expression's error", name, err)
		}
		if st := ds.Stats(); strings.Contains(st, "executed") {
			t.Fatalf("%s: tasks ran (%v):\n%s", name, err, st)
		}
	}
}

// TestZip: two datasets of the same rows in different block layouts (3
// and 7 blocks) zip row by row, a repeated column name gets _1, the maps
// after the zip fuse into its tasks; different row counts fail before
// any zip task runs.
func TestZip(t *testing.T) {
	ctx := start(t)
	left := data.Range(100).WithConfig(withParallelism(3))
	right := data.Range(100).WithConfig(withParallelism(7)).MapBatches(double)
	z := left.Zip(right).FilterFunc(even)
	rows, err := z.TakeAll(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 50 {
		t.Fatalf("%d rows, want 50", len(rows))
	}
	for i, r := range rows {
		if r["id"] != int64(2*i) || r["id_1"] != int64(2*i) || r["x"] != int64(4*i) || len(r) != 3 {
			t.Fatalf("row %d = %v", i, r)
		}
	}
	if st := z.Stats(); !strings.Contains(st, "zip->filter: 3/3 blocks") {
		t.Fatalf("stats:\n%s", st)
	}
	_, err = data.Range(10).Zip(data.Range(9)).Count(ctx)
	if !errors.Is(err, atoll.ErrInvalidArgument) || !strings.Contains(err.Error(), "10 and 9 rows") {
		t.Fatalf("zip of 10 and 9 rows: %v", err)
	}
}

// TestSplit: 1003 rows over 16 blocks split four ways: row counts within
// one of each other, every row once and in order, blocks cut only where
// a boundary falls inside them; four goroutines consume the splits at
// once.
func TestSplit(t *testing.T) {
	ctx := start(t)
	parts, err := data.Range(1003).MapBatches(double).Split(ctx, 4)
	if err != nil {
		t.Fatal(err)
	}
	got := make([][]int64, len(parts))
	errs := make([]error, len(parts))
	var wg sync.WaitGroup
	for i, p := range parts {
		wg.Go(func() {
			var rows []data.Row
			rows, errs[i] = p.TakeAll(ctx)
			for _, r := range rows {
				got[i] = append(got[i], r["id"].(int64))
			}
		})
	}
	wg.Wait()
	var all []int64
	for i, g := range got {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		if len(g) != 250 && len(g) != 251 {
			t.Fatalf("split %d has %d rows", i, len(g))
		}
		all = append(all, g...)
	}
	if !slices.Equal(all, seq(0, 1003)) {
		t.Fatalf("split rows out of order or lost")
	}
	// the 16 blocks end at rows 250, 501 and 752 (k·1003/16): four
	// splits share them whole; three (at 334 and 668) cut two of them
	blocks := 0
	for _, p := range parts {
		blocks += p.NumBlocks()
	}
	if blocks != 16 {
		t.Fatalf("four splits hold %d blocks, want the 16 whole", blocks)
	}
	three, err := data.Range(1003).Split(ctx, 3)
	if err != nil {
		t.Fatal(err)
	}
	blocks, all = 0, nil
	for _, p := range three {
		blocks += p.NumBlocks()
		rows, err := p.TakeAll(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) != 334 && len(rows) != 335 {
			t.Fatalf("a third has %d rows", len(rows))
		}
		all = append(all, ids(t, rows, "id")...)
	}
	if blocks != 18 || !slices.Equal(all, seq(0, 1003)) {
		t.Fatalf("three splits: %d blocks (want 18: two cut), rows in order %v", blocks, slices.Equal(all, seq(0, 1003)))
	}
	// more splits than rows: empty splits
	few, err := data.Range(2).Split(ctx, 3)
	if err != nil {
		t.Fatal(err)
	}
	var counts []int64
	for _, p := range few {
		n, err := p.Count(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		counts = append(counts, n)
	}
	if !slices.Equal(counts, []int64{0, 1, 1}) {
		t.Fatalf("Split(3) of 2 rows: %v", counts)
	}
	if _, err := data.Range(3).Split(ctx, 0); !errors.Is(err, atoll.ErrInvalidArgument) {
		t.Fatalf("Split(0): %v", err)
	}
}

// TestEmptyInputs: every all-to-all and combination of no rows runs and
// yields no rows (a sort of no rows used to fail sampling an empty block).
func TestEmptyInputs(t *testing.T) {
	ctx := start(t)
	for name, ds := range map[string]*data.Dataset{
		"Sort":             data.Range(0).Sort("id"),
		"SortBy":           data.Range(0).SortBy([]data.SortKey{data.Key("id", data.Descending())}),
		"GroupBy":          data.Range(0).GroupBy("id").Aggregate(data.Count(), data.Std("id")),
		"Limit(0)+GroupBy": data.Range(10).Limit(0).GroupBy("id").Count(),
		"RandomShuffle":    data.Range(0).RandomShuffle(1),
		"Union":            data.Range(0).Union(data.Range(0)),
		"Zip":              data.Range(0).Zip(data.Range(0)),
	} {
		if rows, err := ds.TakeAll(ctx); err != nil || len(rows) != 0 {
			t.Errorf("%s: %d rows, %v", name, len(rows), err)
		}
	}
	parts, err := data.Range(0).Split(ctx, 2)
	if err != nil || len(parts) != 2 {
		t.Fatalf("Split(2) of no rows: %d, %v", len(parts), err)
	}
}
