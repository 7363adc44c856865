package main

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/atoll-runtime/atoll/data/expr"
)

// Pipeline A's computation: expressions (evaluated by the dataset's
// tasks and, with the same kernels, by the single-goroutine baseline),
// then a per-key aggregation (data's GroupBy; a Go loop over the keys in
// the baseline).

// score is the computed column: (7·value + id mod 1000) mod 1000, an
// expression (Go's %: negative for negative ids).
var score = expr.Col("value").Mul(7).Add(expr.Col("id").Mod(1000)).Mod(1000)

// keep is the filter: about 65% of the rows pass.
var keep = expr.Col("score").Lt(300)

// usedColumns are the columns pipeline A reads: the ones its expressions
// and aggregation name (the payload is left in the files).
var usedColumns = []string{"id", "key", "value"}

// agg is one key's partial aggregate.
type agg struct{ Count, SumScore, SumValue int64 }

// sumByKey adds the kept rows into totals, indexed by key (the
// baseline's per-key aggregation: a Go loop over the columns).
func sumByKey(totals *[keys]agg, rec arrow.RecordBatch) error {
	ks, err := column[*array.Int64](rec, "key")
	if err != nil {
		return err
	}
	ss, err := column[*array.Int64](rec, "score")
	if err != nil {
		return err
	}
	vs, err := column[*array.Int64](rec, "value")
	if err != nil {
		return err
	}
	kv, sv, vv := ks.Int64Values(), ss.Int64Values(), vs.Int64Values()
	for i, k := range kv {
		a := &totals[k]
		a.Count++
		a.SumScore += sv[i]
		a.SumValue += vv[i]
	}
	return nil
}

// collectGroups adds the rows of GroupBy("key").Aggregate(Count(),
// Sum("score"), Sum("value")) into totals: one row per key, each key in
// one block only.
func collectGroups(totals map[int64]agg, rec arrow.RecordBatch) error {
	ks, err := column[*array.Int64](rec, "key")
	if err != nil {
		return err
	}
	cs, err := column[*array.Int64](rec, "count()")
	if err != nil {
		return err
	}
	ss, err := column[*array.Int64](rec, "sum(score)")
	if err != nil {
		return err
	}
	vs, err := column[*array.Int64](rec, "sum(value)")
	if err != nil {
		return err
	}
	for i := range ks.Len() {
		k := ks.Value(i)
		if _, dup := totals[k]; dup {
			return fmt.Errorf("key %d in two output rows", k)
		}
		totals[k] = agg{Count: cs.Value(i), SumScore: ss.Value(i), SumValue: vs.Value(i)}
	}
	return nil
}
