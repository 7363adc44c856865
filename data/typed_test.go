package data_test

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/atoll-runtime/atoll"
	"github.com/atoll-runtime/atoll/data"
	"github.com/atoll-runtime/atoll/data/expr"
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

// TestTimeRows: time.Time fields and pointer fields go through FromItems
// and back through TakeAllAs unchanged (a nil pointer a null, in a
// column of its field's type even when every value is nil; the zero
// time.Time too, which nanoseconds cannot hold); a row function sees
// timestamps and dates as time.Time and a time it returns keeps its
// column's type; CSV dates and zoned timestamps read into time.Time
// fields.
func TestTimeRows(t *testing.T) {
	ctx := start(t)
	type event struct {
		At    time.Time
		Until *time.Time
		Score *float64
	}
	until := time.Date(2026, 11, 27, 6, 30, 0, 123456000, time.UTC)
	score := 2.5
	items := []event{{At: time.Date(2026, 1, 2, 3, 4, 5, 6000, time.UTC), Until: &until, Score: &score}, {}}
	ds, err := data.FromItems(ctx, items)
	if err != nil {
		t.Fatal(err)
	}
	got, err := data.TakeAllAs[event](ctx, ds)
	if err != nil || len(got) != 2 || !got[0].At.Equal(items[0].At) || !got[0].Until.Equal(until) || *got[0].Score != 2.5 ||
		!got[1].At.IsZero() || got[1].Until != nil || got[1].Score != nil {
		t.Fatalf("TakeAllAs = %+v, %v", got, err)
	}
	nulls, err := data.FromItems(ctx, []event{{}, {}})
	if err != nil {
		t.Fatal(err)
	}
	s, err := nulls.Schema(ctx)
	if err != nil || s.Field(1).Type.ID() != arrow.TIMESTAMP || s.Field(2).Type.ID() != arrow.FLOAT64 {
		t.Fatalf("schema of nil pointers: %v, %v", s, err)
	}

	dir := writeFiles(t, map[string]string{"a.csv": "day,at\n2026-01-02,2026-01-02T10:00:00+01:00\n"})
	type dated struct {
		Day time.Time `arrow:"day"`
		At  time.Time `arrow:"at"`
	}
	rows, err := data.TakeAllAs[dated](ctx, data.ReadCSV(dir))
	if err != nil || len(rows) != 1 || !rows[0].Day.Equal(time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC)) ||
		!rows[0].At.Equal(time.Date(2026, 1, 2, 9, 0, 0, 0, time.UTC)) {
		t.Fatalf("CSV rows %+v, %v", rows, err)
	}
	later := data.ReadCSV(dir).Map(addDay)
	s, err = later.Schema(ctx)
	if err != nil || s.Field(0).Type.ID() != arrow.DATE32 {
		t.Fatalf("a row function's schema: %v, %v", s, err)
	}
	rows, err = data.TakeAllAs[dated](ctx, later)
	if err != nil || len(rows) != 1 || !rows[0].Day.Equal(time.Date(2026, 1, 3, 0, 0, 0, 0, time.UTC)) {
		t.Fatalf("mapped rows %+v, %v", rows, err)
	}
}

// TestDurationRows: a time.Duration field is a duration[ns] column
// through FromItems and back; an expression's difference of two
// timestamps reads into a time.Duration field and, in a row, is a
// time.Duration; a filter on it keeps the rows Go's arithmetic keeps;
// durations are keys of Sort and GroupBy and go through Sum, Min and Max
// (not Mean); durations go through Parquet and back.
func TestDurationRows(t *testing.T) {
	ctx := start(t)
	type job struct {
		Start, End time.Time
		Budget     time.Duration
		Late       *time.Duration
	}
	base := time.Date(2026, 11, 27, 8, 0, 0, 0, time.UTC)
	late := 90 * time.Second
	var items []job
	for i := range 200 {
		j := job{Start: base.Add(time.Duration(i) * time.Minute), Budget: time.Duration(i%7) * time.Minute}
		j.End = j.Start.Add(time.Duration(i*7919%600) * time.Second)
		if i%5 == 0 {
			j.Late = &late
		}
		items = append(items, j)
	}
	ds, err := data.FromItems(ctx, items)
	if err != nil {
		t.Fatal(err)
	}
	s, err := ds.Schema(ctx)
	if err != nil || s.Field(2).Type.String() != "duration[ns]" || s.Field(3).Type.String() != "duration[ns]" {
		t.Fatalf("schema %v, %v; want duration[ns] for the durations", s, err)
	}
	back, err := data.TakeAllAs[job](ctx, ds)
	if err != nil || len(back) != len(items) {
		t.Fatalf("TakeAllAs: %d rows, %v", len(back), err)
	}
	for i, j := range back {
		w := items[i]
		if j.Budget != w.Budget || (j.Late == nil) != (w.Late == nil) || j.Late != nil && *j.Late != *w.Late {
			t.Fatalf("row %d: %+v, want %+v", i, j, w)
		}
	}

	over := ds.WithColumn("took", expr.Col("End").Sub(expr.Col("Start"))).
		Filter(expr.Col("took").Gt(expr.Col("Budget").Add(time.Minute)))
	type took struct {
		Start time.Time
		Took  time.Duration `arrow:"took"`
	}
	got, err := data.TakeAllAs[took](ctx, over)
	if err != nil {
		t.Fatal(err)
	}
	var want []took
	for _, j := range items {
		if d := j.End.Sub(j.Start); d > j.Budget+time.Minute {
			want = append(want, took{Start: j.Start, Took: d})
		}
	}
	if len(got) != len(want) || len(want) == 0 {
		t.Fatalf("%d rows over budget, want %d", len(got), len(want))
	}
	for i := range want {
		if !got[i].Start.Equal(want[i].Start) || got[i].Took != want[i].Took {
			t.Fatalf("row %d: %+v, want %+v", i, got[i], want[i])
		}
	}
	rows, err := over.Take(ctx, 1)
	if err != nil || len(rows) != 1 || rows[0]["took"] != want[0].Took {
		t.Fatalf("Take: %v, %v; want took %v as a time.Duration", rows, err, want[0].Took)
	}

	// A duration is a key of Sort and GroupBy, and Min and Max take it.
	type perBudget struct {
		Budget   time.Duration `arrow:"Budget"`
		Count    int64         `arrow:"count"`
		Shortest time.Duration `arrow:"shortest"`
		Longest  time.Duration `arrow:"longest"`
		Total    time.Duration `arrow:"total"`
	}
	tookCol := expr.Col("End").Sub(expr.Col("Start"))
	groups, err := data.TakeAllAs[perBudget](ctx, ds.Repartition(4).GroupBy("Budget").NumPartitions(3).
		Aggregate(expr.Count().As("count"), tookCol.Min().As("shortest"), tookCol.Max().As("longest"), tookCol.Sum().As("total")).Sort("Budget"))
	if err != nil {
		t.Fatal(err)
	}
	wantGroups := map[time.Duration]*perBudget{}
	for _, j := range items {
		d := j.End.Sub(j.Start)
		g := wantGroups[j.Budget]
		if g == nil {
			g = &perBudget{Budget: j.Budget, Shortest: d, Longest: d}
			wantGroups[j.Budget] = g
		}
		g.Count++
		g.Shortest, g.Longest, g.Total = min(g.Shortest, d), max(g.Longest, d), g.Total+d
	}
	if len(groups) != len(wantGroups) {
		t.Fatalf("%d budgets, want %d", len(groups), len(wantGroups))
	}
	for i, g := range groups {
		if i > 0 && groups[i-1].Budget >= g.Budget {
			t.Fatalf("budgets not sorted: %v before %v", groups[i-1].Budget, g.Budget)
		}
		if w := wantGroups[g.Budget]; w == nil || *w != g {
			t.Fatalf("budget %v: %+v, want %+v", g.Budget, g, w)
		}
	}

	// Mean and Std of durations are durations, combined from the map
	// tasks' partial states.
	type spread struct {
		Mean time.Duration `arrow:"mean"`
		Std  time.Duration `arrow:"std"`
	}
	spreads, err := data.TakeAllAs[spread](ctx, ds.Repartition(4).GroupBy().NumPartitions(2).
		Aggregate(tookCol.Mean().As("mean"), tookCol.Std().As("std")))
	if err != nil || len(spreads) != 1 {
		t.Fatalf("mean and std of durations: %+v, %v", spreads, err)
	}
	var total, squares float64
	for _, j := range items {
		total += float64(j.End.Sub(j.Start))
	}
	mean := total / float64(len(items))
	for _, j := range items {
		d := float64(j.End.Sub(j.Start)) - mean
		squares += d * d
	}
	std := math.Sqrt(squares / float64(len(items)-1))
	// The end less the start of microsecond timestamps: microseconds,
	// to which the results round.
	near := func(got time.Duration, want float64) bool {
		return math.Abs(float64(got)-want) <= float64(time.Microsecond)/2+1e-9*want
	}
	if g := spreads[0]; !near(g.Mean, mean) || !near(g.Std, std) {
		t.Fatalf("mean %v and std %v of durations, want %v and %v", g.Mean, g.Std, time.Duration(mean), time.Duration(std))
	}
	if s, err := ds.GroupBy("Budget").Aggregate(tookCol.Mean().As("m")).Schema(ctx); err != nil || s.Field(1).Type.String() != "duration[us]" {
		t.Fatalf("the planned type of a mean of durations: %v, %v; want duration[us]", s, err)
	}
	// The mean in minutes, through Total.
	type meanMinutes struct {
		Mean float64 `arrow:"mean"`
	}
	means, err := data.TakeAllAs[meanMinutes](ctx, ds.Repartition(4).GroupBy().Aggregate(tookCol.Total(expr.Minute).Mean().As("mean")))
	var sum time.Duration
	for _, j := range items {
		sum += j.End.Sub(j.Start)
	}
	if w := sum.Minutes() / float64(len(items)); err != nil || len(means) != 1 || math.Abs(means[0].Mean-w) > 1e-9*w {
		t.Fatalf("mean minutes %+v, %v; want %v", means, err, w)
	}

	// Through Parquet, which has no duration type: written as int64 with
	// the Arrow schema beside, read back as durations, filtered on.
	dir := t.TempDir()
	if err := ds.Repartition(3).WriteParquet(ctx, dir); err != nil {
		t.Fatal(err)
	}
	read := data.ReadParquet(dir)
	if s, err = read.Schema(ctx); err != nil || s.Field(2).Type.String() != "duration[ns]" {
		t.Fatalf("schema read back %v, %v; want duration[ns] for Budget", s, err)
	}
	reread, err := data.TakeAllAs[job](ctx, read.Filter(expr.Col("Budget").Ge(3*time.Minute)))
	if err != nil {
		t.Fatal(err)
	}
	var wantRead []job
	for _, j := range items {
		if j.Budget >= 3*time.Minute {
			wantRead = append(wantRead, j)
		}
	}
	if len(reread) != len(wantRead) || len(wantRead) == 0 {
		t.Fatalf("%d rows read back with a budget of 3m or more, want %d", len(reread), len(wantRead))
	}
	slices.SortFunc(reread, func(a, b job) int { return a.Start.Compare(b.Start) }) // the parts' files in any order
	for i, j := range reread {
		w := wantRead[i]
		if !j.Start.Equal(w.Start) || j.Budget != w.Budget || (j.Late == nil) != (w.Late == nil) || j.Late != nil && *j.Late != *w.Late {
			t.Fatalf("row %d read back: %+v, want %+v", i, j, w)
		}
	}
}

// Durations inside lists, and lists of lists, go through Parquet too:
// stored as int64s at every depth, read back as durations.
func TestNestedDurationsParquet(t *testing.T) {
	ctx := start(t)
	type run struct {
		ID     int64             `arrow:"id"`
		Laps   []time.Duration   `arrow:"laps"`
		Splits [][]time.Duration `arrow:"splits"`
		Best   *time.Duration    `arrow:"best"`
	}
	var items []run
	for i := range 300 {
		r := run{ID: int64(i)}
		if i%7 != 0 { // every seventh run: no laps, a null list
			for j := range i % 5 {
				r.Laps = append(r.Laps, time.Duration(i*1000+j)*time.Millisecond)
			}
			best := slices.Min(append([]time.Duration{time.Hour}, r.Laps...))
			r.Best = &best
		}
		for j := range i % 3 {
			r.Splits = append(r.Splits, []time.Duration{time.Duration(j) * time.Second, time.Duration(i) * time.Microsecond})
		}
		items = append(items, r)
	}
	_, dir := itemsParquet(t, ctx, items)
	read := data.ReadParquet(dir)
	s, err := read.Schema(ctx)
	listOf := func(ty arrow.DataType) arrow.DataType {
		if l, ok := ty.(*arrow.ListType); ok {
			return l.Elem()
		}
		return nil
	}
	if err != nil || listOf(s.Field(1).Type) == nil || listOf(s.Field(1).Type).String() != "duration[ns]" ||
		listOf(s.Field(2).Type) == nil || listOf(listOf(s.Field(2).Type)) == nil || listOf(listOf(s.Field(2).Type)).String() != "duration[ns]" {
		t.Fatalf("schema read back %v, %v; want lists of durations", s, err)
	}
	got, err := data.TakeAllAs[run](ctx, read.Sort("id"))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(items) {
		t.Fatalf("%d runs read back, want %d", len(got), len(items))
	}
	for i, r := range got {
		w := items[i]
		if r.ID != w.ID || !slices.Equal(r.Laps, w.Laps) || (r.Laps == nil) != (w.Laps == nil) || len(r.Splits) != len(w.Splits) ||
			(r.Best == nil) != (w.Best == nil) || r.Best != nil && *r.Best != *w.Best {
			t.Fatalf("run %d read back %+v, want %+v", i, r, w)
		}
		for j := range r.Splits {
			if !slices.Equal(r.Splits[j], w.Splits[j]) {
				t.Fatalf("run %d split %d read back %v, want %v", i, j, r.Splits[j], w.Splits[j])
			}
		}
	}
}

// A sort takes list columns along with their rows, from blocks made in
// the workers and from Parquet. arrow-go's take kernel for lists sizes
// its buffers by their capacity: the Arrow pool's buffers have a
// capacity equal to their length, or the kernel panics in its own
// goroutine and the worker process dies.
func TestSortListColumns(t *testing.T) {
	ctx := start(t)
	type row struct {
		ID   int64     `arrow:"id"`
		Laps []int64   `arrow:"laps"`
		Tags []*string `arrow:"tags"`
	}
	var items []row
	for i := range 2000 {
		r := row{ID: int64((i * 7919) % 2000)} // a permutation
		if i%7 != 0 {
			for j := range i % 9 {
				r.Laps = append(r.Laps, int64(i*1000+j))
				tag := fmt.Sprint("t", j)
				r.Tags = append(r.Tags, &tag, nil)
			}
		}
		items = append(items, r)
	}
	want := slices.Clone(items)
	slices.SortFunc(want, func(a, b row) int { return cmp.Compare(a.ID, b.ID) })
	ds, dir := itemsParquet(t, ctx, items)
	for name, d := range map[string]*data.Dataset{"blocks": ds.Repartition(4), "parquet": data.ReadParquet(dir)} {
		got, err := data.TakeAllAs[row](ctx, d.Sort("id"))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(got) != len(want) {
			t.Fatalf("%s: %d rows sorted, want %d", name, len(got), len(want))
		}
		for i, r := range got {
			w := want[i]
			if r.ID != w.ID || !slices.Equal(r.Laps, w.Laps) || len(r.Tags) != len(w.Tags) {
				t.Fatalf("%s: row %d sorted %+v, want %+v", name, i, r, w)
			}
			for j := range r.Tags {
				if (r.Tags[j] == nil) != (w.Tags[j] == nil) || r.Tags[j] != nil && *r.Tags[j] != *w.Tags[j] {
					t.Fatalf("%s: row %d tag %d differs", name, i, j)
				}
			}
		}
	}
}

// itemsParquet makes a dataset of items and writes it to a temporary
// directory as three Parquet files: the dataset and the directory.
func itemsParquet[T any](t *testing.T, ctx context.Context, items []T) (*data.Dataset, string) {
	t.Helper()
	ds, err := data.FromItems(ctx, items)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := ds.Repartition(3).WriteParquet(ctx, dir); err != nil {
		t.Fatal(err)
	}
	return ds, dir
}

var addDay = data.RegisterRowFunc("test.add_day", func(_ context.Context, r data.Row) (data.Row, error) {
	r["day"] = r["day"].(time.Time).AddDate(0, 0, 1)
	return r, nil
})

// TestListRows: slice fields go through FromItems and back through
// TakeAllAs (a nil slice a null list, nil elements of pointers nulls);
// a row function sees a list as []any and returns a slice as a list;
// a JSON read's list reads into a slice field; lists of lists read into
// slices of slices; a null element into a
// slice of values is an error naming the row.
func TestListRows(t *testing.T) {
	ctx := start(t)
	type tagged struct {
		Tags   []string
		Scores []*int64
		Days   []time.Time
	}
	one, two := int64(1), int64(2)
	d := time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC)
	items := []tagged{{Tags: []string{"a", "b"}, Scores: []*int64{&one, nil, &two}, Days: []time.Time{d}}, {Tags: []string{}}, {}}
	ds, err := data.FromItems(ctx, items)
	if err != nil {
		t.Fatal(err)
	}
	got, err := data.TakeAllAs[tagged](ctx, ds)
	if err != nil || len(got) != 3 {
		t.Fatalf("TakeAllAs = %+v, %v", got, err)
	}
	if !slices.Equal(got[0].Tags, []string{"a", "b"}) || len(got[0].Scores) != 3 || *got[0].Scores[0] != 1 || got[0].Scores[1] != nil ||
		*got[0].Scores[2] != 2 || len(got[0].Days) != 1 || !got[0].Days[0].Equal(d) {
		t.Fatalf("row 0: %+v", got[0])
	}
	if got[1].Tags == nil || len(got[1].Tags) != 0 || got[1].Scores != nil || got[2].Tags != nil {
		t.Fatalf("rows 1 and 2: %+v %+v", got[1], got[2])
	}

	upper, err := data.TakeAllAs[tagged](ctx, ds.Map(upperTags))
	if err != nil || len(upper) != 3 || !slices.Equal(upper[0].Tags, []string{"A", "B"}) || upper[2].Tags != nil {
		t.Fatalf("mapped: %+v, %v", upper, err)
	}

	dir := writeFiles(t, map[string]string{"a.jsonl": `{"tags": ["x", "y"], "n": [1, null]}` + "\n"})
	type fromJSON struct {
		Tags []string `arrow:"tags"`
		N    []int64  `arrow:"n"`
	}
	type tagsOnly struct {
		Tags []string `arrow:"tags"`
	}
	js, err := data.TakeAllAs[tagsOnly](ctx, data.ReadJSON(dir))
	if err != nil || len(js) != 1 || !slices.Equal(js[0].Tags, []string{"x", "y"}) {
		t.Fatalf("JSON tags %+v, %v", js, err)
	}
	// Show prints a list as JSON (it printed its bytes: [91 34 120 ...])
	var sb strings.Builder
	if err := data.ReadJSON(dir).Show(ctx, &sb, 1); err != nil || sb.String() != "{tags: [\"x\",\"y\"], n: [1,null]}\n" {
		t.Fatalf("Show: %q, %v", sb.String(), err)
	}
	_, err = data.TakeAllAs[fromJSON](ctx, data.ReadJSON(dir))
	var ce *data.ColumnError
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), "element 1 of row 0 is null") {
		t.Fatalf("a null element into []int64: %v", err)
	}

	// Lists of lists both ways; a null inner list is a nil slice; a null
	// value two levels down into a slice of values is an error naming
	// where.
	type nested struct {
		Grid [][]int64
		Tags [][]*string
	}
	x := "x"
	deep := []nested{{Grid: [][]int64{{1, 2}, nil, {}}, Tags: [][]*string{{&x, nil}, nil}}, {}}
	nds, err := data.FromItems(ctx, deep)
	if err != nil {
		t.Fatal(err)
	}
	back, err := data.TakeAllAs[nested](ctx, nds)
	if err != nil || len(back) != 2 {
		t.Fatalf("nested TakeAllAs = %+v, %v", back, err)
	}
	g, tg := back[0].Grid, back[0].Tags
	if len(g) != 3 || !slices.Equal(g[0], []int64{1, 2}) || g[1] != nil || g[2] == nil || len(g[2]) != 0 ||
		len(tg) != 2 || len(tg[0]) != 2 || *tg[0][0] != "x" || tg[0][1] != nil || tg[1] != nil || back[1].Grid != nil {
		t.Fatalf("nested rows: %+v", back)
	}
	dir = writeFiles(t, map[string]string{"b.jsonl": `{"grid": [[1], [2, null]]}` + "\n"})
	type gridOnly struct {
		Grid [][]int64 `arrow:"grid"`
	}
	_, err = data.TakeAllAs[gridOnly](ctx, data.ReadJSON(dir))
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), "element 1 of element 1 of row 0 is null") {
		t.Fatalf("a null two levels down into [][]int64: %v", err)
	}
}

var upperTags = data.RegisterRowFunc("test.upper_tags", func(_ context.Context, r data.Row) (data.Row, error) {
	tags, _ := r["Tags"].([]any)
	if tags == nil {
		r["Tags"] = []string(nil)
		return r, nil
	}
	out := make([]string, len(tags))
	for i, x := range tags {
		out[i] = strings.ToUpper(x.(string))
	}
	r["Tags"] = out
	return r, nil
})
