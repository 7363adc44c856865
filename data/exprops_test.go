package data_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/atoll-runtime/atoll"
	"github.com/atoll-runtime/atoll/data"
	"github.com/atoll-runtime/atoll/data/expr"
)

var col = expr.Col

// Filter, WithColumn, SelectExprs and aggregations over expressions,
// against the same computed in Go.
func TestExpressionOperations(t *testing.T) {
	ctx := start(t)
	ds := data.Range(1000).
		WithColumn("x", col("id").Mul(3).Mod(7)).
		Filter(col("x").Gt(3).And(col("id").Lt(900))).
		SelectExprs(col("id"), col("x").Cast(arrow.PrimitiveTypes.Float64).Div(2).As("half"),
			expr.When(col("id").Mod(2).Eq(0)).Then("even").Otherwise("odd").As("parity"))
	rows, err := ds.TakeAll(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for id := range int64(900) {
		if x := id * 3 % 7; x > 3 {
			want = append(want, fmt.Sprintf("%d %g %s", id, float64(x)/2, map[bool]string{true: "even", false: "odd"}[id%2 == 0]))
		}
	}
	var got []string
	for _, r := range rows {
		got = append(got, fmt.Sprintf("%d %g %s", r["id"], r["half"], r["parity"]))
	}
	if !slices.Equal(got, want) {
		t.Fatalf("got %d rows %v..., want %d %v...", len(got), head(got), len(want), head(want))
	}
	s, err := ds.Schema(ctx)
	if err != nil || s.String() != arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "half", Type: arrow.PrimitiveTypes.Float64, Nullable: true}, {Name: "parity", Type: arrow.BinaryTypes.String, Nullable: true}}, nil).String() {
		t.Fatalf("schema %v, %v", s, err)
	}

	agg := data.Range(1000).WithColumn("k", col("id").Mod(10)).GroupBy("k").
		Aggregate(data.Count(), col("id").Mul(2).Sum().As("s2"), col("id").Gt(500).Cast(arrow.PrimitiveTypes.Int64).Sum().As("big"),
			expr.When(col("id").Lt(100)).Then(col("id")).End().Count().As("small"), col("id").Max())
	rows, err = agg.Sort("k").TakeAll(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 10 {
		t.Fatalf("%d groups", len(rows))
	}
	for _, r := range rows {
		k := r["k"].(int64)
		var s2, big, small int64
		for id := k; id < 1000; id += 10 {
			s2 += 2 * id
			if id > 500 {
				big++
			}
			if id < 100 {
				small++
			}
		}
		if r["count()"] != int64(100) || r["s2"] != s2 || r["big"] != big || r["small"] != small || r["max(id)"] != 990+k {
			t.Errorf("group %d: %v, want s2 %d big %d small %d", k, r, s2, big, small)
		}
	}
}

// The numeric and string functions, in worker processes, against Go's.
func TestExpressionFunctions(t *testing.T) {
	ctx := start(t)
	tag := col("name").Trim().Concat("#", col("name").Slice(-2, 1)).Replace("B", "b")
	cols := []expr.Expr{col("id"), col("id").Sub(100).Abs().As("abs"),
		col("id").Cast(arrow.PrimitiveTypes.Float64).Div(7).Round(2).As("r"), col("id").Pow(0.5).Floor().As("root"),
		col("name").Trim().Lower().As("who"), col("name").Upper().Len().As("n"), tag.As("tag")}
	ds := data.Range(300).
		WithColumn("name", expr.When(col("id").Mod(3).Eq(0)).Then("  Bob ").Otherwise("ÉVE")).
		SelectExprs(cols...).
		Filter(col("id").Log().Gt(1)) // ids from 3 (log 0 is -Inf)
	rows, err := ds.TakeAll(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var got, want []string
	for _, r := range rows {
		got = append(got, fmt.Sprintf("%v %v %v %v %v %v %v", r["id"], r["abs"], r["r"], r["root"], r["who"], r["n"], r["tag"]))
	}
	for id := int64(3); id < 300; id++ {
		who, n, tag := "éve", 3, "ÉVE#V"
		if id%3 == 0 {
			who, n, tag = "bob", 6, "bob#b"
		}
		want = append(want, fmt.Sprintf("%v %v %v %v %v %v %v", id, max(id-100, 100-id), math.Round(float64(id)/7*100)/100,
			math.Floor(math.Sqrt(float64(id))), who, n, tag))
	}
	if !slices.Equal(got, want) {
		t.Fatalf("got %d rows %v..., want %d %v...", len(got), head(got), len(want), head(want))
	}
}

func head(s []string) []string { return s[:min(3, len(s))] }

// A plan that does not fit its schema fails before any task runs, with
// an error naming the column or the type.
func TestExpressionErrorsAtPlanTime(t *testing.T) {
	ctx := start(t)
	items, err := data.FromItems(ctx, []struct {
		ID   int64
		Name string
	}{{1, "a"}, {2, "b"}})
	if err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]struct {
		ds     *data.Dataset
		column string
		typ    string
	}{
		"typo":          {items.Filter(col("Nmae").Eq("a")), "Nmae", ""},
		"string plus 1": {items.WithColumn("n", col("Name").Add(1)), "Name", "string"},
		"not a bool":    {items.Filter(col("ID").Add(1)), "", "int64"},
		"sum of text":   {items.GroupBy("ID").Aggregate(col("Name").Sum()), "Name", "utf8"},
		"late typo":     {items.WithColumn("x", col("ID").Mul(2)).Filter(col("y").Gt(1)), "y", ""},
	} {
		_, err := c.ds.Count(ctx)
		var ee *expr.Error
		var ce *data.ColumnError
		switch {
		case errors.As(err, &ee):
			if ee.Column != c.column || ee.Type != c.typ {
				t.Errorf("%s: %v (%+v), want column %q type %q", name, err, ee, c.column, c.typ)
			}
		case errors.As(err, &ce):
			if ce.Column != c.column || ce.Type != c.typ {
				t.Errorf("%s: %v (%+v), want column %q type %q", name, err, ce, c.column, c.typ)
			}
		default:
			t.Errorf("%s: %v, want an *expr.Error or a *data.ColumnError", name, err)
		}
		if !errors.Is(err, atoll.ErrInvalidArgument) || errors.Is(err, atoll.ErrTask) {
			t.Errorf("%s: %v: want an ErrInvalidArgument from the plan, not a task's", name, err)
		}
		if st := c.ds.Stats(); st != "" {
			t.Errorf("%s: stages ran:\n%s", name, st)
		}
	}
}

// An expression that fails in a task (a cast of text that is no number)
// names itself and its operation.
func TestExpressionFailsInTask(t *testing.T) {
	ctx := start(t)
	items, err := data.FromItems(ctx, []struct{ S string }{{"1"}, {"x"}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = items.WithColumn("n", col("S").Cast(arrow.PrimitiveTypes.Int64)).Count(ctx)
	var fe *data.FunctionError
	if !errors.As(err, &fe) || fe.Op != "with_column" || fe.Func != `col("S").cast(int64)` || !errors.Is(err, atoll.ErrTask) {
		t.Fatalf("%v, FunctionError %+v", err, fe)
	}
}

// writeGroups writes a Parquet file of groups row groups of 100 rows:
// id (0..), key (id / 100), name, and a 200-byte payload.
func writeGroups(t *testing.T, path string, groups int) {
	t.Helper()
	s := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}, {Name: "key", Type: arrow.PrimitiveTypes.Int64},
		{Name: "name", Type: arrow.BinaryTypes.String}, {Name: "payload", Type: arrow.BinaryTypes.String}}, nil)
	writeRowGroups(t, path, s, nil, pqarrow.DefaultWriterProps(), groups, func(b *array.RecordBuilder, g int) {
		for i := range 100 {
			id := int64(g*100 + i)
			b.Field(0).(*array.Int64Builder).Append(id)
			b.Field(1).(*array.Int64Builder).Append(id / 100)
			b.Field(2).(*array.StringBuilder).Append(fmt.Sprintf("n%04d", id))
			b.Field(3).(*array.StringBuilder).Append(strings.Repeat("p", 200))
		}
	})
}

// writeRowGroups writes a Parquet file of schema s with the writer
// properties given, a row group for each of groups records that fill
// makes, and checks that the file has that many row groups.
func writeRowGroups(t *testing.T, path string, s *arrow.Schema, props *parquet.WriterProperties, arrowProps pqarrow.ArrowWriterProperties,
	groups int, fill func(b *array.RecordBuilder, g int)) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	fw, err := pqarrow.NewFileWriter(s, f, props, arrowProps)
	if err != nil {
		t.Fatal(err)
	}
	for g := range groups {
		b := array.NewRecordBuilder(memory.DefaultAllocator, s)
		fill(b, g)
		rec := b.NewRecordBatch()
		b.Release()
		if err := fw.Write(rec); err != nil {
			t.Fatal(err)
		}
		rec.Release()
	}
	if err := fw.Close(); err != nil {
		t.Fatal(err)
	}
	pf, err := file.OpenParquetFile(path, false)
	if err != nil {
		t.Fatal(err)
	}
	defer pf.Close()
	if n := pf.NumRowGroups(); n != groups {
		t.Fatalf("%d row groups written, want %d", n, groups)
	}
}

// A Parquet read takes only the columns the plan uses, and no row group
// whose statistics rule out the filter; Stats says so.
func TestParquetPushdown(t *testing.T) {
	ctx := start(t)
	path := filepath.Join(t.TempDir(), "t.parquet")
	writeGroups(t, path, 4)
	ds := data.ReadParquet(path).Filter(col("id").Ge(250).And(col("name").StartsWith("n0"))).
		WithColumn("k2", col("key").Mul(2)).SelectExprs(col("id"), col("k2"))
	rows, err := ds.TakeAll(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 150 || rows[0]["id"] != int64(250) || rows[0]["k2"] != int64(4) || len(rows[0]) != 2 {
		t.Fatalf("%d rows, first %v", len(rows), rows[0])
	}
	st := ds.Stats()
	for _, want := range []string{"columns id, key, name (3 of 4)", "row groups 2 read, 2 skipped by statistics",
		`Pushed down: (col("id") >= 250) && col("name").starts_with("n0")`} {
		if !strings.Contains(st, want) {
			t.Errorf("stats lack %q:\n%s", want, st)
		}
	}
	// nothing to skip by: every row group, every column
	all := data.ReadParquet(path).FilterFunc(even)
	if n, err := all.Count(ctx); err != nil || n != 200 {
		t.Fatalf("%d rows, %v", n, err)
	}
	if st := all.Stats(); !strings.Contains(st, "all 4 columns; row groups 4 read, 0 skipped") {
		t.Errorf("stats:\n%s", st)
	}
	// a WithColumn over a file's column: its filter is not pushed down
	over := data.ReadParquet(path).WithColumn("id", col("id").Neg()).Filter(col("id").Lt(-250))
	if n, err := over.Count(ctx); err != nil || n != 149 {
		t.Fatalf("%d rows, %v", n, err)
	}
	if st := over.Stats(); !strings.Contains(st, "row groups 4 read, 0 skipped") {
		t.Errorf("stats:\n%s", st)
	}
}

// identity returns its argument as it is, which BatchFunc allows.
var identity = data.RegisterBatchFunc("test.identity", func(_ context.Context, rec arrow.RecordBatch) (arrow.RecordBatch, error) {
	return rec, nil
})

// Columns a task reads or computes come from the Arrow pool, which takes
// a buffer back when its array is released and (in tests) poisons it: a
// function returning its argument must not have it released under it,
// and every value read back is the one written.
func TestPooledColumnsSurviveTheirTask(t *testing.T) {
	ctx := start(t)
	path := filepath.Join(t.TempDir(), "t.parquet")
	writeGroups(t, path, 4)
	ds := data.ReadParquet(path).MapBatches(identity).WithColumn("k2", col("key").Mul(2)).MapBatches(identity)
	rows, err := ds.TakeAll(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 400 {
		t.Fatalf("%d rows, want 400", len(rows))
	}
	want := strings.Repeat("p", 200)
	for i, r := range rows {
		id := int64(i)
		if r["id"] != id || r["k2"] != 2*(id/100) || r["name"] != fmt.Sprintf("n%04d", id) || r["payload"] != want {
			t.Fatalf("row %d: id %v k2 %v name %v payload %.20q...", i, r["id"], r["k2"], r["name"], r["payload"])
		}
	}
}

// Unique: the distinct values in order, a null last, through the
// shuffle; a column that is not there is the plan's error.
func TestUnique(t *testing.T) {
	ctx := start(t)
	type item struct {
		City *string
		N    int64
	}
	str := func(s string) *string { return &s }
	var items []item
	for i := range 500 {
		c := []*string{str("paris"), str("lyon"), nil, str("berlin")}[i%4]
		items = append(items, item{City: c, N: int64(i % 7)})
	}
	ds, err := data.FromItems(ctx, items)
	if err != nil {
		t.Fatal(err)
	}
	ds = ds.Repartition(3)
	cities, err := ds.Unique(ctx, "City")
	if err != nil || fmt.Sprint(cities) != "[berlin lyon paris <nil>]" {
		t.Fatalf("unique cities %v, %v", cities, err)
	}
	ns, err := ds.Unique(ctx, "N")
	if err != nil || fmt.Sprint(ns) != "[0 1 2 3 4 5 6]" {
		t.Fatalf("unique numbers %v, %v", ns, err)
	}
	if _, err := ds.Unique(ctx, "country"); !errors.Is(err, atoll.ErrInvalidArgument) {
		t.Fatalf("unique of no column: %v", err)
	}
}

// RenameColumns renames in place, without a copy; reads still leave out
// what the plan does not use, by the file's names, and a filter on a
// renamed column is not taken for the file's column of that name.
func TestRenameColumns(t *testing.T) {
	ctx := start(t)
	path := filepath.Join(t.TempDir(), "t.parquet")
	writeGroups(t, path, 4)
	swap := map[string]string{"id": "key", "key": "id", "name": "label"}
	ds := data.ReadParquet(path).RenameColumns(swap).Filter(col("key").Ge(250)).Select("label", "key")
	rows, err := ds.TakeAll(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 150 || rows[0]["label"] != "n0250" || rows[0]["key"] != int64(250) || len(rows[0]) != 2 {
		t.Fatalf("%d rows, first %v", len(rows), rows[0])
	}
	st := ds.Stats()
	if !strings.Contains(st, "columns id, name (2 of 4)") || !strings.Contains(st, "row groups 4 read, 0 skipped") || strings.Contains(st, "Pushed down") {
		t.Errorf("stats:\n%s", st)
	}
	// a filter before the rename is pushed down; the order of the
	// columns is kept
	before := data.ReadParquet(path).Filter(col("key").Ge(2)).RenameColumns(swap)
	var show strings.Builder
	if err := before.Show(ctx, &show, 1); err != nil {
		t.Fatal(err)
	}
	if first, _, _ := strings.Cut(show.String(), "\n"); !strings.HasPrefix(first, "{key: 200, id: 2, label: n0200, payload: ") {
		t.Errorf("Show: %q", first)
	}
	if n, err := before.Count(ctx); err != nil || n != 200 {
		t.Fatalf("%d rows, %v", n, err)
	}
	if st := before.Stats(); !strings.Contains(st, "row groups 2 read, 2 skipped by statistics") {
		t.Errorf("stats:\n%s", st)
	}

	// a sort's sample pass reads its key alone; a grouping by a renamed
	// column
	sorted := data.ReadParquet(path).RenameColumns(swap).Sort("key", data.Descending()).Select("label")
	if rows, err := sorted.Take(ctx, 2); err != nil || len(rows) != 2 || rows[0]["label"] != "n0399" || rows[1]["label"] != "n0398" {
		t.Fatalf("sorted: %v, %v", rows, err)
	}
	groups := data.ReadParquet(path).RenameColumns(swap).GroupBy("id").Count().Sort("id")
	if rows, err := groups.TakeAll(ctx); err != nil || len(rows) != 4 || rows[3]["id"] != int64(3) || rows[3]["count()"] != int64(100) {
		t.Fatalf("groups: %v, %v", rows, err)
	}
	if st := groups.Stats(); !strings.Contains(st, "columns key (1 of 4)") {
		t.Errorf("stats:\n%s", st)
	}

	// errors when the plan is built: a missing column, two of one name
	for name, c := range map[string]struct {
		names  map[string]string
		column string
	}{
		"missing":      {map[string]string{"nope": "x"}, "nope"},
		"onto another": {map[string]string{"id": "payload"}, ""},
		"two onto one": {map[string]string{"id": "x", "key": "x"}, ""},
		"no name":      {map[string]string{"id": ""}, ""},
		"none":         {nil, ""},
	} {
		ds := data.ReadParquet(path).RenameColumns(c.names)
		_, err := ds.Count(ctx)
		var ce *data.ColumnError
		if !errors.Is(err, atoll.ErrInvalidArgument) || errors.Is(err, atoll.ErrTask) || (c.column != "") != errors.As(err, &ce) ||
			(ce != nil && ce.Column != c.column) {
			t.Errorf("%s: %v, want an ErrInvalidArgument from the plan naming column %q", name, err, c.column)
		}
		if st := ds.Stats(); st != "" {
			t.Errorf("%s: stages ran:\n%s", name, st)
		}
	}
	// after a registered function the schema is known in the task only
	_, err = data.ReadParquet(path).MapBatches(identity).RenameColumns(map[string]string{"nope": "x"}).Count(ctx)
	var ce *data.ColumnError
	if !errors.As(err, &ce) || ce.Column != "nope" {
		t.Errorf("in a task: %v, want a *data.ColumnError naming nope", err)
	}
}

// Functions of aggregations: each leaf aggregated once, the function
// computed per group, against the same computed in Go.
func TestAggregateFunctions(t *testing.T) {
	ctx := start(t)
	price, qty := col("id").Mod(7).Add(1).Cast(arrow.PrimitiveTypes.Float64), col("id").Mod(3)
	ds := data.Range(1000).WithColumn("k", col("id").Mod(4)).WithColumn("price", price).WithColumn("qty", qty)
	avg := col("price").Mul(col("qty")).Sum().Div(col("qty").Sum()).Round(2).As("avg_price")
	variance := col("price").Std().Then(func(s expr.Expr) expr.Expr { return s.Pow(2) }).As("var")
	out := ds.GroupBy("k").Aggregate(avg, col("qty").Sum(), variance, col("qty").Sum().Mul(2).Add(1).Cast(arrow.PrimitiveTypes.Int32),
		col("qty").Max().Sub(col("qty").Min()).As("span")).Sort("k")
	rows, err := out.TakeAll(ctx)
	if err != nil {
		t.Fatal(err)
	}
	s, err := out.Schema(ctx)
	if err != nil {
		t.Fatal(err)
	}
	names := make([]string, s.NumFields())
	for i, f := range s.Fields() {
		names[i] = f.Name
	}
	odd := `((col("sum(qty)") * 2) + 1).cast(int32)` // as the expression reads
	if want := []string{"k", "avg_price", "sum(qty)", "var", odd, "span"}; !slices.Equal(names, want) {
		t.Fatalf("columns %q, want %q", names, want)
	}
	if len(rows) != 4 {
		t.Fatalf("%d groups", len(rows))
	}
	for _, r := range rows {
		k := r["k"].(int64)
		var pq, q, n float64
		var ps []float64
		for id := k; id < 1000; id += 4 {
			p, qq := float64(id%7+1), float64(id%3)
			pq, q, n = pq+p*qq, q+qq, n+1
			ps = append(ps, p)
		}
		mean := 0.0
		for _, p := range ps {
			mean += p / n
		}
		ss := 0.0
		for _, p := range ps {
			ss += (p - mean) * (p - mean)
		}
		want := fmt.Sprintf("%v %v %.6f %v %v", math.Round(pq/q*100)/100, int64(q), ss/(n-1), int32(2*q+1), int64(2))
		got := fmt.Sprintf("%v %v %.6f %v %v", r["avg_price"], r["sum(qty)"], r["var"], r[odd], r["span"])
		if got != want {
			t.Errorf("group %d: %s, want %s", k, got, want)
		}
	}
	// one row over every row; a FillNull of a sum of nothing
	total, err := data.Range(10).Filter(col("id").Gt(100)).Aggregate(col("id").Sum().FillNull(0).As("s")).TakeAll(ctx)
	if err != nil || len(total) != 0 {
		t.Fatalf("aggregate of no row: %v, %v", total, err)
	}
	total, err = data.Range(10).Aggregate(data.Count(), col("id").Sum().Div(data.Count()).As("mean")).TakeAll(ctx)
	if err != nil || len(total) != 1 || total[0]["mean"] != 4.5 || total[0]["count()"] != int64(10) {
		t.Fatalf("aggregate: %v, %v", total, err)
	}

	// errors when the plan is built
	for name, c := range map[string]struct {
		agg  data.Agg
		want string
	}{
		"round of text":   {col("qty").Cast(arrow.BinaryTypes.String).Min().Round(1), "round"},
		"two of one name": {col("qty").Sum().As("x").Add(col("price").Sum().As("x")), `two aggregations named "x"`},
		"row in a sum":    {col("qty").Sub(col("qty").Mean()).Sum(), "aggregate first"},
	} {
		_, err := ds.GroupBy("k").Aggregate(c.agg).Count(ctx)
		if !errors.Is(err, atoll.ErrInvalidArgument) || errors.Is(err, atoll.ErrTask) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an ErrInvalidArgument from the plan naming %q", name, err, c.want)
		}
	}
	if _, err := ds.GroupBy("k").Aggregate(col("qty").Sum(), col("qty").Sum().Round(0).As("sum(qty)")).Count(ctx); !errors.Is(err, atoll.ErrInvalidArgument) {
		t.Errorf("a column twice: %v", err)
	}
}

// RandomSample keeps about its fraction of the rows, the same ones for a
// seed and a block layout, and passes a read's pushdown through.
func TestRandomSample(t *testing.T) {
	ctx := start(t)
	base := data.Range(100000).WithConfig(withParallelism(4))
	sample := func(fraction float64, seed uint64) []int64 {
		t.Helper()
		rows, err := base.RandomSample(fraction, seed).TakeAll(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return ids(t, rows, "id")
	}
	a, b, c := sample(0.1, 7), sample(0.1, 7), sample(0.1, 8)
	// 10,000 expected, sigma 95: within 5 sigma
	if len(a) < 9525 || len(a) > 10475 || !slices.Equal(a, b) || slices.Equal(a, c) || !slices.IsSorted(a) {
		t.Fatalf("sampled %d, again %d (equal %v), another seed %d (equal %v)", len(a), len(b), slices.Equal(a, b), len(c), slices.Equal(a, c))
	}
	// each block draws its own rows: the first two blocks' rows at their
	// offsets differ
	var block0, block1 []int64
	for _, id := range a {
		if id < 25000 {
			block0 = append(block0, id)
		} else if id < 50000 {
			block1 = append(block1, id-25000)
		}
	}
	if slices.Equal(block0, block1) {
		t.Fatal("two blocks sampled the same offsets")
	}
	if n := len(sample(0, 1)); n != 0 {
		t.Fatalf("fraction 0: %d rows", n)
	}
	if n := len(sample(1, 1)); n != 100000 {
		t.Fatalf("fraction 1: %d rows", n)
	}
	for _, f := range []float64{-0.1, 1.5, math.NaN()} {
		if _, err := base.RandomSample(f, 1).Count(ctx); !errors.Is(err, atoll.ErrInvalidArgument) {
			t.Errorf("fraction %v: %v", f, err)
		}
	}
	path := filepath.Join(t.TempDir(), "t.parquet")
	writeGroups(t, path, 4)
	ds := data.ReadParquet(path).RandomSample(0.5, 3).Select("id")
	first, err := ds.TakeAll(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st := ds.Stats(); !strings.Contains(st, "columns id (1 of 4)") {
		t.Errorf("stats:\n%s", st)
	}
	again, err := ds.TakeAll(ctx)
	if err != nil || len(first) < 150 || len(first) > 250 || !slices.Equal(ids(t, first, "id"), ids(t, again, "id")) {
		t.Fatalf("%d rows, then %d, %v", len(first), len(again), err)
	}
}
