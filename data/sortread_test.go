package data_test

import (
	"context"
	"encoding/binary"
	"math/rand/v2"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/atoll-runtime/atoll"
	"github.com/atoll-runtime/atoll/atolltest"
	"github.com/atoll-runtime/atoll/data"
	"github.com/atoll-runtime/atoll/data/expr"
)

// noise adds a column "noise" of 1 KiB of pseudo-random bytes a row,
// seeded by the row's id: a column Parquet cannot compress.
var noise = data.RegisterColumnFunc("test.noise", func(_ context.Context, rec arrow.RecordBatch) (arrow.Array, error) {
	ids := rec.Column(0).(*array.Int64)
	b := array.NewBinaryBuilder(memory.DefaultAllocator, arrow.BinaryTypes.Binary)
	defer b.Release()
	buf := make([]byte, 1024)
	for i := range ids.Len() {
		r := rand.New(rand.NewPCG(uint64(ids.Value(i)), 7))
		for j := 0; j < len(buf); j += 8 {
			binary.LittleEndian.PutUint64(buf[j:], r.Uint64())
		}
		b.Append(buf)
	}
	return b.NewArray(), nil
})

// TestSortRereadsItsInput: a sort of Parquet files about three times
// the store samples their key column alone, then reads them again to
// split them, so only the split's pieces pass through the store. Kept
// in the store between the two passes, the input would spill as well:
// about twice the bytes. Likewise after a filter, and after a select
// of every column (both passes then read every column).
func TestSortRereadsItsInput(t *testing.T) {
	ctx := start(t, atoll.WithObjectStoreMemory(8<<20))
	cfg := withParallelism(24)
	cfg.TargetMaxBlockSize = 2 << 20
	dir := filepath.Join(t.TempDir(), "in")
	if err := data.Range(sortRows).AddColumn("key", perm).AddColumn("noise", noise).WithConfig(cfg).WriteParquet(ctx, dir); err != nil {
		t.Fatal(err)
	}
	t.Run("keys alone", func(t *testing.T) {
		sortRereads(t, ctx, data.ReadParquet(dir).Sort("key", data.Partitions(24)).WithConfig(cfg), sortRows, true)
	})
	// a filter before the sort: the sample pass reads the columns of
	// its condition too (it keeps three rows of four: still more than
	// the store)
	t.Run("after a filter", func(t *testing.T) {
		ds := data.ReadParquet(dir).Filter(expr.Col("key").Lt(sortRows*3/4)).Sort("key", data.Partitions(12)).WithConfig(cfg)
		sortRereads(t, ctx, ds, sortRows*3/4, true)
	})
	// every column selected before the sort: both passes read every
	// column, for the input is larger than the run's budget
	t.Run("after a select", func(t *testing.T) {
		ds := data.ReadParquet(dir).Select("id", "key", "noise").Sort("key", data.Partitions(12)).WithConfig(cfg)
		sortRereads(t, ctx, ds, sortRows, false)
	})
}

// sortRereads checks that ds, a sort by key of the rows of keys 0 to
// rows-1 of TestSortRereadsItsInput's files, sorts them, spills about
// the rows' bytes at most (their pieces'), and reads the files twice: the sample pass the key
// column alone when keysAlone, every column otherwise.
func sortRereads(t *testing.T, ctx context.Context, ds *data.Dataset, rows int64, keysAlone bool) {
	before, err := atolltest.Memory(ctx)
	if err != nil {
		t.Fatal(err)
	}
	checkPermSorted(t, ctx, ds, rows)
	after, err := atolltest.Memory(ctx)
	if err != nil {
		t.Fatal(err)
	}
	stats := ds.Stats()
	t.Logf("spilled %d bytes\n%s", after.SpilledBytesTotal-before.SpilledBytesTotal, stats)
	file := float64(sortRows * (1024 + 8 + 8)) // the files' bytes
	size := uint64(rows * (1024 + 8 + 8))      // the rows sorted
	switch spilled := after.SpilledBytesTotal - before.SpilledBytesTotal; {
	case spilled == 0:
		t.Fatalf("nothing spilled: the test no longer exceeds the store")
	case spilled > size*5/4: // the pieces' own spill, with their encoding's overhead
		t.Fatalf("spilled %d bytes, more than the %d bytes sorted: the input passed through the store", spilled, size)
	}
	read := regexp.MustCompile(`Substage \d+ (sort_sample|sort_map):[^\n]*\n(?:\*[^\n]*\n)*?\* Read by tasks: ([0-9.]+) MB`).FindAllStringSubmatch(stats, -1)
	if len(read) != 2 || read[0][1] != "sort_sample" || read[1][1] != "sort_map" {
		t.Fatalf("stats without the sample's and the split's reads:\n%s", stats)
	}
	sampled, _ := strconv.ParseFloat(read[0][2], 64)
	split, _ := strconv.ParseFloat(read[1][2], 64)
	if split < file/1e6 || (keysAlone && sampled*20 > split) || (!keysAlone && sampled < file/1e6) {
		t.Fatalf("the sample pass read %.1f MB, the split pass %.1f MB (files of %.0f bytes)", sampled, split, file)
	}
}
