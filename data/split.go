package data

import (
	"context"
	"fmt"

	"github.com/atoll-runtime/atoll"
)

// Split runs d now and returns n datasets of its rows for n consumers
// (Ray's split(n, equal=True)): dataset i holds rows [i·R/n, (i+1)·R/n)
// of d's R rows, in order, so the row counts differ by at most one. The
// blocks stay in the store (spilled if they do not fit) while a split
// that holds them is reachable: whole blocks are shared as they are, and
// a block across a boundary is cut by a task per piece. Each split is a
// materialized dataset: consumers can run it at once from several
// goroutines.
func (d *Dataset) Split(ctx context.Context, n int) ([]*Dataset, error) {
	if n <= 0 {
		return nil, fmt.Errorf("%w: data: Split(%d)", atoll.ErrInvalidArgument, n)
	}
	mat, err := d.Materialize(ctx)
	if err != nil {
		return nil, err
	}
	var total int64
	for _, b := range mat.source.blocks {
		total += b.rows
	}
	// each split's blocks, in order: a whole block, or the output of
	// slice unit k (piece >= 0)
	type piece struct {
		b    block
		unit int
	}
	splits := make([][]piece, n)
	var us []unit
	var at int64 // the first row of the current block
	for _, b := range mat.source.blocks {
		for i := range n {
			lo, hi := int64(i)*total/int64(n), int64(i+1)*total/int64(n)
			from, to := max(lo, at), min(hi, at+b.rows)
			switch {
			case from >= to:
			case from == at && to == at+b.rows:
				splits[i] = append(splits[i], piece{b: b, unit: -1})
			default:
				splits[i] = append(splits[i], piece{unit: len(us)})
				us = append(us, unit{inputs: []block{b}, estimate: b.bytes * (to - from) / b.rows,
					ops: []opSpec{{Kind: "limit", Offset: from - at, Limit: to - from}}})
			}
		}
		at += b.rows
	}
	outs := make([][]block, len(us))
	if len(us) > 0 {
		r, err := newRun(ctx, d.cfg)
		if err != nil {
			return nil, err
		}
		st := &stageStats{name: "split"}
		sub := &subStats{name: "split"}
		st.subs = append(st.subs, sub)
		r.addStage(st)
		// a task per piece, in order: onMeta counts each one's blocks
		var counts []int
		ts := &taskStream{r: r, st: sub, src: &listUnits{us: us}, out: outSpec{Kind: "blocks"}, opts: taskOptions(callOptions(&logicalOp{})),
			onMeta: func(m *taskMeta) { counts = append(counts, len(m.Rows)) }}
		bs, err := drain(ctx, ts, r)
		if err != nil {
			return nil, err
		}
		for k, c := range counts {
			outs[k], bs = bs[:c], bs[c:]
		}
	}
	ds := make([]*Dataset, n)
	for i, ps := range splits {
		var bs []block
		for _, p := range ps {
			if p.unit < 0 {
				bs = append(bs, p.b)
				continue
			}
			for _, b := range outs[p.unit] {
				b.borrowed = true
				bs = append(bs, b)
			}
		}
		ds[i] = newDataset(&source{blocks: bs}, "split", nil)
		ds[i].cfg = d.cfg
	}
	return ds, nil
}
