package data_test

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/atoll-runtime/atoll"
	"github.com/atoll-runtime/atoll/atolltest"
	"github.com/atoll-runtime/atoll/data"
	"github.com/atoll-runtime/atoll/data/expr"
	"github.com/atoll-runtime/atoll/internal/testmain"
)

// frequentKey is a join whose right side has one key in three rows of
// four: nl left rows keyed id mod mod, nr right rows keyed 0 (when id
// mod 4 is not 0) or id, each with a 1 KiB pad.
type frequentKey struct{ nl, nr, mod int64 }

func (f frequentKey) lk(id int64) int64 { return id % f.mod }

func (f frequentKey) rk(id int64) int64 {
	if id%4 != 0 {
		return 0
	}
	return id
}

// join runs the join of how (shuffled) and checks its rows, as "id k
// id_right", against a join in plain Go; it returns the run's stats.
func (f frequentKey) join(ctx context.Context, t *testing.T, how data.JoinType) string {
	t.Helper()
	left := data.Range(f.nl).WithColumn("k", expr.Col("id").Mod(f.mod))
	right := data.Range(f.nr).WithColumn("k", expr.When(expr.Col("id").Mod(4).Ne(0)).Then(int64(0)).Otherwise(expr.Col("id"))).
		AddColumn("pad", pad)
	cols := []string{"id", "k", "id_right"}
	if how == data.SemiJoin || how == data.AntiJoin {
		cols = cols[:2]
	}
	ds := left.Join(right, how, []string{"k"}, data.BroadcastBelow(0)).Select(cols...)
	rows, err := ds.TakeAll(ctx)
	if err != nil {
		t.Fatalf("%v: %v", how, err)
	}
	var got []string
	for _, r := range rows {
		got = append(got, fmt.Sprint(r["id"], r["k"], r["id_right"]))
	}
	sort.Strings(got)
	if want := f.want(how); !slices.Equal(got, want) {
		t.Fatalf("%v: %d rows, want %d\ngot  %v\nwant %v", how, len(got), len(want), head(got), head(want))
	}
	st := ds.Stats()
	if !strings.Contains(st, "right rows joined in chunks") {
		t.Errorf("%v: no part joined in chunks:\n%s", how, st)
	}
	return st
}

// want is the rows join expects, as "id k id_right" (nil where a side has
// no row; no id_right for semi and anti joins), sorted.
func (f frequentKey) want(how data.JoinType) []string {
	byKey := map[int64][]int64{}
	for id := range f.nr {
		byKey[f.rk(id)] = append(byKey[f.rk(id)], id)
	}
	var nilv any
	var out []string
	matchedKeys := map[int64]bool{}
	for id := range f.nl {
		k := f.lk(id)
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
		for id := range f.nr {
			if !matchedKeys[f.rk(id)] {
				out = append(out, fmt.Sprint(nilv, f.rk(id), id))
			}
		}
	}
	sort.Strings(out)
	return out
}

// A shuffled join whose right side has one key in three rows of four:
// those rows (9 MB with their 1 KiB pads) all hash to one part, more
// than the 8 MiB store, so the part is joined in chunks of its right
// rows and the left rows' outcome is settled at the end. Every join
// type against a join in plain Go.
func TestJoinOfAFrequentRightKey(t *testing.T) {
	// Six joins through an 8 MiB store, each spilling: about 20 s alone,
	// past Start's 3 minutes in a loaded test lane (twice in CI runs).
	ctx := testmain.StartWithin(t, 10*time.Minute, atoll.WithObjectStoreMemory(8<<20))
	f := frequentKey{nl: 1_500, nr: 12_000, mod: 500}
	for how := data.InnerJoin; how <= data.AntiJoin; how++ {
		t.Run(how.String(), func(t *testing.T) {
			st := f.join(ctx, t, how)
			if how != data.InnerJoin && how != data.RightJoin && !strings.Contains(st, "join_unmatched:") {
				t.Errorf("no task for the left rows' rest:\n%s", st)
			}
			mem, err := atolltest.Memory(ctx)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("spilled %d bytes so far\n%s", mem.SpilledBytesTotal, st)
		})
	}
}

// The same joins with in-process workers, where a task's lent refs
// decode in the driver's process: the frequent key's part in chunks, its
// right pieces read by the tasks themselves.
func TestJoinOfAFrequentRightKeyInProcess(t *testing.T) {
	ctx := start(t, atoll.WithObjectStoreMemory(16<<20), atoll.WithWorkerMode(atoll.InProcessWorkers))
	f := frequentKey{nl: 1_000, nr: 8_000, mod: 500}
	for _, how := range []data.JoinType{data.InnerJoin, data.FullJoin, data.AntiJoin} {
		f.join(ctx, t, how)
	}
}
