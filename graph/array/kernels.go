package array

import (
	"context"
	"fmt"
	"math/rand/v2"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/floats"

	"github.com/atoll-runtime/atoll/graph"
	"github.com/atoll-runtime/atoll/internal/errs"
)

// The kernels below run in worker processes, one call per chunk. A chunk
// argument is a read-only view of the object store: every kernel
// allocates its output and never writes into an argument.
//
// A flags argument says which operands are stored transposed (flagA,
// flagB): a chunk of a lazy Transpose is read from the source chunk it
// mirrors, so x + xᵀ or A·Aᵀ never stores the transposed chunks.
const (
	flagA = 1 << iota // operand a is stored transposed
	flagB             // operand b is stored transposed
)

// Elementwise operators of the binop kernel.
const (
	opAdd = iota
	opSub
	opMul
)

var opNames = [...]string{opAdd: "Add", opSub: "Sub", opMul: "Mul"}

// Registered names, fixed: they are what graphs refer to.
const (
	fnRandom    = "array.random"
	fnOnes      = "array.ones"
	fnBinop     = "array.binop"
	fnScale     = "array.scale"
	fnTranspose = "array.transpose"
	fnColSum    = "array.colsum"
	fnRowSum    = "array.rowsum"
	fnTotal     = "array.total"
	fnAddVec    = "array.addvec"
	fnMatMul    = "array.matmul"
	fnMatMulAcc = "array.matmul_acc"
	fnRechunk   = "array.rechunk"
)

func init() {
	graph.Register(fnRandom, func(_ context.Context, seed uint64, i, j, n int) ([]float64, error) {
		out := make([]float64, n)
		RandomBlock(seed, i, j, out)
		return out, nil
	})
	graph.Register(fnOnes, func(_ context.Context, n int) ([]float64, error) {
		out := make([]float64, n)
		for i := range out {
			out[i] = 1
		}
		return out, nil
	})
	graph.Register(fnBinop, binop)
	graph.Register(fnScale, func(_ context.Context, s float64, a []float64) ([]float64, error) {
		out := make([]float64, len(a))
		floats.ScaleTo(out, s, a)
		return out, nil
	})
	graph.Register(fnTranspose, func(_ context.Context, rows, cols int, a []float64) ([]float64, error) {
		if err := checkLen("transpose", a, rows*cols); err != nil {
			return nil, err
		}
		out := make([]float64, len(a))
		transposeTo(out, a, cols, rows)
		return out, nil
	})
	graph.Register(fnColSum, colSum)
	graph.Register(fnRowSum, rowSum)
	graph.Register(fnTotal, func(_ context.Context, a []float64) ([]float64, error) {
		return []float64{floats.Sum(a)}, nil
	})
	graph.Register(fnAddVec, addVec)
	graph.Register(fnMatMul, func(_ context.Context, m, k, n, flags int, a, b []float64) ([]float64, error) {
		out := make([]float64, m*n)
		return out, gemm(m, k, n, flags, a, b, 0, out)
	})
	graph.Register(fnMatMulAcc, func(_ context.Context, m, k, n, flags int, acc, a, b []float64) ([]float64, error) {
		if err := checkLen("matmul accumulator", acc, m*n); err != nil {
			return nil, err
		}
		out := make([]float64, m*n)
		copy(out, acc)
		return out, gemm(m, k, n, flags, a, b, 1, out)
	})
	graph.Register(fnRechunk, rechunk)
}

// RandomBlock fills dst with the values of chunk (i, j) of Random(seed,
// ...): uniform in [0, 1), from a PCG stream seeded by seed and the
// chunk's position, so every chunk is generated independently and the
// same seed and chunking always give the same array. It is exported so a
// single-process baseline can generate the same data.
func RandomBlock(seed uint64, i, j int, dst []float64) {
	r := rand.New(rand.NewPCG(seed, uint64(i)<<32|uint64(uint32(j))))
	for k := range dst {
		dst[k] = r.Float64()
	}
}

func checkLen(what string, a []float64, n int) error {
	if len(a) != n {
		return &ChunkError{Op: what, Reason: fmt.Sprintf("a chunk of %d values, want %d", len(a), n)}
	}
	return nil
}

// binop computes a op b for one rows×cols chunk.
func binop(_ context.Context, op, rows, cols, flags int, a, b []float64) ([]float64, error) {
	if err := checkLen("elementwise a", a, rows*cols); err != nil {
		return nil, err
	}
	if err := checkLen("elementwise b", b, rows*cols); err != nil {
		return nil, err
	}
	out := make([]float64, rows*cols)
	if flags&flagA != 0 {
		transposeTo(out, a, rows, cols)
	} else {
		copy(out, a)
	}
	if flags&flagB == 0 {
		switch op {
		case opAdd:
			floats.Add(out, b)
		case opSub:
			floats.Sub(out, b)
		case opMul:
			floats.Mul(out, b)
		default:
			return nil, errs.Invalidf("array: unknown elementwise operator %d", op)
		}
		return out, nil
	}
	// b is stored cols×rows: walk it in tiles so both sides stay in cache.
	const tile = 64
	for r0 := 0; r0 < rows; r0 += tile {
		for c0 := 0; c0 < cols; c0 += tile {
			r1, c1 := min(r0+tile, rows), min(c0+tile, cols)
			for r := r0; r < r1; r++ {
				row := out[r*cols : (r+1)*cols]
				switch op {
				case opAdd:
					for c := c0; c < c1; c++ {
						row[c] += b[c*rows+r]
					}
				case opSub:
					for c := c0; c < c1; c++ {
						row[c] -= b[c*rows+r]
					}
				case opMul:
					for c := c0; c < c1; c++ {
						row[c] *= b[c*rows+r]
					}
				default:
					return nil, errs.Invalidf("array: unknown elementwise operator %d", op)
				}
			}
		}
	}
	return out, nil
}

// transposeTo writes srcᵀ into dst, where dst is rows×cols and src is
// cols×rows, in cache-sized tiles.
func transposeTo(dst, src []float64, rows, cols int) {
	const tile = 64
	for r0 := 0; r0 < rows; r0 += tile {
		for c0 := 0; c0 < cols; c0 += tile {
			r1, c1 := min(r0+tile, rows), min(c0+tile, cols)
			for r := r0; r < r1; r++ {
				for c := c0; c < c1; c++ {
					dst[r*cols+c] = src[c*rows+r]
				}
			}
		}
	}
}

// colSum sums a rows×cols chunk over its rows (a partial Sum over axis 0).
func colSum(_ context.Context, rows, cols, flags int, a []float64) ([]float64, error) {
	if err := checkLen("sum", a, rows*cols); err != nil {
		return nil, err
	}
	out := make([]float64, cols)
	if flags&flagA != 0 { // stored cols×rows: a column here is a stored row
		for c := range cols {
			out[c] = floats.Sum(a[c*rows : (c+1)*rows])
		}
		return out, nil
	}
	for r := range rows {
		floats.Add(out, a[r*cols:(r+1)*cols])
	}
	return out, nil
}

// rowSum sums a rows×cols chunk over its columns (a partial Sum over axis 1).
func rowSum(_ context.Context, rows, cols, flags int, a []float64) ([]float64, error) {
	if err := checkLen("sum", a, rows*cols); err != nil {
		return nil, err
	}
	out := make([]float64, rows)
	if flags&flagA != 0 {
		for c := range cols {
			floats.Add(out, a[c*rows:(c+1)*rows])
		}
		return out, nil
	}
	for r := range rows {
		out[r] = floats.Sum(a[r*cols : (r+1)*cols])
	}
	return out, nil
}

// addVec adds equal-length vectors: one node of a tree reduction.
func addVec(_ context.Context, parts ...[]float64) ([]float64, error) {
	if len(parts) == 0 {
		return nil, errs.Invalidf("array: reduction of nothing")
	}
	out := make([]float64, len(parts[0]))
	copy(out, parts[0])
	for _, p := range parts[1:] {
		if err := checkLen("reduction", p, len(out)); err != nil {
			return nil, err
		}
		floats.Add(out, p)
	}
	return out, nil
}

// gemm computes out = a·b + beta·out for an m×k a and a k×n b, each
// possibly stored transposed (flags), with gonum's BLAS.
func gemm(m, k, n, flags int, a, b []float64, beta float64, out []float64) error {
	if err := checkLen("matmul a", a, m*k); err != nil {
		return err
	}
	if err := checkLen("matmul b", b, k*n); err != nil {
		return err
	}
	ga, ta := blas64.General{Rows: m, Cols: k, Stride: k, Data: a}, blas.NoTrans
	if flags&flagA != 0 {
		ga, ta = blas64.General{Rows: k, Cols: m, Stride: m, Data: a}, blas.Trans
	}
	gb, tb := blas64.General{Rows: k, Cols: n, Stride: n, Data: b}, blas.NoTrans
	if flags&flagB != 0 {
		gb, tb = blas64.General{Rows: n, Cols: k, Stride: k, Data: b}, blas.Trans
	}
	if m == 0 || n == 0 || k == 0 {
		return nil
	}
	blas64.Gemm(ta, tb, 1, ga, gb, beta, blas64.General{Rows: m, Cols: n, Stride: n, Data: out})
	return nil
}

// rechunk assembles one output chunk from the pieces of the input chunks
// that overlap it. geom is outRows, outCols, then for each part: the
// part's columns, the row and column of the piece in the part, the row
// and column it goes to in the output, and the piece's height and width.
func rechunk(_ context.Context, geom []int64, parts ...[]float64) ([]float64, error) {
	const per = 7
	if len(geom) != 2+per*len(parts) {
		return nil, &ChunkError{Op: "Rechunk", Reason: fmt.Sprintf("%d geometry values for %d parts", len(geom), len(parts))}
	}
	outRows, outCols := int(geom[0]), int(geom[1])
	out := make([]float64, outRows*outCols)
	for p, src := range parts {
		g := geom[2+per*p : 2+per*(p+1)]
		srcCols, sr, sc, dr, dc, h, w := int(g[0]), int(g[1]), int(g[2]), int(g[3]), int(g[4]), int(g[5]), int(g[6])
		if (sr+h-1)*srcCols+sc+w > len(src) || (dr+h-1)*outCols+dc+w > len(out) {
			return nil, &ChunkError{Op: "Rechunk", Reason: fmt.Sprintf("piece %d out of bounds", p)}
		}
		for r := range h {
			copy(out[(dr+r)*outCols+dc:(dr+r)*outCols+dc+w], src[(sr+r)*srcCols+sc:(sr+r)*srcCols+sc+w])
		}
	}
	return out, nil
}
