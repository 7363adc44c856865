package data

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/atoll-runtime/atoll"
	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/registry"
)

// User code runs in worker processes, which know functions by name only:
// like atoll's remote functions and graph's functions, the functions a
// dataset applies are registered at package init (in a var declaration),
// so every process of the binary knows them.

// BatchFunc is a function of a batch registered with RegisterBatchFunc,
// for MapBatches. It must not keep its argument after it returns (its
// buffers may be views of shared memory); a result that is its argument
// or slices of it is fine. It owns the record it returns (the caller
// releases it).
type BatchFunc struct {
	name string
	fn   func(context.Context, arrow.RecordBatch) (arrow.RecordBatch, error)
}

// RowFunc is a function of one row registered with RegisterRowFunc, for
// Map.
type RowFunc struct {
	name string
	fn   func(context.Context, Row) (Row, error)
}

// Predicate is a row predicate registered with RegisterPredicate, for
// Filter.
type Predicate struct {
	name string
	fn   func(context.Context, Row) (bool, error)
}

// ColumnFunc computes a column from a batch, registered with
// RegisterColumnFunc, for AddColumn. The array it returns must have one
// value per row of the batch; the caller releases it.
type ColumnFunc struct {
	name string
	fn   func(context.Context, arrow.RecordBatch) (arrow.Array, error)
}

// Name returns the name fn was registered under.
func (f *BatchFunc) Name() string { return f.name }

// Name returns the name fn was registered under.
func (f *RowFunc) Name() string { return f.name }

// Name returns the name fn was registered under.
func (f *Predicate) Name() string { return f.name }

// Name returns the name fn was registered under.
func (f *ColumnFunc) Name() string { return f.name }

// The dataset's kinds of the program's registry (internal/registry), one
// namespace each: an operation names its function in the kind the
// operation takes (Map a row function, Filter a predicate...), so a
// BatchFunc and a RowFunc may share a name, but two RowFuncs may not.
// Registration is at package init: an empty name, or one its kind holds
// already, is a programming error and panics, as atoll.NewFunc1 does
// ("atoll: data row function %q registered twice").
var (
	batchFuncs   = registry.NewKind[*BatchFunc]("data batch function")
	rowFuncs     = registry.NewKind[*RowFunc]("data row function")
	predicates   = registry.NewKind[*Predicate]("data predicate")
	columnFuncs  = registry.NewKind[*ColumnFunc]("data column function")
	flatMapFuncs = registry.NewKind[*FlatMapFunc]("data flat-map function")
	batchClasses = registry.NewKind[*BatchClass]("data batch class")
)

// registered is the driver's check of the function an operation takes:
// a handle no Register function made (a zero value) names nothing, a
// NotRegisteredError that matches atoll.ErrInvalidArgument too.
func registered[E any](k *registry.Kind[E], op, name string) error {
	if _, err := errs.Lookup(k, name); err != nil {
		return fmt.Errorf("%w: data: %s: %w", atoll.ErrInvalidArgument, op, err)
	}
	return nil
}

// RegisterBatchFunc registers fn under name for MapBatches.
func RegisterBatchFunc(name string, fn func(context.Context, arrow.RecordBatch) (arrow.RecordBatch, error)) *BatchFunc {
	f := &BatchFunc{name: name, fn: fn}
	batchFuncs.MustAdd(name, f)
	return f
}

// RegisterRowFunc registers fn under name for Map.
func RegisterRowFunc(name string, fn func(context.Context, Row) (Row, error)) *RowFunc {
	f := &RowFunc{name: name, fn: fn}
	rowFuncs.MustAdd(name, f)
	return f
}

// RegisterPredicate registers fn under name for Filter.
func RegisterPredicate(name string, fn func(context.Context, Row) (bool, error)) *Predicate {
	f := &Predicate{name: name, fn: fn}
	predicates.MustAdd(name, f)
	return f
}

// RegisterColumnFunc registers fn under name for AddColumn.
func RegisterColumnFunc(name string, fn func(context.Context, arrow.RecordBatch) (arrow.Array, error)) *ColumnFunc {
	f := &ColumnFunc{name: name, fn: fn}
	columnFuncs.MustAdd(name, f)
	return f
}
