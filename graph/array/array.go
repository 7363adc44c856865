// Package array is a chunked 2-D float64 array on task graphs, the role
// dask.array plays for Dask: an Array is a graph (package graph) with one
// key per chunk, TupleKey(name, i, j), whose value is the chunk as a raw
// row-major []float64. Shapes and chunk sizes live in the Array, not in
// the chunks, so a worker reads a chunk as a zero-copy view of the object
// store.
//
//	x := array.Random(1, 10000, 10000, 2000, 2000)
//	y := x.Add(x.T()).Mean(array.Axis0)         // nothing runs yet
//	means, err := y.ComputeVector(ctx)           // one graph, submitted at once
//
// Operations build graphs and run nothing; Compute, ComputeVector,
// ComputeScalar and Persist run them on atoll. An operation on invalid
// operands returns an Array that carries the error (a *ShapeError,
// *ChunkError or *AxisError); Err reports it and every later operation and
// Compute return it, so expressions chain without checks at every step.
//
// The kernels are registered at package init under names starting with
// "array.", so a program that uses this package must import it in every
// process (it does, being the same binary).
package array

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"hash/fnv"
	"maps"
	"reflect"
	"slices"

	"gonum.org/v1/gonum/mat"

	"github.com/atoll-runtime/atoll"
	"github.com/atoll-runtime/atoll/graph"
)

// Axis names the axis a reduction runs over.
type Axis int

const (
	// AllAxes reduces over every element (numpy's axis=None).
	AllAxes Axis = -1
	// Axis0 reduces over rows: one result per column.
	Axis0 Axis = 0
	// Axis1 reduces over columns: one result per row.
	Axis1 Axis = 1
)

// splitEvery is the fan-in of tree reductions (dask's split_every).
const splitEvery = 4

// Array is a lazily computed 2-D float64 array in chunks. The zero Array
// is a 0×0 array with no chunks. Arrays are values: operations return new
// Arrays and never modify their operands.
type Array struct {
	g      graph.Graph
	name   string
	shape  [2]int
	chunks [2][]int // chunk sizes along rows and along columns
	// src, set by T, is the array this one is the transpose of: operations
	// that can read a chunk transposed read src's chunk (j, i) instead of
	// this array's chunk (i, j), whose transpose task then never runs.
	src *Array
	err error
}

// Err returns the error of the operation that made a, or of an operand.
func (a Array) Err() error { return a.err }

// Name returns the name of a's chunk keys.
func (a Array) Name() string { return a.name }

// Shape returns the number of rows and columns.
func (a Array) Shape() (rows, cols int) { return a.shape[0], a.shape[1] }

// Chunks returns the chunk sizes along the rows and along the columns.
func (a Array) Chunks() (rows, cols []int) {
	return slices.Clone(a.chunks[0]), slices.Clone(a.chunks[1])
}

// NumChunks returns the number of chunks along each axis.
func (a Array) NumChunks() (rows, cols int) { return len(a.chunks[0]), len(a.chunks[1]) }

// Key returns the key of chunk (i, j).
func (a Array) Key(i, j int) graph.Key { return graph.TupleKey(a.name, i, j) }

// Keys returns every chunk's key, row of chunks by row of chunks.
func (a Array) Keys() []graph.Key {
	keys := make([]graph.Key, 0, len(a.chunks[0])*len(a.chunks[1]))
	for i := range a.chunks[0] {
		for j := range a.chunks[1] {
			keys = append(keys, a.Key(i, j))
		}
	}
	return keys
}

// Graph returns a copy of the graph that computes a's chunks (and what
// they depend on).
func (a Array) Graph() graph.Graph { return maps.Clone(a.g) }

// String describes a's shape and chunks.
func (a Array) String() string {
	if a.err != nil {
		return fmt.Sprintf("array.Array(error: %v)", a.err)
	}
	return fmt.Sprintf("array.Array(%s, %dx%d, chunks %v×%v)", a.name, a.shape[0], a.shape[1], a.chunks[0], a.chunks[1])
}

// regular returns the chunk sizes of an axis of length n in chunks of c,
// the last one smaller if c does not divide n.
func regular(n, c int) []int {
	out := make([]int, 0, (n+c-1)/c)
	for off := 0; off < n; off += c {
		out = append(out, min(c, n-off))
	}
	return out
}

func checkRegular(op string, rows, cols, chunkRows, chunkCols int) error {
	switch {
	case rows < 1 || cols < 1:
		return &ChunkError{Op: op, Shape: [2]int{rows, cols}, Reason: "an array needs at least one row and one column"}
	case chunkRows < 1 || chunkCols < 1:
		return &ChunkError{Op: op, Shape: [2]int{rows, cols}, Reason: fmt.Sprintf("chunk size %dx%d below 1", chunkRows, chunkCols)}
	}
	return nil
}

// checkChunks verifies that chunks along an axis are positive and add up
// to its length.
func checkChunks(op string, shape [2]int, chunks [2][]int) error {
	for ax := range 2 {
		total := 0
		for _, c := range chunks[ax] {
			if c < 1 {
				return &ChunkError{Op: op, Shape: shape, Reason: fmt.Sprintf("chunk size %d below 1 on axis %d", c, ax)}
			}
			total += c
		}
		if total != shape[ax] {
			return &ChunkError{Op: op, Shape: shape, Reason: fmt.Sprintf("chunks %v on axis %d add up to %d, not %d", chunks[ax], ax, total, shape[ax])}
		}
	}
	return nil
}

// token hashes an operation's inputs into the suffix of its output's
// name: the same expression built twice gets the same keys (as dask's
// tokenize).
func token(parts ...any) string {
	h := fnv.New64a()
	for _, p := range parts {
		fmt.Fprintf(h, "%v\x00", p)
	}
	return fmt.Sprintf("%016x", h.Sum64())
}

// uniqueName names data that has no expression to hash (FromSlice).
func uniqueName(op string) string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return op + "-" + hex.EncodeToString(b[:])
}

func failed(err error) Array { return Array{err: err} }

// firstErr returns the first error among arrays.
func firstErr(arrays ...Array) error {
	for _, a := range arrays {
		if a.err != nil {
			return a.err
		}
	}
	return nil
}

// merged returns a new graph holding every key of gs.
func merged(gs ...graph.Graph) graph.Graph {
	n := 0
	for _, g := range gs {
		n += len(g)
	}
	out := make(graph.Graph, n)
	for _, g := range gs {
		maps.Copy(out, g)
	}
	return out
}

// blockwise builds a new array of the given shape and chunks whose chunk
// (i, j) is task(i, j), on top of the graphs deps.
func blockwise(name string, shape [2]int, chunks [2][]int, deps []graph.Graph, task func(i, j int) graph.Expr) Array {
	g := merged(deps...)
	for i := range chunks[0] {
		for j := range chunks[1] {
			g[graph.TupleKey(name, i, j)] = task(i, j)
		}
	}
	return Array{g: g, name: name, shape: shape, chunks: chunks}
}

// Random returns a rows×cols array of values uniform in [0, 1), in chunks
// of chunkRows×chunkCols (smaller at the edges). Each chunk is generated
// by its own task from seed and its position (see RandomBlock): the same
// arguments always give the same array.
func Random(seed uint64, rows, cols, chunkRows, chunkCols int) Array {
	if err := checkRegular("Random", rows, cols, chunkRows, chunkCols); err != nil {
		return failed(err)
	}
	chunks := [2][]int{regular(rows, chunkRows), regular(cols, chunkCols)}
	name := "random-" + token(seed, rows, cols, chunkRows, chunkCols)
	return blockwise(name, [2]int{rows, cols}, chunks, nil, func(i, j int) graph.Expr {
		return graph.Call(fnRandom, graph.Lit(seed), graph.Lit(i), graph.Lit(j), graph.Lit(chunks[0][i]*chunks[1][j]))
	})
}

// Ones returns a rows×cols array of ones in chunks of chunkRows×chunkCols.
func Ones(rows, cols, chunkRows, chunkCols int) Array {
	if err := checkRegular("Ones", rows, cols, chunkRows, chunkCols); err != nil {
		return failed(err)
	}
	chunks := [2][]int{regular(rows, chunkRows), regular(cols, chunkCols)}
	name := "ones-" + token(rows, cols, chunkRows, chunkCols)
	return blockwise(name, [2]int{rows, cols}, chunks, nil, func(i, j int) graph.Expr {
		return graph.Call(fnOnes, graph.Lit(chunks[0][i]*chunks[1][j]))
	})
}

// FromSlice returns the rows×cols array whose row-major elements are data,
// in chunks of chunkRows×chunkCols. Each chunk is copied into the object
// store now (atoll must be initialised); the Array holds the references,
// so the chunks live as long as it, or an array made from it, does.
func FromSlice(ctx context.Context, data []float64, rows, cols, chunkRows, chunkCols int) Array {
	if err := checkRegular("FromSlice", rows, cols, chunkRows, chunkCols); err != nil {
		return failed(err)
	}
	if len(data) != rows*cols {
		return failed(&ShapeError{Op: "FromSlice", A: [2]int{rows, cols}, B: [2]int{1, len(data)}})
	}
	return fromStrided(ctx, "FromSlice", data, cols, rows, cols, chunkRows, chunkCols)
}

// FromDense is FromSlice for a gonum matrix (its rows may be strided).
func FromDense(ctx context.Context, m *mat.Dense, chunkRows, chunkCols int) Array {
	raw := m.RawMatrix()
	if err := checkRegular("FromDense", raw.Rows, raw.Cols, chunkRows, chunkCols); err != nil {
		return failed(err)
	}
	return fromStrided(ctx, "FromDense", raw.Data, raw.Stride, raw.Rows, raw.Cols, chunkRows, chunkCols)
}

func fromStrided(ctx context.Context, op string, data []float64, stride, rows, cols, chunkRows, chunkCols int) Array {
	chunks := [2][]int{regular(rows, chunkRows), regular(cols, chunkCols)}
	name := uniqueName("array")
	g := make(graph.Graph, len(chunks[0])*len(chunks[1]))
	r0 := 0
	for i, h := range chunks[0] {
		c0 := 0
		for j, w := range chunks[1] {
			ref, err := atoll.PutWith(ctx, h*w, func(dst []float64) {
				for r := range h {
					copy(dst[r*w:(r+1)*w], data[(r0+r)*stride+c0:])
				}
			})
			if err != nil {
				return failed(fmt.Errorf("array: %s: put chunk (%d, %d): %w", op, i, j, err))
			}
			g[graph.TupleKey(name, i, j)] = graph.Object(ref, reflect.TypeFor[[]float64]())
			c0 += w
		}
		r0 += h
	}
	return Array{g: g, name: name, shape: [2]int{rows, cols}, chunks: chunks}
}

// RandomDense returns, computed in this process, the matrix
// Random(seed, rows, cols, chunkRows, chunkCols) computes: the baseline a
// test or a benchmark checks Random's results against.
func RandomDense(seed uint64, rows, cols, chunkRows, chunkCols int) *mat.Dense {
	out := mat.NewDense(rows, cols, nil)
	var buf []float64
	for i, r0 := 0, 0; r0 < rows; i, r0 = i+1, r0+chunkRows {
		h := min(chunkRows, rows-r0)
		for j, c0 := 0, 0; c0 < cols; j, c0 = j+1, c0+chunkCols {
			w := min(chunkCols, cols-c0)
			buf = slices.Grow(buf[:0], h*w)[:h*w]
			RandomBlock(seed, i, j, buf)
			for r := range h {
				copy(out.RawRowView(r0 + r)[c0:c0+w], buf[r*w:(r+1)*w])
			}
		}
	}
	return out
}
