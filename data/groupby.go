package data

import (
	"fmt"

	"github.com/atoll-runtime/atoll"
	"github.com/atoll-runtime/atoll/data/expr"
)

// GroupBy and aggregations (Ray Data's groupby().aggregate()): a hash
// all-to-all. Each map task (fused with the maps before it) aggregates
// its block partially, one row per group it holds, and cuts the partial
// rows into P parts by a hash of the group key; reduce task j combines
// the partials of part j (counts and sums add, Mean from count and sum,
// Std from count, mean and sum of squared deviations combined pairwise,
// Chan et al.) and returns one row per group. With the default P, a part
// too large for one reduce task is first combined and cut again by a
// second hash (agg_split tasks, splitLarge), as soon as it holds that
// much while the maps still run (groupby_overlap.go); map tasks that read
// their input are given enough parts from the start instead, sized by
// the first ones' output (refineParts: one per free CPU). A map task's batch
// of nearly distinct keys is not grouped: its rows pass as groups of one
// (mostlyDistinct). The kernels are in groupby_kernels.go.

// Agg is an aggregation of a group's rows (package data/expr's Agg):
// Count, Sum, Mean, Min, Max, Std of a column below, or of any
// expression (expr.Col("price").Mul(expr.Col("qty")).Sum()). Its output
// column is named like Ray's, count(), sum(x), ..., or by As.
type Agg = expr.Agg

// Count counts the rows of each group (nulls included): column count(),
// int64.
func Count() Agg { return expr.Count() }

// Sum sums column (int64, int32, float64 or float32), skipping nulls:
// column sum(column), int64 for integer columns and float64 for floating
// ones; null for a group with no value.
func Sum(column string) Agg { return expr.Col(column).Sum() }

// Mean averages column (numeric), skipping nulls: mean(column), float64;
// null for a group with no value.
func Mean(column string) Agg { return expr.Col(column).Mean() }

// Min is the smallest value of column (numeric or string), skipping
// nulls and NaN: min(column), of the column's type; null for a group
// with no value.
func Min(column string) Agg { return expr.Col(column).Min() }

// Max is the largest value of column, as Min: max(column).
func Max(column string) Agg { return expr.Col(column).Max() }

// Std is the sample standard deviation of column (numeric; ddof = 1, as
// Ray's default), skipping nulls: std(column), float64; null for a group
// with fewer than two values.
func Std(column string) Agg { return expr.Col(column).Std() }

// GroupedData is a dataset grouped by columns, waiting for its
// aggregations (Ray's GroupedData).
type GroupedData struct {
	d     *Dataset
	keys  []string
	parts int
	err   error
}

// GroupBy groups the rows by the values of one or more columns (int64,
// int32, float64, float32 or string; nulls form a group of their own).
// With no column, every row is in one group: Aggregate then computes over
// the whole dataset (see Dataset.Aggregate). Nothing runs until the
// aggregated dataset is consumed.
func (d *Dataset) GroupBy(columns ...string) *GroupedData {
	g := &GroupedData{d: d, keys: append([]string(nil), columns...)}
	seen := map[string]bool{}
	for _, c := range columns {
		if c == "" || seen[c] {
			g.err = fmt.Errorf("%w: data: GroupBy column %q empty or repeated", atoll.ErrInvalidArgument, c)
		}
		seen[c] = true
	}
	return g
}

// Aggregate computes aggs over every row: a dataset of one row, a column
// per aggregation (Agg.Name), and no row when the dataset has none (as a
// GroupBy gives no group). It is GroupBy().NumPartitions(1).Aggregate:
// each map task aggregates its blocks, and one task combines them.
//
//	totals, err := ds.Aggregate(data.Count(), expr.Col("price").Sum()).TakeAll(ctx)
func (d *Dataset) Aggregate(aggs ...Agg) *Dataset {
	return d.GroupBy().NumPartitions(1).Aggregate(aggs...)
}

// NumPartitions sets the number of reduce tasks, and of hash parts each
// map task cuts its partial aggregates into. By default there is one
// part per CPU of the driver's node (at most one per input block), and
// a part whose partial aggregates are larger than a reduce task should
// hold (a block, or half the run's memory budget shared among the
// parts) is cut again after the map side, by a second hash, into
// sub-parts of that size with a reduce task each: few groups cost one
// object per map task and CPU, and a grouping where every row is a
// group still fits the store. Set it to fix the number of parts, e.g.
// to use the CPUs of several nodes: a part is then cut again only when
// its partial aggregates are more than half the run's memory budget,
// which one reduce task could not hold (Stats says so).
func (g *GroupedData) NumPartitions(n int) *GroupedData {
	ng := *g
	ng.parts = n
	if n <= 0 && ng.err == nil {
		ng.err = fmt.Errorf("%w: data: NumPartitions(%d)", atoll.ErrInvalidArgument, n)
	}
	return &ng
}

// Aggregate computes aggs per group: a dataset of one row per group, the
// group columns then one column per aggregation (Agg.Name). Rows come
// in blocks by hash part, each part sorted by the group columns; Sort
// the result for one global order. A function of aggregations
// (col("a").Sum().Div(col("b").Sum())) aggregates its leaves, each once
// however many of aggs name it, then computes its value per group.
func (g *GroupedData) Aggregate(aggs ...Agg) *Dataset {
	if g.err != nil {
		return g.d.withErr(g.err)
	}
	if len(aggs) == 0 {
		return g.d.withErr(fmt.Errorf("%w: data: Aggregate needs at least one aggregation", atoll.ErrInvalidArgument))
	}
	leaves, after, err := aggLeaves(g.keys, aggs)
	if err != nil {
		return g.d.withErr(err)
	}
	ds := g.aggregate(leaves)
	if after == nil || ds.err != nil {
		return ds
	}
	return ds.SelectExprs(after...)
}

// aggLeaves is what aggs aggregate: each aggregation of rows once, by
// name; and, when one of aggs is a function of aggregations, the
// expressions that then make the output's columns (the keys, then one
// per agg) from the leaves' (nil: the leaves are aggs themselves).
func aggLeaves(keys []string, aggs []Agg) ([]Agg, []expr.Expr, error) {
	composite := false
	for _, a := range aggs {
		composite = composite || a.Leaves() != nil
	}
	if !composite {
		return aggs, nil, nil
	}
	var leaves []Agg
	byName := map[string]string{} // a leaf's name -> its text
	after := make([]expr.Expr, 0, len(keys)+len(aggs))
	for _, k := range keys {
		after = append(after, expr.Col(k))
	}
	outs := map[string]bool{}
	for _, a := range aggs {
		ls := a.Leaves()
		if ls == nil {
			ls = []Agg{a}
		}
		for _, l := range ls {
			switch text, ok := byName[l.Name()]; {
			case !ok:
				byName[l.Name()] = l.String()
				leaves = append(leaves, l)
			case text != l.String():
				return nil, nil, fmt.Errorf("%w: data: Aggregate: two aggregations named %q (%s and %s): name one with As",
					atoll.ErrInvalidArgument, l.Name(), text, l.String())
			}
		}
		if outs[a.Name()] {
			return nil, nil, fmt.Errorf("%w: data: Aggregate: column %q twice (name one with As)", atoll.ErrInvalidArgument, a.Name())
		}
		outs[a.Name()] = true
		if post, ok := a.Post(); ok {
			after = append(after, post.As(a.Name()))
		} else {
			after = append(after, expr.Col(a.Name()))
		}
	}
	return leaves, after, nil
}

// aggregate is the plan's aggregation of aggs, each an aggregation of
// rows.
func (g *GroupedData) aggregate(aggs []Agg) *Dataset {
	names := map[string]bool{}
	for _, k := range g.keys {
		names[k] = true
	}
	for _, a := range aggs {
		switch a.Func() {
		case "count":
		case "sum", "mean", "min", "max", "std":
			if _, ok := a.Input(); !ok {
				return g.d.withErr(fmt.Errorf("%w: data: Aggregate: %s needs a column", atoll.ErrInvalidArgument, a.Func()))
			}
		default:
			return g.d.withErr(fmt.Errorf("%w: data: Aggregate: unknown aggregation %q (use Count, Sum, Mean, Min, Max, Std)", atoll.ErrInvalidArgument, a.Func()))
		}
		if in, ok := a.Input(); ok {
			if _, err := exprWire(in); err != nil {
				return g.d.withErr(err)
			}
		}
		if a.Name() == "" || names[a.Name()] {
			return g.d.withErr(fmt.Errorf("%w: data: Aggregate: column %q twice (name one with As)", atoll.ErrInvalidArgument, a.Name()))
		}
		names[a.Name()] = true
	}
	specs := append([]Agg(nil), aggs...)
	return g.d.with(&logicalOp{name: "aggregate", kind: kindAllToAll, groupKeys: g.keys, aggs: specs, parts: g.parts})
}

// Count is Aggregate(Count()).
func (g *GroupedData) Count() *Dataset { return g.Aggregate(Count()) }

// Sum is Aggregate(Sum(column)).
func (g *GroupedData) Sum(column string) *Dataset { return g.Aggregate(Sum(column)) }

// Mean is Aggregate(Mean(column)).
func (g *GroupedData) Mean(column string) *Dataset { return g.Aggregate(Mean(column)) }

// Min is Aggregate(Min(column)).
func (g *GroupedData) Min(column string) *Dataset { return g.Aggregate(Min(column)) }

// Max is Aggregate(Max(column)).
func (g *GroupedData) Max(column string) *Dataset { return g.Aggregate(Max(column)) }

// Std is Aggregate(Std(column)).
func (g *GroupedData) Std(column string) *Dataset { return g.Aggregate(Std(column)) }
