package array

import (
	"context"
	"slices"
	"strings"

	"github.com/atoll-runtime/atoll/graph"
)

// chunkOf returns the expression that reads a's chunk (i, j) and whether
// that value is stored transposed (a lazy transpose reads its source's
// chunk (j, i)).
func (a Array) chunkOf(i, j int) (graph.Expr, bool) {
	if a.src != nil {
		return graph.Ref(a.src.Key(j, i)), true
	}
	return graph.Ref(a.Key(i, j)), false
}

// readGraph is the graph chunkOf's expressions need.
func (a Array) readGraph() graph.Graph {
	if a.src != nil {
		return a.src.g
	}
	return a.g
}

// Add returns a + b elementwise. b is rechunked to a's chunks if they
// differ; shapes must be equal (*ShapeError).
func (a Array) Add(b Array) Array { return elementwise(opAdd, a, b) }

// Sub returns a - b elementwise (see Add).
func (a Array) Sub(b Array) Array { return elementwise(opSub, a, b) }

// Mul returns a * b elementwise (see Add).
func (a Array) Mul(b Array) Array { return elementwise(opMul, a, b) }

func elementwise(op int, a, b Array) Array {
	name := opNames[op]
	if err := firstErr(a, b); err != nil {
		return failed(err)
	}
	if a.shape != b.shape {
		return failed(&ShapeError{Op: name, A: a.shape, B: b.shape})
	}
	if !sameChunks(a.chunks, b.chunks) {
		b = b.RechunkTo(a.chunks[0], a.chunks[1])
		if b.err != nil {
			return failed(b.err)
		}
	}
	out := strings.ToLower(name) + "-" + token(a.name, b.name)
	return blockwise(out, a.shape, a.chunks, []graph.Graph{a.readGraph(), b.readGraph()}, func(i, j int) graph.Expr {
		ea, ta := a.chunkOf(i, j)
		eb, tb := b.chunkOf(i, j)
		flags := 0
		if ta {
			flags |= flagA
		}
		if tb {
			flags |= flagB
		}
		return graph.Call(fnBinop, graph.Lit(op), graph.Lit(a.chunks[0][i]), graph.Lit(a.chunks[1][j]), graph.Lit(flags), ea, eb)
	})
}

func sameChunks(x, y [2][]int) bool {
	return slices.Equal(x[0], y[0]) && slices.Equal(x[1], y[1])
}

// Scale returns s·a.
func (a Array) Scale(s float64) Array {
	if a.err != nil {
		return a
	}
	out := "scale-" + token(a.name, s)
	return blockwise(out, a.shape, a.chunks, []graph.Graph{a.g}, func(i, j int) graph.Expr {
		return graph.Call(fnScale, graph.Lit(s), graph.Ref(a.Key(i, j)))
	})
}

// Map applies the function registered under fn (with graph.Register or
// RegisterMap) to every chunk. It must have the signature
// func(context.Context, []float64) ([]float64, error), return a new slice
// of the same length (chunks are row-major, shaped as a's) and never write
// into its argument, a read-only view of the object store.
func (a Array) Map(fn string) Array {
	if a.err != nil {
		return a
	}
	out := "map-" + token(fn, a.name)
	return blockwise(out, a.shape, a.chunks, []graph.Graph{a.g}, func(i, j int) graph.Expr {
		return graph.Call(fn, graph.Ref(a.Key(i, j)))
	})
}

// RegisterMap registers f, applied to every element, as the chunk
// function name for Map. Call it at package init, like graph.Register.
func RegisterMap(name string, f func(float64) float64) *graph.Func {
	return graph.Register(name, func(_ context.Context, x []float64) ([]float64, error) {
		out := make([]float64, len(x))
		for i, v := range x {
			out[i] = f(v)
		}
		return out, nil
	})
}

// T returns the transpose of a. Its chunks are tasks of their own, but
// elementwise operations, reductions and MatMul read a's chunks
// transposed instead, so in x.Add(x.T()) no transposed chunk is stored.
func (a Array) T() Array {
	if a.err != nil {
		return a
	}
	if a.src != nil {
		return *a.src
	}
	src := a
	out := "transpose-" + token(a.name)
	t := blockwise(out, [2]int{a.shape[1], a.shape[0]}, [2][]int{a.chunks[1], a.chunks[0]}, []graph.Graph{a.g}, func(i, j int) graph.Expr {
		// Chunk (i, j) of aᵀ is chunk (j, i) of a, a rows×cols block.
		return graph.Call(fnTranspose, graph.Lit(a.chunks[0][j]), graph.Lit(a.chunks[1][i]), graph.Ref(a.Key(j, i)))
	})
	t.src = &src
	return t
}

// Transpose is T.
func (a Array) Transpose() Array { return a.T() }

// Rechunk returns a in chunks of chunkRows×chunkCols (smaller at the
// edges).
func (a Array) Rechunk(chunkRows, chunkCols int) Array {
	if a.err != nil {
		return a
	}
	if err := checkRegular("Rechunk", a.shape[0], a.shape[1], chunkRows, chunkCols); err != nil {
		return failed(err)
	}
	return a.RechunkTo(regular(a.shape[0], chunkRows), regular(a.shape[1], chunkCols))
}

// RechunkTo returns a in chunks of the given sizes along each axis, which
// must be positive and add up to a's shape (*ChunkError). Each new chunk
// is one task that copies the pieces of the old chunks it overlaps.
func (a Array) RechunkTo(rowChunks, colChunks []int) Array {
	if a.err != nil {
		return a
	}
	chunks := [2][]int{slices.Clone(rowChunks), slices.Clone(colChunks)}
	if err := checkChunks("Rechunk", a.shape, chunks); err != nil {
		return failed(err)
	}
	if sameChunks(a.chunks, chunks) {
		return a
	}
	out := "rechunk-" + token(a.name, chunks[0], chunks[1])
	rowOv := overlaps(a.chunks[0], chunks[0])
	colOv := overlaps(a.chunks[1], chunks[1])
	return blockwise(out, a.shape, chunks, []graph.Graph{a.g}, func(i, j int) graph.Expr {
		geom := []int64{int64(chunks[0][i]), int64(chunks[1][j])}
		var parts []graph.Expr
		for _, ro := range rowOv[i] {
			for _, co := range colOv[j] {
				geom = append(geom, int64(a.chunks[1][co.src]), int64(ro.srcOff), int64(co.srcOff),
					int64(ro.dstOff), int64(co.dstOff), int64(ro.n), int64(co.n))
				parts = append(parts, graph.Ref(a.Key(ro.src, co.src)))
			}
		}
		return graph.Call(fnRechunk, append([]graph.Expr{graph.Lit(geom)}, parts...)...)
	})
}

// overlap is the part of old chunk src that falls in a new chunk: n
// elements from srcOff in the old chunk, to dstOff in the new one.
type overlap struct{ src, srcOff, dstOff, n int }

// overlaps lists, for each new chunk along one axis, the old chunks it
// overlaps.
func overlaps(old, new []int) [][]overlap {
	out := make([][]overlap, len(new))
	oi, oStart := 0, 0 // current old chunk and where it starts
	start := 0
	for ni, n := range new {
		end := start + n
		for pos := start; pos < end; {
			for oStart+old[oi] <= pos {
				oStart += old[oi]
				oi++
			}
			stop := min(end, oStart+old[oi])
			out[ni] = append(out[ni], overlap{src: oi, srcOff: pos - oStart, dstOff: pos - start, n: stop - pos})
			pos = stop
		}
		start = end
	}
	return out
}

// MatMul returns the matrix product a·b, block by block: output chunk
// (i, j) is a chain of tasks that each add one a(i, l)·b(l, j) product,
// computed by gonum's BLAS (Dgemm), to the previous one, so at most one
// product per output chunk is in flight. b's rows are rechunked to a's
// column chunks if they differ; a's columns must equal b's rows
// (*ShapeError). Transposed operands (a.T()) are read with Dgemm's
// transpose flags, not transposed first.
func (a Array) MatMul(b Array) Array {
	if err := firstErr(a, b); err != nil {
		return failed(err)
	}
	if a.shape[1] != b.shape[0] {
		return failed(&ShapeError{Op: "MatMul", A: a.shape, B: b.shape})
	}
	if !slices.Equal(a.chunks[1], b.chunks[0]) {
		b = b.RechunkTo(a.chunks[1], b.chunks[1])
		if b.err != nil {
			return failed(b.err)
		}
	}
	tok := token(a.name, b.name)
	out, part := "matmul-"+tok, "matmul-part-"+tok
	g := merged(a.readGraph(), b.readGraph())
	chunks := [2][]int{a.chunks[0], b.chunks[1]}
	for i, m := range chunks[0] {
		for j, n := range chunks[1] {
			var acc graph.Expr
			for l, k := range a.chunks[1] {
				ea, ta := a.chunkOf(i, l)
				eb, tb := b.chunkOf(l, j)
				flags := 0
				if ta {
					flags |= flagA
				}
				if tb {
					flags |= flagB
				}
				dims := []graph.Expr{graph.Lit(m), graph.Lit(k), graph.Lit(n), graph.Lit(flags)}
				var task graph.Expr
				if acc == nil {
					task = graph.Call(fnMatMul, append(dims, ea, eb)...)
				} else {
					task = graph.Call(fnMatMulAcc, append(dims, acc, ea, eb)...)
				}
				key := graph.TupleKey(part, i, j, l)
				if l == len(a.chunks[1])-1 {
					key = graph.TupleKey(out, i, j)
				}
				g[key] = task
				acc = graph.Ref(key)
			}
		}
	}
	return Array{g: g, name: out, shape: [2]int{a.shape[0], b.shape[1]}, chunks: chunks}
}

// Sum returns the sum over axis, keeping both dimensions (numpy's
// keepdims): a 1×cols array for Axis0, rows×1 for Axis1, 1×1 for AllAxes
// (*AxisError for any other). Each chunk is summed by a task; the partial
// sums are added in a tree of fan-in 4.
func (a Array) Sum(axis Axis) Array {
	if a.err != nil {
		return a
	}
	tok := token(a.name, axis)
	out, chunkName, combine := "sum-"+tok, "sum-chunk-"+tok, "sum-combine-"+tok
	g := merged(a.readGraph())
	partial := func(fn string, i, j int) graph.Expr {
		e, t := a.chunkOf(i, j)
		key := graph.TupleKey(chunkName, i, j)
		flags := 0
		if t {
			flags = flagA
		}
		if fn == fnTotal {
			g[key] = graph.Call(fn, e)
		} else {
			g[key] = graph.Call(fn, graph.Lit(a.chunks[0][i]), graph.Lit(a.chunks[1][j]), graph.Lit(flags), e)
		}
		return graph.Ref(key)
	}
	ni, nj := len(a.chunks[0]), len(a.chunks[1])
	switch axis {
	case Axis0:
		for j := range nj {
			parts := make([]graph.Expr, ni)
			for i := range ni {
				parts[i] = partial(fnColSum, i, j)
			}
			treeReduce(g, parts, graph.TupleKey(out, 0, j), combine, j)
		}
		return Array{g: g, name: out, shape: [2]int{1, a.shape[1]}, chunks: [2][]int{{1}, a.chunks[1]}}
	case Axis1:
		for i := range ni {
			parts := make([]graph.Expr, nj)
			for j := range nj {
				parts[j] = partial(fnRowSum, i, j)
			}
			treeReduce(g, parts, graph.TupleKey(out, i, 0), combine, i)
		}
		return Array{g: g, name: out, shape: [2]int{a.shape[0], 1}, chunks: [2][]int{a.chunks[0], {1}}}
	case AllAxes:
		parts := make([]graph.Expr, 0, ni*nj)
		for i := range ni {
			for j := range nj {
				parts = append(parts, partial(fnTotal, i, j))
			}
		}
		treeReduce(g, parts, graph.TupleKey(out, 0, 0), combine, 0)
		return Array{g: g, name: out, shape: [2]int{1, 1}, chunks: [2][]int{{1}, {1}}}
	}
	return failed(&AxisError{Op: "Sum", Axis: axis})
}

// Mean returns the mean over axis (see Sum).
func (a Array) Mean(axis Axis) Array {
	if a.err != nil {
		return a
	}
	var n int
	switch axis {
	case Axis0:
		n = a.shape[0]
	case Axis1:
		n = a.shape[1]
	case AllAxes:
		n = a.shape[0] * a.shape[1]
	default:
		return failed(&AxisError{Op: "Mean", Axis: axis})
	}
	return a.Sum(axis).Scale(1 / float64(n))
}

// treeReduce adds parts in a tree of fan-in splitEvery into key final;
// the inner nodes are keys (combine, group, level, position).
func treeReduce(g graph.Graph, parts []graph.Expr, final graph.Key, combine string, group int) {
	for level := 0; len(parts) > splitEvery; level++ {
		next := make([]graph.Expr, 0, (len(parts)+splitEvery-1)/splitEvery)
		for p := 0; p < len(parts); p += splitEvery {
			key := graph.TupleKey(combine, group, level, p/splitEvery)
			g[key] = graph.Call(fnAddVec, parts[p:min(p+splitEvery, len(parts))]...)
			next = append(next, graph.Ref(key))
		}
		parts = next
	}
	g[final] = graph.Call(fnAddVec, parts...)
}
