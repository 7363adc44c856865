package array

import (
	"context"
	"fmt"

	"gonum.org/v1/gonum/mat"

	"github.com/atoll-runtime/atoll/graph"
	"github.com/atoll-runtime/atoll/internal/errs"
)

// Compute runs a's graph on atoll (one graph.Compute of every chunk) and
// returns a as a gonum matrix, copied out of the object store. opts pass
// through to graph.Compute (call options, callbacks, fusion, stats).
func (a Array) Compute(ctx context.Context, opts ...graph.Option) (*mat.Dense, error) {
	if a.err != nil {
		return nil, a.err
	}
	out := mat.NewDense(a.shape[0], a.shape[1], nil)
	err := a.ComputeChunks(ctx, func(i, j, r0, c0 int, chunk []float64) error {
		w := a.chunks[1][j]
		for r := range a.chunks[0][i] {
			copy(out.RawRowView(r0 + r)[c0:c0+w], chunk[r*w:(r+1)*w])
		}
		return nil
	}, opts...)
	if err != nil {
		return nil, err
	}
	return out, nil
}

// ComputeDense is Compute.
func (a Array) ComputeDense(ctx context.Context, opts ...graph.Option) (*mat.Dense, error) {
	return a.Compute(ctx, opts...)
}

// ComputeVector computes an array of one row or one column (a Sum or Mean
// over an axis) and returns its elements.
func (a Array) ComputeVector(ctx context.Context, opts ...graph.Option) ([]float64, error) {
	if a.err != nil {
		return nil, a.err
	}
	if a.shape[0] != 1 && a.shape[1] != 1 {
		return nil, &ShapeError{Op: "ComputeVector", A: a.shape, B: [2]int{1, a.shape[1]}}
	}
	m, err := a.Compute(ctx, opts...)
	if err != nil {
		return nil, err
	}
	return m.RawMatrix().Data, nil
}

// ComputeScalar computes a 1×1 array (a Sum or Mean over AllAxes) and
// returns its element.
func (a Array) ComputeScalar(ctx context.Context, opts ...graph.Option) (float64, error) {
	if a.err != nil {
		return 0, a.err
	}
	if a.shape != [2]int{1, 1} {
		return 0, &ShapeError{Op: "ComputeScalar", A: a.shape, B: [2]int{1, 1}}
	}
	v, err := a.ComputeVector(ctx, opts...)
	if err != nil {
		return 0, err
	}
	return v[0], nil
}

// ComputeChunks computes every chunk of a in one graph.Compute and calls
// fn with each, in row-major chunk order, with the position of its first
// element. chunk may be a view of the object store: fn must not modify or
// keep it.
func (a Array) ComputeChunks(ctx context.Context, fn func(i, j, row, col int, chunk []float64) error, opts ...graph.Option) error {
	if a.err != nil {
		return a.err
	}
	keys := a.Keys()
	vals, err := graph.Compute(ctx, a.g, keys, opts...)
	if err != nil {
		return err
	}
	k, r0 := 0, 0
	for i, h := range a.chunks[0] {
		c0 := 0
		for j, w := range a.chunks[1] {
			chunk, ok := vals[k].([]float64)
			if !ok {
				return errs.Invalidf("array: chunk %s holds a %T, not a []float64", keys[k], vals[k])
			}
			if err := checkLen(fmt.Sprintf("chunk %s", keys[k]), chunk, h*w); err != nil {
				return err
			}
			if err := fn(i, j, r0, c0, chunk); err != nil {
				return err
			}
			c0 += w
			k++
		}
		r0 += h
	}
	return nil
}

// Persist submits the tasks of a's chunks and returns an Array whose
// graph holds only the chunks, as objects in the store (graph.Persist):
// later computations on it start from the chunks and re-run nothing
// before them. As dask's persist, it returns once the tasks are
// submitted; they run in the background, and a computation on the result
// waits for the chunks it reads (an error in them surfaces there). The
// chunks live as long as the returned Array, or one made from it, is
// reachable.
func (a Array) Persist(ctx context.Context, opts ...graph.Option) (Array, error) {
	if a.err != nil {
		return Array{}, a.err
	}
	keys := a.Keys()
	pg, err := graph.Persist(ctx, a.g, keys, opts...)
	if err != nil {
		return Array{}, err
	}
	g := make(graph.Graph, len(keys))
	for _, k := range keys {
		e, ok := pg[k]
		if !ok {
			return Array{}, fmt.Errorf("array: Persist: the persisted graph has no key %s", k)
		}
		g[k] = e
	}
	return Array{g: g, name: a.name, shape: a.shape, chunks: a.chunks}, nil
}
