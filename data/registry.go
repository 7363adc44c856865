package data

import (
	"context"
	"fmt"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
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

var registry = struct {
	sync.RWMutex
	m map[string]any
}{m: map[string]any{}}

// register adds f under name; a duplicate is a programming error and
// panics, as atoll.NewFunc1 does.
func register(name string, f any) {
	registry.Lock()
	defer registry.Unlock()
	if name == "" {
		panic("data: a registered function needs a name")
	}
	if _, dup := registry.m[name]; dup {
		panic(fmt.Sprintf("data: function %q registered twice", name))
	}
	registry.m[name] = f
}

func lookup[F any](name string) (F, error) {
	registry.RLock()
	defer registry.RUnlock()
	f, ok := registry.m[name].(F)
	if !ok {
		return f, fmt.Errorf("data: no %T named %q is registered in this binary", f, name)
	}
	return f, nil
}

// RegisterBatchFunc registers fn under name for MapBatches.
func RegisterBatchFunc(name string, fn func(context.Context, arrow.RecordBatch) (arrow.RecordBatch, error)) *BatchFunc {
	f := &BatchFunc{name: name, fn: fn}
	register(name, f)
	return f
}

// RegisterRowFunc registers fn under name for Map.
func RegisterRowFunc(name string, fn func(context.Context, Row) (Row, error)) *RowFunc {
	f := &RowFunc{name: name, fn: fn}
	register(name, f)
	return f
}

// RegisterPredicate registers fn under name for Filter.
func RegisterPredicate(name string, fn func(context.Context, Row) (bool, error)) *Predicate {
	f := &Predicate{name: name, fn: fn}
	register(name, f)
	return f
}

// RegisterColumnFunc registers fn under name for AddColumn.
func RegisterColumnFunc(name string, fn func(context.Context, arrow.RecordBatch) (arrow.Array, error)) *ColumnFunc {
	f := &ColumnFunc{name: name, fn: fn}
	register(name, f)
	return f
}
