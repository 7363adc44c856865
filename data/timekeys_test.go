package data_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/atoll-runtime/atoll/data"
	"github.com/atoll-runtime/atoll/data/expr"
)

// TestTimeKeys: timestamps and dates, and parts of them, are keys of
// Sort, GroupBy and Join (they were refused as keys: "not supported
// (int64, int32, ...)"),
// each checked against a plain Go reference over the same rows, with
// nulls, in several read tasks and through the shuffle (more parts than
// one).
func TestTimeKeys(t *testing.T) {
	dateType := arrow.FixedWidthTypes.Date32
	ctx := start(t)
	type event struct {
		At  *time.Time
		Day time.Time
		N   int64
	}
	base := time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC)
	var items []event
	for i := range 3000 {
		at := base.Add(time.Duration((i*7919)%1000) * time.Minute)
		e := event{At: &at, Day: at.Truncate(24 * time.Hour), N: int64(i)}
		if i%97 == 0 {
			e.At = nil
		}
		items = append(items, e)
	}
	ds, err := data.FromItems(ctx, items)
	if err != nil {
		t.Fatal(err)
	}
	ds = ds.WithColumn("day", expr.Col("Day").Cast(dateType)).Repartition(5)

	// Sort by the timestamp, nulls last, across 3 parts.
	sorted, err := data.TakeAllAs[event](ctx, ds.Sort("At", data.Partitions(3)))
	if err != nil {
		t.Fatal(err)
	}
	want := slices.Clone(items)
	slices.SortStableFunc(want, func(a, b event) int {
		switch {
		case a.At == nil && b.At == nil:
			return 0
		case a.At == nil:
			return 1
		case b.At == nil:
			return -1
		}
		return a.At.Compare(*b.At)
	})
	if len(sorted) != len(want) {
		t.Fatalf("%d sorted rows, want %d", len(sorted), len(want))
	}
	for i := range want {
		if (want[i].At == nil) != (sorted[i].At == nil) || want[i].At != nil && !want[i].At.Equal(*sorted[i].At) {
			t.Fatalf("sorted row %d: %v, want %v", i, sorted[i].At, want[i].At)
		}
	}

	// Group by the date column: a count per day.
	type perDay struct {
		Day   time.Time `arrow:"day"`
		Count int64     `arrow:"count()"`
	}
	groups, err := data.TakeAllAs[perDay](ctx, ds.GroupBy("day").NumPartitions(3).Count())
	if err != nil {
		t.Fatal(err)
	}
	wantCount := map[time.Time]int64{}
	for _, e := range items {
		wantCount[e.Day]++
	}
	got := map[time.Time]int64{}
	for _, g := range groups {
		got[g.Day] = g.Count
	}
	if fmt.Sprint(got) != fmt.Sprint(wantCount) {
		t.Fatalf("counts per day %v, want %v", got, wantCount)
	}

	// A count per ISO weekday of the timestamp, a key Part makes (null
	// where the timestamp is).
	type perWeekday struct {
		Weekday *int32 `arrow:"weekday"`
		Count   int64  `arrow:"count()"`
	}
	weekdays, err := data.TakeAllAs[perWeekday](ctx, ds.WithColumn("weekday", expr.Col("At").Part(expr.Weekday)).GroupBy("weekday").NumPartitions(3).Count())
	if err != nil {
		t.Fatal(err)
	}
	wantWeekday := map[int32]int64{}
	for _, e := range items {
		wd := int32(-1) // null
		if e.At != nil {
			wd = int32((e.At.Weekday()+6)%7 + 1)
		}
		wantWeekday[wd]++
	}
	gotWeekday := map[int32]int64{}
	for _, g := range weekdays {
		wd := int32(-1)
		if g.Weekday != nil {
			wd = *g.Weekday
		}
		gotWeekday[wd] = g.Count
	}
	if fmt.Sprint(gotWeekday) != fmt.Sprint(wantWeekday) {
		t.Fatalf("counts per weekday %v, want %v", gotWeekday, wantWeekday)
	}

	// The first and last event of each day (nulls left out).
	type span struct {
		Day   time.Time `arrow:"day"`
		First time.Time `arrow:"first"`
		Last  time.Time `arrow:"last"`
	}
	spans, err := data.TakeAllAs[span](ctx, ds.GroupBy("day").NumPartitions(3).Aggregate(expr.Col("At").Min().As("first"), expr.Col("At").Max().As("last")))
	if err != nil {
		t.Fatal(err)
	}
	first, last := map[time.Time]time.Time{}, map[time.Time]time.Time{}
	for _, e := range items {
		if e.At == nil {
			continue
		}
		if f, ok := first[e.Day]; !ok || e.At.Before(f) {
			first[e.Day] = *e.At
		}
		if l, ok := last[e.Day]; !ok || e.At.After(l) {
			last[e.Day] = *e.At
		}
	}
	if len(spans) != len(first) {
		t.Fatalf("%d days, want %d", len(spans), len(first))
	}
	for _, sp := range spans {
		if !sp.First.Equal(first[sp.Day]) || !sp.Last.Equal(last[sp.Day]) {
			t.Fatalf("day %v: %v to %v, want %v to %v", sp.Day, sp.First, sp.Last, first[sp.Day], last[sp.Day])
		}
	}

	// Join each event to its day's row of a small table, by the date.
	type dayRow struct {
		Day  time.Time `arrow:"day"`
		Name string    `arrow:"name"`
	}
	var days []dayRow
	for d := range wantCount {
		days = append(days, dayRow{Day: d, Name: d.Format("Jan 2")})
	}
	right, err := data.FromItems(ctx, days)
	if err != nil {
		t.Fatal(err)
	}
	right = right.WithColumn("day", expr.Col("day").Cast(dateType))
	for _, broadcast := range []bool{true, false} {
		cfg := data.DefaultConfig()
		if !broadcast {
			cfg.BroadcastThreshold = 0
		}
		joined := ds.Join(right, data.InnerJoin, []string{"day"}).WithConfig(cfg)
		type out struct {
			N    int64     `arrow:"N"`
			Day  time.Time `arrow:"day"`
			Name string    `arrow:"name"`
		}
		rows, err := data.TakeAllAs[out](ctx, joined)
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) != len(items) {
			t.Fatalf("broadcast %v: %d joined rows, want %d", broadcast, len(rows), len(items))
		}
		for _, r := range rows {
			if r.Name != items[r.N].Day.Format("Jan 2") || !r.Day.Equal(items[r.N].Day) {
				t.Fatalf("broadcast %v: row %+v, want day %v", broadcast, r, items[r.N].Day)
			}
		}
	}
}
