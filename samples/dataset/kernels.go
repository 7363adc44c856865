package main

import (
	"context"
	"fmt"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/atoll-runtime/atoll/data"
)

// The Go code of pipeline A, used as is by the dataset's tasks and by the
// single-goroutine baseline.

// addScore returns rec with the computed column "score" =
// (7·value + the id's top 20 bits) mod 1000.
func addScore(rec arrow.RecordBatch) (arrow.RecordBatch, error) {
	ids, err := column[*array.Int64](rec, "id")
	if err != nil {
		return nil, err
	}
	vs, err := column[*array.Int64](rec, "value")
	if err != nil {
		return nil, err
	}
	b := array.NewInt64Builder(memory.DefaultAllocator)
	defer b.Release()
	b.Reserve(ids.Len())
	for i := range ids.Len() {
		b.UnsafeAppend(score(ids.Value(i), vs.Value(i)))
	}
	sc := b.NewArray()
	defer sc.Release()
	cols := append(slices.Clone(rec.Columns()), sc)
	s := arrow.NewSchema(append(rec.Schema().Fields(), arrow.Field{Name: "score", Type: arrow.PrimitiveTypes.Int64}), nil)
	return array.NewRecordBatch(s, cols, rec.NumRows()), nil
}

func score(id, value int64) int64 { return (7*value + int64(uint64(id)>>44)) % 1000 }

// keep is the filter: about 30% of the rows pass.
func keep(score int64) bool { return score < 300 }

var aggSchema = arrow.NewSchema([]arrow.Field{
	{Name: "key", Type: arrow.PrimitiveTypes.Int64},
	{Name: "count", Type: arrow.PrimitiveTypes.Int64},
	{Name: "sum_score", Type: arrow.PrimitiveTypes.Int64},
	{Name: "sum_value", Type: arrow.PrimitiveTypes.Int64},
}, nil)

// agg is one key's partial aggregate.
type agg struct{ Count, SumScore, SumValue int64 }

// partialAgg reduces a batch to one row per key present: count, sum of
// score, sum of value (the baseline's per-key aggregation, a Go loop).
func partialAgg(rec arrow.RecordBatch) (arrow.RecordBatch, error) {
	ks, err := column[*array.Int64](rec, "key")
	if err != nil {
		return nil, err
	}
	ss, err := column[*array.Int64](rec, "score")
	if err != nil {
		return nil, err
	}
	vs, err := column[*array.Int64](rec, "value")
	if err != nil {
		return nil, err
	}
	var acc [keys]agg
	for i := range ks.Len() {
		a := &acc[ks.Value(i)]
		a.Count++
		a.SumScore += ss.Value(i)
		a.SumValue += vs.Value(i)
	}
	mem := memory.DefaultAllocator
	bs := []*array.Int64Builder{array.NewInt64Builder(mem), array.NewInt64Builder(mem), array.NewInt64Builder(mem), array.NewInt64Builder(mem)}
	for k, a := range acc {
		if a.Count > 0 {
			bs[0].Append(int64(k))
			bs[1].Append(a.Count)
			bs[2].Append(a.SumScore)
			bs[3].Append(a.SumValue)
		}
	}
	cols := make([]arrow.Array, len(bs))
	for i, b := range bs {
		cols[i] = b.NewArray()
		b.Release()
	}
	out := array.NewRecordBatch(aggSchema, cols, int64(cols[0].Len()))
	for _, c := range cols {
		c.Release()
	}
	return out, nil
}

// reduceAgg adds a partial aggregate record into totals (the baseline's
// reduction).
func reduceAgg(totals map[int64]agg, rec arrow.RecordBatch) error {
	ks, err := column[*array.Int64](rec, "key")
	if err != nil {
		return err
	}
	cs, err := column[*array.Int64](rec, "count")
	if err != nil {
		return err
	}
	ss, err := column[*array.Int64](rec, "sum_score")
	if err != nil {
		return err
	}
	vs, err := column[*array.Int64](rec, "sum_value")
	if err != nil {
		return err
	}
	for i := range ks.Len() {
		a := totals[ks.Value(i)]
		a.Count += cs.Value(i)
		a.SumScore += ss.Value(i)
		a.SumValue += vs.Value(i)
		totals[ks.Value(i)] = a
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

// The functions the datasets apply, registered at init so the worker
// processes (this binary, re-executed) know them.
var (
	scoreFn = data.RegisterBatchFunc("dataset.score", func(_ context.Context, rec arrow.RecordBatch) (arrow.RecordBatch, error) {
		return addScore(rec)
	})
	keepFn = data.RegisterPredicate("dataset.keep", func(_ context.Context, r data.Row) (bool, error) {
		s, ok := r["score"].(int64)
		if !ok {
			return false, fmt.Errorf("score is %T", r["score"])
		}
		return keep(s), nil
	})
)
