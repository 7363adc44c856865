package data_test

import (
	"context"
	"regexp"
	"strconv"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/atoll-runtime/atoll"
	"github.com/atoll-runtime/atoll/data"
)

var (
	// oneKey adds a column "key" of zeros.
	oneKey = data.RegisterColumnFunc("test.onekey", func(_ context.Context, rec arrow.RecordBatch) (arrow.Array, error) {
		b := array.NewInt64Builder(memory.DefaultAllocator)
		defer b.Release()
		for range rec.NumRows() {
			b.Append(0)
		}
		return b.NewArray(), nil
	})
	// mostlyNull adds a column "key": the id for one row in four, null
	// for the others.
	mostlyNull = data.RegisterColumnFunc("test.mostlynull", func(_ context.Context, rec arrow.RecordBatch) (arrow.Array, error) {
		ids := rec.Column(0).(*array.Int64)
		b := array.NewInt64Builder(memory.DefaultAllocator)
		defer b.Release()
		for i := range ids.Len() {
			if id := ids.Value(i); id%4 == 0 {
				b.Append(id)
			} else {
				b.AppendNull()
			}
		}
		return b.NewArray(), nil
	})
)

// TestSortOfFrequentKeys: a sort about three times the store whose key
// is one value in every row, or null in three rows of four, completes:
// rows equal to several bounds spread over their ranges, where they
// used to make one merge task whose input did not fit the store.
func TestSortOfFrequentKeys(t *testing.T) {
	ctx := start(t, atoll.WithObjectStoreMemory(8<<20))
	cfg := withParallelism(24)
	cfg.TargetMaxBlockSize = 2 << 20
	for name, key := range map[string]*data.ColumnFunc{"one key": oneKey, "mostly null": mostlyNull} {
		t.Run(name, func(t *testing.T) {
			ds := data.Range(sortRows).AddColumn("key", key).AddColumn("pad", pad).Sort("key", data.Partitions(24)).WithConfig(cfg)
			var n int64
			last, nulls := int64(-1), false
			for rec, err := range ds.IterBatches(ctx, 0) {
				if err != nil {
					t.Fatal(err)
				}
				keys := rec.Column(1).(*array.Int64)
				for i := range keys.Len() {
					switch {
					case keys.IsNull(i):
						nulls = true
					case nulls || keys.Value(i) < last:
						t.Fatalf("key %d at row %d, after %d (nulls before: %v)", keys.Value(i), n+int64(i), last, nulls)
					default:
						last = keys.Value(i)
					}
				}
				n += rec.NumRows()
			}
			if n != sortRows {
				t.Fatalf("%d rows sorted, want %d", n, sortRows)
			}
			stats := ds.Stats()
			m := regexp.MustCompile(`Substage \d+ sort_reduce:[^\n]*\n(?:\*[^\n]*\n)*?\* Output num rows: \d+ min, (\d+) max`).FindStringSubmatch(stats)
			if m == nil {
				t.Fatalf("no merge tasks' rows in the stats:\n%s", stats)
			}
			if most, _ := strconv.Atoi(m[1]); most > sortRows/8 {
				t.Fatalf("a merge task sorted %d of %d rows:\n%s", most, sortRows, stats)
			}
		})
	}
}
