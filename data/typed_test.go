package data_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/atoll-runtime/atoll"
	"github.com/atoll-runtime/atoll/data"
)

// TestTypedRows: rows read back as the structs FromItems wrote, fields
// by tag or name, nulls into pointers; the field types are checked
// against the schema before any row, and every mismatch is a
// *data.ColumnError naming the field and the column.
func TestTypedRows(t *testing.T) {
	ctx := start(t)
	items := []item{{"a", 1.5, 10, 0}, {"b", 2.5, 20, 0}, {"c", 3.5, 30, 0}}
	ds, err := data.FromItems(ctx, items)
	if err != nil {
		t.Fatal(err)
	}
	got, err := data.TakeAllAs[item](ctx, ds)
	if err != nil || !slices.Equal(got, items) {
		t.Fatalf("TakeAllAs = %v, %v; want %v", got, err, items)
	}
	first, err := data.TakeAs[item](ctx, ds, 2)
	if err != nil || !slices.Equal(first, items[:2]) {
		t.Fatalf("TakeAs(2) = %v, %v", first, err)
	}
	// Show keeps the schema's (the struct's) order.
	var sb strings.Builder
	if err := ds.Show(ctx, &sb, 1); err != nil || sb.String() != "{name: a, score: 1.5, Age: 10}\n" {
		t.Fatalf("Show = %q, %v", sb.String(), err)
	}

	// A struct reading some of the columns, in another order, with
	// pointers for nulls and a wider integer.
	type partial struct {
		Age  *int64 `arrow:"Age"`
		Name string `arrow:"name"`
	}
	rows := []map[string]any{{"name": "x", "Age": int64(1)}, {"name": "y", "Age": nil}}
	withNull, err := data.FromItems(ctx, rows)
	if err != nil {
		t.Fatal(err)
	}
	ps, err := data.TakeAllAs[partial](ctx, withNull)
	if err != nil || len(ps) != 2 || ps[0].Name != "x" || ps[0].Age == nil || *ps[0].Age != 1 || ps[1].Name != "y" || ps[1].Age != nil {
		t.Fatalf("partial rows %+v, %v", ps, err)
	}

	check := func(name string, err error, want ...string) {
		t.Helper()
		var ce *data.ColumnError
		if !errors.As(err, &ce) || !errors.Is(err, atoll.ErrInvalidArgument) {
			t.Fatalf("%s: %v, want a *data.ColumnError", name, err)
		}
		for _, w := range want {
			if !strings.Contains(err.Error(), w) {
				t.Fatalf("%s: %q does not name %q", name, err, w)
			}
		}
	}
	type missing struct {
		Nme string `arrow:"nme"`
	}
	_, err = data.TakeAllAs[missing](ctx, ds)
	check("a missing column", err, `"nme"`, "name, score, Age")
	type wrongType struct {
		Age string
	}
	_, err = data.TakeAllAs[wrongType](ctx, ds)
	check("a string field of an int64 column", err, "field Age (string)", `"Age"`, "int64")
	type narrow struct {
		Age int32
	}
	_, err = data.TakeAllAs[narrow](ctx, ds)
	check("an int32 field of an int64 column", err, "field Age (int32)")
	type notPointer struct {
		Age int64
	}
	_, err = data.TakeAllAs[notPointer](ctx, withNull)
	check("a null into a non-pointer field", err, "row 1 is null", "pointer")
	if _, err := data.TakeAllAs[int](ctx, ds); !errors.Is(err, atoll.ErrInvalidArgument) {
		t.Fatalf("TakeAllAs[int]: %v, want ErrInvalidArgument", err)
	}
}
