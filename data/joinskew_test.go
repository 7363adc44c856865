package data_test

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/atoll-runtime/atoll"
	"github.com/atoll-runtime/atoll/atolltest"
	"github.com/atoll-runtime/atoll/data"
	"github.com/atoll-runtime/atoll/data/expr"
)

// A shuffled join whose right side has one key in three rows of four:
// those rows (18 MB with their 1 KiB pads) all hash to one part, more
// than the 16 MiB store, so the part is joined in chunks of its right
// rows and the left rows' outcome is settled at the end. Every join
// type against a join in plain Go.
func TestJoinOfAFrequentRightKey(t *testing.T) {
	ctx := start(t, atoll.WithObjectStoreMemory(16<<20))
	const nl, nr = 3_000, 24_000
	lk := func(id int64) int64 { return id % 1_000 }
	rk := func(id int64) int64 {
		if id%4 != 0 {
			return 0
		}
		return id
	}
	left := data.Range(nl).WithColumn("k", expr.Col("id").Mod(1_000))
	right := data.Range(nr).WithColumn("k", expr.When(expr.Col("id").Mod(4).Ne(0)).Then(int64(0)).Otherwise(expr.Col("id"))).
		AddColumn("pad", pad)
	for how := data.InnerJoin; how <= data.AntiJoin; how++ {
		t.Run(how.String(), func(t *testing.T) {
			joined := left.Join(right, how, []string{"k"}, data.BroadcastBelow(0))
			cols := []string{"id", "k", "id_right"}
			if how == data.SemiJoin || how == data.AntiJoin {
				cols = cols[:2]
			}
			ds := joined.Select(cols...)
			rows, err := ds.TakeAll(ctx)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, r := range rows {
				got = append(got, fmt.Sprint(r["id"], r["k"], r["id_right"]))
			}
			sort.Strings(got)
			want := frequentKeyJoin(how, nl, nr, lk, rk)
			if !slices.Equal(got, want) {
				t.Fatalf("%d rows, want %d\ngot  %v\nwant %v", len(got), len(want), head(got), head(want))
			}
			st := ds.Stats()
			if !strings.Contains(st, "of right rows, joined in") {
				t.Errorf("no part joined in chunks:\n%s", st)
			}
			if how != data.InnerJoin && how != data.RightJoin && !strings.Contains(st, "join_unmatched:") {
				t.Errorf("no task for the left rows' rest:\n%s", st)
			}
			mem, err := atolltest.Memory(ctx)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%d rows; spilled %d bytes so far\n%s", len(got), mem.SpilledBytesTotal, st)
		})
	}
}

// frequentKeyJoin is the rows TestJoinOfAFrequentRightKey expects, as
// "id k id_right" (nil where a side has no row; no id_right for semi
// and anti joins), sorted.
func frequentKeyJoin(how data.JoinType, nl, nr int64, lk, rk func(int64) int64) []string {
	byKey := map[int64][]int64{}
	for id := range nr {
		byKey[rk(id)] = append(byKey[rk(id)], id)
	}
	var nilv any
	var out []string
	matchedKeys := map[int64]bool{}
	for id := range nl {
		k := lk(id)
		rs := byKey[k]
		if len(rs) > 0 {
			matchedKeys[k] = true
		}
		switch {
		case how == data.SemiJoin:
			if len(rs) > 0 {
				out = append(out, fmt.Sprint(id, k, nilv))
			}
		case how == data.AntiJoin:
			if len(rs) == 0 {
				out = append(out, fmt.Sprint(id, k, nilv))
			}
		case len(rs) == 0:
			if how == data.LeftJoin || how == data.FullJoin {
				out = append(out, fmt.Sprint(id, k, nilv))
			}
		default:
			for _, r := range rs {
				out = append(out, fmt.Sprint(id, k, r))
			}
		}
	}
	if how == data.RightJoin || how == data.FullJoin {
		for id := range nr {
			if !matchedKeys[rk(id)] {
				out = append(out, fmt.Sprint(nilv, rk(id), id))
			}
		}
	}
	sort.Strings(out)
	return out
}

// The same joins with in-process workers, where a task's lent refs
// decode in the driver's process: the frequent key's part in chunks, its
// right pieces read by the tasks themselves.
func TestJoinOfAFrequentRightKeyInProcess(t *testing.T) {
	ctx := start(t, atoll.WithObjectStoreMemory(16<<20), atoll.WithWorkerMode(atoll.InProcessWorkers))
	const nl, nr = 1_000, 8_000
	lk := func(id int64) int64 { return id % 500 }
	rk := func(id int64) int64 {
		if id%4 != 0 {
			return 0
		}
		return id
	}
	left := data.Range(nl).WithColumn("k", expr.Col("id").Mod(500))
	right := data.Range(nr).WithColumn("k", expr.When(expr.Col("id").Mod(4).Ne(0)).Then(int64(0)).Otherwise(expr.Col("id"))).
		AddColumn("pad", pad)
	for _, how := range []data.JoinType{data.InnerJoin, data.FullJoin, data.AntiJoin} {
		ds := left.Join(right, how, []string{"k"}, data.BroadcastBelow(0)).Select("id", "k", "id_right")
		if how == data.AntiJoin {
			ds = left.Join(right, how, []string{"k"}, data.BroadcastBelow(0)).Select("id", "k")
		}
		rows, err := ds.TakeAll(ctx)
		if err != nil {
			t.Fatalf("%v: %v", how, err)
		}
		var got []string
		for _, r := range rows {
			got = append(got, fmt.Sprint(r["id"], r["k"], r["id_right"]))
		}
		sort.Strings(got)
		if want := frequentKeyJoin(how, nl, nr, lk, rk); !slices.Equal(got, want) {
			t.Fatalf("%v: %d rows, want %d\ngot  %v\nwant %v", how, len(got), len(want), head(got), head(want))
		}
		if st := ds.Stats(); !strings.Contains(st, "of right rows, joined in") {
			t.Errorf("%v: no part joined in chunks:\n%s", how, st)
		}
	}
}
