package data

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"

	"github.com/atoll-runtime/atoll"
	"github.com/atoll-runtime/atoll/internal/errs"
)

// Union is the rows of d, then those of each of others, in order (Ray's
// union): lazy, each input runs its own plan within the union's run (its
// budget, its stats), and the maps after the union fuse into tasks over
// the inputs' blocks. The inputs must have the same schema: inputs whose
// plans give two schemas are a *SchemaError before any task runs (and
// the operations after the union are checked against the schema they
// share); where a plan cannot tell (after a registered function), a
// block of another schema is a *SchemaError when it comes.
func (d *Dataset) Union(others ...*Dataset) *Dataset {
	all := append([]*Dataset{d}, others...)
	for i, o := range all {
		if o == nil {
			return d.withErr(fmt.Errorf("%w: data: Union: dataset %d is nil", atoll.ErrInvalidArgument, i))
		}
	}
	src := &source{inputs: func(ctx context.Context, r *run) (blockStream, unitSource, *arrow.Schema, error) {
		cs := &concatStream{}
		var schema *arrow.Schema
		known := true
		for _, o := range all {
			s, _, os, err := o.startIn(ctx, r)
			if err != nil {
				cs.close()
				return nil, nil, nil, err
			}
			cs.ss = append(cs.ss, s)
			switch {
			case os == nil:
				known = false
			case schema == nil:
				schema = os
			case !schema.Equal(os):
				cs.close()
				return nil, nil, nil, &SchemaError{What: "Union of datasets", A: schemaLine(schema), B: schemaLine(os)}
			}
		}
		if !known {
			schema = nil
		}
		return cs, nil, schema, nil
	}}
	nd := newDataset(src, "union", firstErr(all))
	nd.cfg = d.cfg
	return nd
}

func firstErr(ds []*Dataset) error {
	for _, d := range ds {
		if d.err != nil {
			return d.err
		}
	}
	return nil
}

// concatStream yields the blocks of each stream in turn, checking that
// they share a schema.
type concatStream struct {
	ss     []blockStream
	schema *arrow.Schema
}

func (c *concatStream) next(ctx context.Context) (block, bool, error) {
	for len(c.ss) > 0 {
		b, ok, err := c.ss[0].next(ctx)
		if err != nil {
			return block{}, false, err
		}
		if !ok {
			c.ss[0].close()
			c.ss = c.ss[1:]
			continue
		}
		if b.rows > 0 || b.schema.NumFields() > 0 {
			if c.schema == nil {
				c.schema = b.schema
			} else if !c.schema.Equal(b.schema) {
				b.release()
				return block{}, false, &SchemaError{What: "Union of datasets", A: schemaLine(c.schema), B: schemaLine(b.schema)}
			}
		}
		return b, true, nil
	}
	return block{}, false, nil
}

func (c *concatStream) close() {
	for _, s := range c.ss {
		s.close()
	}
	c.ss = nil
}

// Zip puts the columns of other beside d's, row by row (Ray's zip): the
// datasets must have the same number of rows, or the run fails with an
// ErrInvalidArgument before any zip task runs. A column of other whose
// name d has too is renamed with the suffix _1 (or _2...). Both inputs
// run to the end first (their blocks stay in the store, spilled if they
// do not fit), then one task per block of d takes the rows of other's
// blocks that line up with it; the maps after the zip fuse into those
// tasks.
func (d *Dataset) Zip(other *Dataset) *Dataset {
	if other == nil {
		return d.withErr(fmt.Errorf("%w: data: Zip(nil)", atoll.ErrInvalidArgument))
	}
	src := &source{inputs: func(ctx context.Context, r *run) (blockStream, unitSource, *arrow.Schema, error) {
		l, _, _, err := d.startIn(ctx, r)
		if err != nil {
			return nil, nil, nil, err
		}
		rs, _, _, err := other.startIn(ctx, r)
		if err != nil {
			l.close()
			return nil, nil, nil, err
		}
		return nil, &zipUnits{r: r, left: l, right: rs}, nil, nil
	}}
	nd := newDataset(src, "zip", firstErr([]*Dataset{d, other}))
	nd.cfg = d.cfg
	return nd
}

// zipSpec is a zip task's input: a left block, then the right blocks
// that hold its rows, from row Skip of the first.
type zipSpec struct {
	Skip, Rows int64
}

// zipUnits runs both sides of a zip to the end, then yields a unit per
// left block.
type zipUnits struct {
	r           *run
	left, right blockStream
	us          []unit
	owned       []block // blocks the units share: released once all are submitted
	started     bool
}

func (z *zipUnits) nextUnit(ctx context.Context) (unit, bool, error) {
	if !z.started {
		z.started = true
		if err := z.plan(ctx); err != nil {
			return unit{}, false, err
		}
	}
	if len(z.us) == 0 {
		z.release() // every unit was submitted: the tasks hold their blocks
		return unit{}, false, nil
	}
	u := z.us[0]
	z.us = z.us[1:]
	return u, true, nil
}

func (z *zipUnits) plan(ctx context.Context) error {
	ls, err := drain(ctx, z.left, z.r)
	if err != nil {
		return err
	}
	rs, err := drain(ctx, z.right, z.r)
	if err != nil {
		releaseBlocks(ls)
		return err
	}
	var nl, nr int64
	for _, b := range ls {
		nl += b.rows
	}
	for _, b := range rs {
		nr += b.rows
	}
	for _, bs := range [][]block{ls, rs} {
		for i := range bs {
			if !bs[i].borrowed {
				z.owned = append(z.owned, bs[i])
				bs[i].borrowed = true // shared by units: released by z
			}
		}
	}
	if nl != nr {
		z.release()
		return fmt.Errorf("%w: data: Zip of datasets of %d and %d rows", atoll.ErrInvalidArgument, nl, nr)
	}
	// right blocks with rows, and the row each starts at
	var right []block
	var starts []int64
	var at int64
	for _, b := range rs {
		if b.rows > 0 {
			right, starts = append(right, b), append(starts, at)
			at += b.rows
		}
	}
	var lo int64
	k := 0 // the first right block holding row lo
	for _, b := range ls {
		if b.rows == 0 {
			continue
		}
		hi := lo + b.rows
		for starts[k]+right[k].rows <= lo {
			k++
		}
		u := unit{zip: &zipSpec{Skip: lo - starts[k], Rows: b.rows}, inputs: []block{b}, estimate: b.bytes}
		for j := k; j < len(right) && starts[j] < hi; j++ {
			u.inputs = append(u.inputs, right[j])
			share := min(hi, starts[j]+right[j].rows) - max(lo, starts[j])
			u.estimate += right[j].bytes * share / right[j].rows
		}
		z.us = append(z.us, u)
		lo = hi
	}
	return nil
}

func (z *zipUnits) release() {
	for _, b := range z.owned {
		b.ref.Release()
	}
	z.owned = nil
}

func (z *zipUnits) close() {
	z.us = nil
	z.release()
	z.left.close()
	z.right.close()
}

func releaseBlocks(bs []block) {
	for _, b := range bs {
		b.release()
	}
}

// zipInputs builds a zip task's record: the left block's columns, then
// the right rows lined up with them (renamed where a name repeats).
func zipInputs(ctx context.Context, z *zipSpec, inputs []atoll.Raw) (arrow.RecordBatch, error) {
	if len(inputs) < 2 {
		return nil, errs.Malformedf(specWhat, "a zip task of %d input blocks", len(inputs))
	}
	recs := make([]arrow.RecordBatch, 0, len(inputs))
	defer func() { releaseAll(recs) }()
	for _, in := range inputs {
		rec, err := decodeBlock(in.Data)
		if err != nil {
			return nil, err
		}
		recs = append(recs, rec)
	}
	left := recs[0]
	right, err := concatRecords(compute.GetAllocator(ctx), recs[1].Schema(), recs[1:])
	if err != nil {
		return nil, err
	}
	defer right.Release()
	if z.Skip+z.Rows > right.NumRows() || left.NumRows() != z.Rows {
		return nil, errs.Malformedf(specWhat, "a zip task of rows %d+%d of %d on the right, %d on the left", z.Skip, z.Rows, right.NumRows(), left.NumRows())
	}
	part := right.NewSlice(z.Skip, z.Skip+z.Rows)
	defer part.Release()
	fields := append([]arrow.Field(nil), left.Schema().Fields()...)
	cols := append([]arrow.Array(nil), left.Columns()...)
	taken := map[string]bool{}
	for _, f := range fields {
		taken[f.Name] = true
	}
	for j, f := range part.Schema().Fields() {
		name := f.Name
		for n := 1; taken[name]; n++ {
			name = fmt.Sprintf("%s_%d", f.Name, n)
		}
		taken[name] = true
		f.Name = name
		fields, cols = append(fields, f), append(cols, part.Column(j))
	}
	return array.NewRecordBatch(arrow.NewSchema(fields, nil), cols, z.Rows), nil
}
