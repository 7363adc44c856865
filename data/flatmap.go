package data

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/atoll-runtime/atoll"
	"github.com/atoll-runtime/atoll/internal/errs"
)

// FlatMapFunc is a function of one row returning zero or more rows,
// registered with RegisterFlatMapFunc, for FlatMap.
type FlatMapFunc struct {
	name string
	fn   func(context.Context, Row) ([]Row, error)
}

// Name returns the name fn was registered under.
func (f *FlatMapFunc) Name() string { return f.name }

// RegisterFlatMapFunc registers fn under name for FlatMap.
func RegisterFlatMapFunc(name string, fn func(context.Context, Row) ([]Row, error)) *FlatMapFunc {
	f := &FlatMapFunc{name: name, fn: fn}
	flatMapFuncs.MustAdd(name, f)
	return f
}

// FlatMap replaces every row by the rows fn returns for it (none, one or
// several), in order. It fuses with the map-like operations around it.
// The output's columns are inferred from the rows as Map's are.
func (d *Dataset) FlatMap(fn *FlatMapFunc, opts ...OpOption) *Dataset {
	if fn == nil {
		return d.withErr(fmt.Errorf("%w: data: FlatMap(nil)", atoll.ErrInvalidArgument))
	}
	if err := registered(flatMapFuncs, "FlatMap", fn.name); err != nil {
		return d.withErr(err)
	}
	return d.mapOp("flat_map", opSpec{Kind: "flat_map", Fn: fn.name}, opts)
}

// applyFlatMap runs a flat_map op over a task's records: one output
// record per input record that yields rows (a record whose rows all
// yield nothing yields no record).
func applyFlatMap(ctx context.Context, op opSpec, recs []arrow.RecordBatch) ([]arrow.RecordBatch, error) {
	f, err := errs.Lookup(flatMapFuncs, op.Fn)
	if err != nil {
		return nil, err
	}
	var out []arrow.RecordBatch
	for _, rec := range recs {
		var rows []Row
		err := guard(op, func() error {
			for _, r := range recordRows(rec) {
				more, err := f.fn(ctx, r)
				if err != nil {
					return err
				}
				rows = append(rows, more...)
			}
			return nil
		})
		if err != nil {
			releaseAll(out)
			return nil, err
		}
		if len(rows) == 0 {
			continue
		}
		s, err := rowSchema(rows, rec.Schema())
		if err == nil {
			var nr arrow.RecordBatch
			if nr, err = rowsRecord(s, rows); err == nil {
				out = append(out, nr)
				continue
			}
		}
		releaseAll(out)
		return nil, fmt.Errorf("data: flat_map %s: %w", op.Fn, err)
	}
	return out, nil
}
