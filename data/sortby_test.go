package data_test

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/atoll-runtime/atoll"
	"github.com/atoll-runtime/atoll/data"
)

// TestSortByKeys: a sort by an int64 key ascending, then a string key
// descending (with nulls, last), then a float key, over 16 blocks into 4
// ranges, holds every row in that order; Sort by one column still works
// through SortBy, and misuse of the options is an ErrInvalidArgument.
func TestSortByKeys(t *testing.T) {
	ctx := start(t)
	items := make([]map[string]any, 3000)
	for i := range items {
		var b any = fmt.Sprintf("s%02d", (i*31)%17)
		if i%23 == 0 {
			b = nil
		}
		items[i] = map[string]any{"a": int64((i * 7) % 5), "b": b, "c": float64((i*13)%101) / 4, "i": int64(i)}
	}
	ds, err := data.FromItems(ctx, items)
	if err != nil {
		t.Fatal(err)
	}
	sorted := ds.SortBy([]data.SortKey{data.Key("a"), data.Key("b", data.Descending()), data.Key("c")}, data.Partitions(4))
	rows, err := sorted.TakeAll(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != len(items) {
		t.Fatalf("%d rows, want %d", len(rows), len(items))
	}
	order := func(x, y data.Row) int {
		if c := cmp.Compare(x["a"].(int64), y["a"].(int64)); c != 0 {
			return c
		}
		xb, xok := x["b"].(string)
		yb, yok := y["b"].(string)
		switch {
		case !xok && !yok:
		case !xok:
			return 1 // nulls last, descending too
		case !yok:
			return -1
		case xb != yb:
			return -strings.Compare(xb, yb)
		}
		return cmp.Compare(x["c"].(float64), y["c"].(float64))
	}
	for i := 1; i < len(rows); i++ {
		if order(rows[i-1], rows[i]) > 0 {
			t.Fatalf("rows %d and %d out of order: %v then %v", i-1, i, rows[i-1], rows[i])
		}
	}
	seen := ids(t, rows, "i")
	slices.Sort(seen)
	for i, v := range seen {
		if v != int64(i) {
			t.Fatalf("row %d lost or repeated", i)
		}
	}
	if st := sorted.Stats(); !strings.Contains(st, "Substage 2 sort_reduce: 4/4 blocks") {
		t.Fatalf("stats:\n%s", st)
	}
	// descending by one column through Sort
	rows, err = ds.Sort("i", data.Descending()).Limit(2).TakeAll(ctx)
	if err != nil || !slices.Equal(ids(t, rows, "i"), []int64{2999, 2998}) {
		t.Fatalf("Sort(i, Descending): %v, %v", rows, err)
	}
	for name, bad := range map[string]*data.Dataset{
		"no key":               ds.SortBy(nil),
		"Partitions in a Key":  ds.SortBy([]data.SortKey{data.Key("a", data.Partitions(2))}),
		"Descending in SortBy": ds.SortBy([]data.SortKey{data.Key("a")}, data.Descending()),
		"repeated key":         ds.SortBy([]data.SortKey{data.Key("a"), data.Key("a", data.Descending())}),
	} {
		if _, err := bad.Count(ctx); !errors.Is(err, atoll.ErrInvalidArgument) {
			t.Errorf("%s: %v, want ErrInvalidArgument", name, err)
		}
	}
}
