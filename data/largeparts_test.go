package data_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/atoll-runtime/atoll"
	"github.com/atoll-runtime/atoll/data"
)

// TestPartsLargerThanTheStore: a Sort, a RandomShuffle and a Repartition
// into one part, of about three times the store, complete.
// Each used to give its one reduce task everything, which failed with
// "object store full" after 40 s: a sort now takes more ranges, a
// shuffle or a grouping cuts the part again, a repartition concatenates
// it in several tasks. A shuffle whose input's size is known before its
// maps (stored blocks) takes more parts at once, as a sort does.
func TestPartsLargerThanTheStore(t *testing.T) {
	ctx := start(t, atoll.WithObjectStoreMemory(8<<20))
	cfg := withParallelism(24)
	cfg.TargetMaxBlockSize = 2 << 20
	in := data.Range(sortRows).AddColumn("pad", pad)
	stored, err := in.WithConfig(cfg).Materialize(ctx) // blocks whose sizes are known before the maps
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		ds   *data.Dataset
		// ordered: the ids must come back as 0, 1, 2, ...; else each once
		ordered bool
		note    string
	}{
		{"sort", in.Sort("id", data.Partitions(1)), true, "* Sort: 48 parts, not 1: "},
		{"repartition", in.Repartition(1), true, "* Repartition: 1 of 1 parts concatenated by 24 tasks"},
		{"random shuffle", in.RandomShuffle(7, data.Partitions(1)), false, "* RandomShuffle: 1 of 1 parts cut again, into 48"},
		{"random shuffle of stored blocks", stored.RandomShuffle(7, data.Partitions(1)), false, "* RandomShuffle: 48 parts, not 1: "},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ds := c.ds.WithConfig(cfg)
			ids := readIDs(t, ctx, ds)
			if len(ids) != sortRows {
				t.Fatalf("%d rows, want %d", len(ids), sortRows)
			}
			inOrder := slices.IsSorted(ids)
			if c.ordered && !inOrder {
				t.Fatal("rows out of order")
			}
			if !c.ordered && inOrder {
				t.Fatal("the shuffle left the rows in order")
			}
			slices.Sort(ids)
			for i, id := range ids {
				if id != int64(i) {
					t.Fatalf("sorted ids: %d at %d (a row lost or doubled)", id, i)
				}
			}
			if st := ds.Stats(); !strings.Contains(st, c.note) {
				t.Fatalf("no %q in the stats:\n%s", c.note, st)
			}
		})
	}
}

// TestGroupIntoOnePartLargerThanTheStore: a grouping with a group per row
// into one part: its partial aggregates (1.5 M groups, ~48 MB, three
// times the store) are cut again by a second hash. (A test of its own, not
// a case of the one above: each gets its own deadline, which CI's loaded
// lanes need.)
func TestGroupIntoOnePartLargerThanTheStore(t *testing.T) {
	ctx := start(t, atoll.WithObjectStoreMemory(16<<20))
	cfg := withParallelism(24)
	cfg.TargetMaxBlockSize = 4 << 20
	const groups = 1_500_000
	ds := data.Range(groups).GroupBy("id").NumPartitions(1).Aggregate(data.Count(), data.Sum("id")).WithConfig(cfg)
	seen := make([]bool, groups)
	var n int
	for rec, err := range ds.IterBatches(ctx, 0) {
		if err != nil {
			t.Fatal(err)
		}
		ids, counts, sums := rec.Column(0).(*array.Int64), rec.Column(1).(*array.Int64), rec.Column(2).(*array.Int64)
		for i := range ids.Len() {
			id := ids.Value(i)
			if id < 0 || id >= groups || seen[id] || counts.Value(i) != 1 || sums.Value(i) != id {
				t.Fatalf("group %d: count %d, sum %d (seen before: %v)", id, counts.Value(i), sums.Value(i), id >= 0 && id < groups && seen[id])
			}
			seen[id] = true
			n++
		}
	}
	if n != groups {
		t.Fatalf("%d groups, want %d", n, groups)
	}
	if st, note := ds.Stats(), "* GroupBy: 1 of 1 parts cut again, into "; !strings.Contains(st, note) {
		t.Fatalf("no %q in the stats:\n%s", note, st)
	}
}

// TestBlockLargerThanTheStore: one read task whose rows are three times
// the store (a Range in one task, a column added) splits them into blocks
// the store can hold, whatever TargetMaxBlockSize says: it used to make
// one 24 MiB block, which no store of 8 MiB could take.
func TestBlockLargerThanTheStore(t *testing.T) {
	ctx := start(t, atoll.WithObjectStoreMemory(8<<20))
	cfg := withParallelism(1)
	cfg.TargetMaxBlockSize = 1 << 30
	ds := data.Range(sortRows).AddColumn("pad", pad).WithConfig(cfg)
	ids := readIDs(t, ctx, ds)
	for i, id := range ids {
		if id != int64(i) {
			t.Fatalf("id %d at %d", id, i)
		}
	}
	if len(ids) != sortRows {
		t.Fatalf("%d rows, want %d", len(ids), sortRows)
	}
}

// times60 repeats its batch's rows 60 times.
var times60 = data.RegisterBatchFunc("test.times60", func(_ context.Context, rec arrow.RecordBatch) (arrow.RecordBatch, error) {
	cols := make([]arrow.Array, rec.NumCols())
	for c := range cols {
		parts := make([]arrow.Array, 60)
		for i := range parts {
			parts[i] = rec.Column(c)
		}
		a, err := array.Concatenate(parts, memory.DefaultAllocator)
		if err != nil {
			return nil, err
		}
		defer a.Release()
		cols[c] = a
	}
	return array.NewRecordBatch(rec.Schema(), cols, rec.NumRows()*60), nil
})

// TestFirstTaskThatMultipliesItsRows: a stream's first task, whose
// output per input byte is not known yet, may cut its output into as many
// blocks as any task. A batch function making 144 MB of 2.4 MB in one
// task used to fill its eight blocks with 18 MB each, more than a 16 MiB
// store holds.
func TestFirstTaskThatMultipliesItsRows(t *testing.T) {
	ctx := start(t, atoll.WithObjectStoreMemory(16<<20))
	ds := data.Range(2400).AddColumn("pad", pad).WithConfig(withParallelism(1)).MapBatches(times60)
	counts := make([]int, 2400)
	for rec, err := range ds.IterBatches(ctx, 0) {
		if err != nil {
			t.Fatal(err)
		}
		for _, id := range rec.Column(0).(*array.Int64).Int64Values() {
			counts[id]++
		}
	}
	for id, n := range counts {
		if n != 60 {
			t.Fatalf("id %d came %d times, want 60", id, n)
		}
	}
}

// TestFilteredSortKeepsItsRanges: a sort that reads its input twice, with
// a filter before it that keeps a little of a large input, keeps the
// ranges asked: the input's size says nothing of what the filter keeps,
// and raising the ranges for it would make thousands of nearly empty
// blocks.
func TestFilteredSortKeepsItsRanges(t *testing.T) {
	ctx := start(t, atoll.WithObjectStoreMemory(16<<20))
	ds := data.Range(4_000_000).WithConfig(withParallelism(8)).Filter(col("id").Lt(1000)).Sort("id", data.Partitions(1))
	ids := readIDs(t, ctx, ds)
	if len(ids) != 1000 || !slices.IsSorted(ids) || ids[0] != 0 || ids[999] != 999 {
		t.Fatalf("%d ids, sorted %v", len(ids), slices.IsSorted(ids))
	}
	if st := ds.Stats(); strings.Contains(st, "* Sort: ") || !strings.Contains(st, "sort_reduce: 1/1 ") {
		t.Fatalf("the ranges were raised, or not one merge task:\n%s", st)
	}
}

// TestFilteredSortCutsItsRange: the same sort with a filter that keeps
// most rows (1.75 M of 2 M, 14 MB under an 8 MiB store): its one range,
// chosen before the split, is more than a merge task can hold, and is
// cut again after the split by a sample and a split of its own pieces.
// It used to fail with "object store full".
func TestFilteredSortCutsItsRange(t *testing.T) {
	ctx := start(t, atoll.WithObjectStoreMemory(8<<20))
	const kept = 1_750_000
	ds := data.Range(2_000_000).WithConfig(withParallelism(8)).Filter(col("id").Lt(kept)).Sort("id", data.Partitions(1), data.Descending())
	ids := readIDs(t, ctx, ds)
	for i, id := range ids {
		if id != kept-1-int64(i) {
			t.Fatalf("id %d at %d", id, i)
		}
	}
	if len(ids) != kept {
		t.Fatalf("%d rows, want %d", len(ids), kept)
	}
	if st, note := ds.Stats(), "* Sort: 1 of 1 ranges cut again, into "; !strings.Contains(st, note) {
		t.Fatalf("no %q in the stats:\n%s", note, st)
	}
}

// readIDs reads ds to its end and returns its first column, the ids, in
// the order they came.
func readIDs(t *testing.T, ctx context.Context, ds *data.Dataset) []int64 {
	t.Helper()
	var ids []int64
	for rec, err := range ds.IterBatches(ctx, 0) {
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, rec.Column(0).(*array.Int64).Int64Values()...)
	}
	return ids
}
