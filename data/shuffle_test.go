package data_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/atoll-runtime/atoll/data"
)

// TestRandomShuffle: a seeded shuffle is a permutation of the rows, the
// same one run after run for the same seed and blocks, another for
// another seed; it keeps the input's block count (16 read tasks) unless
// Partitions says otherwise, and fuses with the maps before it.
func TestRandomShuffle(t *testing.T) {
	ctx := start(t)
	const n = 2000
	run := func(ds *data.Dataset) []int64 {
		t.Helper()
		rows, err := ds.TakeAll(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return ids(t, rows, "id")
	}
	ds := data.Range(n).MapBatches(double).RandomShuffle(7)
	a, b := run(ds), run(ds)
	if !slices.Equal(a, b) {
		t.Fatalf("two runs of RandomShuffle(7) differ")
	}
	if c := run(data.Range(n).MapBatches(double).RandomShuffle(8)); slices.Equal(a, c) {
		t.Fatalf("RandomShuffle(8) gave RandomShuffle(7)'s order")
	}
	sorted := slices.Clone(a)
	slices.Sort(sorted)
	if slices.Equal(a, sorted) {
		t.Fatalf("the shuffle kept the order")
	}
	for i, v := range sorted {
		if v != int64(i) {
			t.Fatalf("shuffled rows lost or repeated at %d", i)
		}
	}
	// the first rows come from many input blocks (125 rows a block)
	from := map[int64]bool{}
	for _, v := range a[:100] {
		from[v/125] = true
	}
	if len(from) < 8 {
		t.Fatalf("the first 100 rows come from %d of 16 input blocks", len(from))
	}
	st := ds.Stats()
	for _, w := range []string{"Stage 1 read->map_batches->random_shuffle:", "Substage 0 random_shuffle_map: 16/16 blocks",
		"Substage 1 random_shuffle_reduce: 16/16 blocks"} {
		if !strings.Contains(st, w) {
			t.Fatalf("stats lack %q:\n%s", w, st)
		}
	}
	m, err := data.Range(n).RandomShuffle(1, data.Partitions(5)).Materialize(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if m.NumBlocks() != 5 {
		t.Fatalf("Partitions(5): %d blocks", m.NumBlocks())
	}
	if c, err := m.Count(ctx); err != nil || c != n {
		t.Fatalf("Count %d, %v", c, err)
	}
}
