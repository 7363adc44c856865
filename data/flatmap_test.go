package data_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/atoll-runtime/atoll"
	"github.com/atoll-runtime/atoll/data"
)

// repeat returns id copies of a row {id, k} for k in 0..id-1: row 0
// yields nothing, row 3 three rows.
var repeat = data.RegisterFlatMapFunc("test.repeat", func(_ context.Context, r data.Row) ([]data.Row, error) {
	id := r["id"].(int64)
	var out []data.Row
	for k := range id {
		out = append(out, data.Row{"id": id, "k": k, "tag": fmt.Sprint(id, ".", k)})
	}
	return out, nil
})

var flatFail = data.RegisterFlatMapFunc("test.flatFail", func(_ context.Context, r data.Row) ([]data.Row, error) {
	return nil, errors.New("flat boom")
})

// TestFlatMap: each row becomes zero or more rows, in order, fused with
// the read and the filter after it.
func TestFlatMap(t *testing.T) {
	ctx := start(t)
	ds := data.Range(6).WithConfig(withParallelism(3)).FlatMap(repeat).FilterFunc(even)
	rows, err := ds.TakeAll(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// rows of 1..5 repeated id times, keeping even ids: 2 twice, 4 four times
	want := []string{"2.0", "2.1", "4.0", "4.1", "4.2", "4.3"}
	var got []string
	for _, r := range rows {
		got = append(got, r["tag"].(string))
	}
	if !slices.Equal(got, want) {
		t.Fatalf("FlatMap rows %v, want %v", got, want)
	}
	if st := ds.Stats(); !strings.Contains(st, "Stage 1 read->flat_map->filter: 3/3 blocks") {
		t.Fatalf("FlatMap did not fuse:\n%s", st)
	}
	if n, err := data.Range(6).FlatMap(repeat).Count(ctx); err != nil || n != 15 {
		t.Fatalf("Count = %d, %v; want 15", n, err)
	}
	if _, err := data.Range(3).FlatMap(nil).Count(ctx); !errors.Is(err, atoll.ErrInvalidArgument) {
		t.Fatalf("FlatMap(nil): %v", err)
	}
	var te *atoll.TaskError
	if _, err := data.Range(3).FlatMap(flatFail).Count(ctx); !errors.As(err, &te) || !strings.Contains(err.Error(), "flat boom") {
		t.Fatalf("a failing flat map: %v", err)
	}
}
