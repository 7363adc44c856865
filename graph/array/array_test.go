package array_test

import (
	"context"
	"errors"
	"math"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/atoll-runtime/atoll/internal/testutil"

	"gonum.org/v1/gonum/mat"

	"github.com/atoll-runtime/atoll"
	"github.com/atoll-runtime/atoll/graph"
	"github.com/atoll-runtime/atoll/graph/array"
	"github.com/atoll-runtime/atoll/internal/testmain"
)

func TestMain(m *testing.M) {
	if atoll.IsWorker() {
		_ = atoll.Init(context.Background()) // serves tasks; never returns
	}
	os.Exit(m.Run())
}

// start runs atoll for one test with worker processes (the default) and a
// small object store.
func start(t *testing.T, opts ...atoll.Option) context.Context {
	t.Helper()
	return testmain.Init(t, 3*time.Minute, append([]atoll.Option{atoll.WithObjectStoreMemory(128 << 20), atoll.WithNumCPUs(2)}, opts...)...)
}

func compute(t *testing.T, ctx context.Context, a array.Array) *mat.Dense {
	t.Helper()
	m, err := a.Compute(ctx)
	if err != nil {
		t.Fatalf("Compute %v: %v", a, err)
	}
	return m
}

// near checks got against want elementwise, with a tolerance relative to
// the magnitude of the values (sums in a different order round
// differently).
func near(t *testing.T, what string, got, want mat.Matrix) {
	t.Helper()
	gr, gc := got.Dims()
	wr, wc := want.Dims()
	if gr != wr || gc != wc {
		t.Fatalf("%s: got %dx%d, want %dx%d", what, gr, gc, wr, wc)
	}
	scale := math.Max(1, mat.Norm(want, math.Inf(1)))
	if !mat.EqualApprox(got, want, 1e-12*scale) {
		t.Fatalf("%s: differs from gonum:\ngot  %v\nwant %v", what, mat.Formatted(got, mat.Excerpt(3)), mat.Formatted(want, mat.Excerpt(3)))
	}
}

// Chunks that do not divide the shape, so edge chunks are smaller.
const (
	rows, cols = 37, 29
	cr, cc     = 10, 8
)

func TestRandomIsDeterministicPerChunk(t *testing.T) {
	ctx := start(t)
	x := array.Random(7, rows, cols, cr, cc)
	got := compute(t, ctx, x)
	near(t, "Random", got, array.RandomDense(7, rows, cols, cr, cc))
	if again := compute(t, ctx, array.Random(7, rows, cols, cr, cc)); !mat.Equal(got, again) {
		t.Fatal("the same seed gave different arrays")
	}
	if other := compute(t, ctx, array.Random(8, rows, cols, cr, cc)); mat.Equal(got, other) {
		t.Fatal("seeds 7 and 8 gave the same array")
	}
	for _, v := range got.RawMatrix().Data {
		if v < 0 || v >= 1 {
			t.Fatalf("value %v outside [0, 1)", v)
		}
	}
}

func TestElementwiseMatchGonum(t *testing.T) {
	ctx := start(t)
	x, y := array.Random(1, rows, cols, cr, cc), array.Random(2, rows, cols, cr, cc)
	xd, yd := array.RandomDense(1, rows, cols, cr, cc), array.RandomDense(2, rows, cols, cr, cc)
	var want mat.Dense
	want.Add(xd, yd)
	near(t, "Add", compute(t, ctx, x.Add(y)), &want)
	want.Sub(xd, yd)
	near(t, "Sub", compute(t, ctx, x.Sub(y)), &want)
	want.MulElem(xd, yd)
	near(t, "Mul", compute(t, ctx, x.Mul(y)), &want)
	want.Scale(-2.5, xd)
	near(t, "Scale", compute(t, ctx, x.Scale(-2.5)), &want)

	// Different chunks: y is rechunked to x's.
	y2 := array.Random(2, rows, cols, cr, cc).Rechunk(7, 13)
	want.Add(xd, yd)
	sum := x.Add(y2)
	near(t, "Add with other chunks", compute(t, ctx, sum), &want)
	if r, c := sum.Chunks(); len(r) != 4 || len(c) != 4 {
		t.Fatalf("result chunks %v %v, want x's", r, c)
	}

	ones := array.Ones(rows, cols, cr, cc)
	want.Apply(func(_, _ int, v float64) float64 { return v + 1 }, xd)
	near(t, "Add Ones", compute(t, ctx, x.Add(ones)), &want)
}

func TestTransposeMatchesGonum(t *testing.T) {
	ctx := start(t)
	n := 31 // square, so x + xᵀ works
	x := array.Random(3, n, n, 9, 9)
	xd := array.RandomDense(3, n, n, 9, 9)
	near(t, "T", compute(t, ctx, x.T()), xd.T())
	near(t, "T of T", compute(t, ctx, x.T().T()), xd)

	var want mat.Dense
	want.Add(xd, xd.T())
	near(t, "x + xᵀ", compute(t, ctx, x.Add(x.T())), &want)
	want.Sub(xd.T(), xd)
	near(t, "xᵀ - x", compute(t, ctx, x.T().Sub(x)), &want)
	want.MulElem(xd.T(), xd.T())
	near(t, "xᵀ * xᵀ", compute(t, ctx, x.T().Mul(x.T())), &want)
	want.Scale(3, xd.T())
	near(t, "3xᵀ", compute(t, ctx, x.T().Scale(3)), &want)

	// A non-square transpose with uneven chunks.
	r := array.Random(4, rows, cols, cr, cc)
	rd := array.RandomDense(4, rows, cols, cr, cc)
	near(t, "T non-square", compute(t, ctx, r.T()), rd.T())
}

func TestReductionsMatchGonum(t *testing.T) {
	ctx := start(t)
	// 9×7 chunks: more than splitEvery partial sums per column and row,
	// so the tree has inner levels.
	x := array.Random(5, 85, 61, 10, 9)
	xd := array.RandomDense(5, 85, 61, 10, 9)
	colSums, rowSums := mat.NewDense(1, 61, nil), mat.NewDense(85, 1, nil)
	total := 0.0
	for i := range 85 {
		for j := range 61 {
			v := xd.At(i, j)
			colSums.Set(0, j, colSums.At(0, j)+v)
			rowSums.Set(i, 0, rowSums.At(i, 0)+v)
			total += v
		}
	}
	near(t, "Sum(Axis0)", compute(t, ctx, x.Sum(array.Axis0)), colSums)
	near(t, "Sum(Axis1)", compute(t, ctx, x.Sum(array.Axis1)), rowSums)
	got, err := x.Sum(array.AllAxes).ComputeScalar(ctx)
	if err != nil || math.Abs(got-total) > 1e-9*total {
		t.Fatalf("Sum(AllAxes) = %v, %v; want %v", got, err, total)
	}

	var colMeans, rowMeans mat.Dense
	colMeans.Scale(1.0/85, colSums)
	means, err := x.Mean(array.Axis0).ComputeVector(ctx)
	if err != nil {
		t.Fatal(err)
	}
	near(t, "Mean(Axis0)", mat.NewDense(1, 61, means), &colMeans)
	rowMeans.Scale(1.0/61, rowSums)
	near(t, "Mean(Axis1)", compute(t, ctx, x.Mean(array.Axis1)), &rowMeans)
	mean, err := x.Mean(array.AllAxes).ComputeScalar(ctx)
	if err != nil || math.Abs(mean-total/(85*61)) > 1e-12 {
		t.Fatalf("Mean(AllAxes) = %v, %v; want %v", mean, err, total/(85*61))
	}

	// Reductions of a transpose read x's chunks transposed.
	near(t, "Sum(Axis0) of xᵀ", compute(t, ctx, x.T().Sum(array.Axis0)), rowSums.T())
	near(t, "Sum(Axis1) of xᵀ", compute(t, ctx, x.T().Sum(array.Axis1)), colSums.T())
}

func TestMatMulMatchesGonum(t *testing.T) {
	ctx := start(t)
	a := array.Random(6, 45, 33, 12, 10)
	b := array.Random(7, 33, 27, 10, 8)
	ad, bd := array.RandomDense(6, 45, 33, 12, 10), array.RandomDense(7, 33, 27, 10, 8)
	want := mul(ad, bd)
	near(t, "A·B", compute(t, ctx, a.MatMul(b)), want)

	want = mul(ad, ad.T())
	near(t, "A·Aᵀ", compute(t, ctx, a.MatMul(a.T())), want)
	want = mul(ad.T(), ad)
	near(t, "Aᵀ·A", compute(t, ctx, a.T().MatMul(a)), want)
	want = mul(bd.T(), ad.T())
	near(t, "Bᵀ·Aᵀ", compute(t, ctx, b.T().MatMul(a.T())), want)

	// b's rows in other chunks than a's columns: b is rechunked.
	want = mul(ad, bd)
	near(t, "A·B rechunked", compute(t, ctx, a.MatMul(b.Rechunk(7, 8))), want)

	total, err := a.MatMul(a.T()).Sum(array.AllAxes).ComputeScalar(ctx)
	want = mul(ad, ad.T())
	if wantTotal := mat.Sum(want); err != nil || math.Abs(total-wantTotal) > 1e-9*wantTotal {
		t.Fatalf("(A·Aᵀ).Sum() = %v, %v; want %v", total, err, wantTotal)
	}
}

func TestRechunkAndFromDense(t *testing.T) {
	ctx := start(t)
	xd := array.RandomDense(9, rows, cols, cr, cc)
	x := array.Random(9, rows, cols, cr, cc)
	for _, c := range [][2]int{{1, 1}, {37, 29}, {6, 11}, {100, 3}} {
		y := x.Rechunk(c[0], c[1])
		r, cl := y.Chunks()
		if r[0] != min(c[0], rows) || cl[0] != min(c[1], cols) {
			t.Fatalf("Rechunk(%d, %d) gave chunks %v %v", c[0], c[1], r, cl)
		}
		near(t, "Rechunk", compute(t, ctx, y), xd)
	}
	near(t, "RechunkTo", compute(t, ctx, x.RechunkTo([]int{1, 30, 6}, []int{29})), xd)

	// FromDense of a strided view, and FromSlice.
	big := array.RandomDense(10, 50, 40, 50, 40)
	view := big.Slice(3, 3+rows, 5, 5+cols).(*mat.Dense)
	f := array.FromDense(ctx, view, 8, 6)
	near(t, "FromDense", compute(t, ctx, f), view)
	s := array.FromSlice(ctx, xd.RawMatrix().Data, rows, cols, 16, 16)
	var want mat.Dense
	want.Add(view, xd)
	near(t, "FromDense + FromSlice", compute(t, ctx, f.Add(s)), &want)
}

var square = array.RegisterMap("arraytest.square", func(v float64) float64 { return v * v })

func TestMapRunsARegisteredFunction(t *testing.T) {
	ctx := start(t)
	x := array.Random(11, rows, cols, cr, cc)
	var want mat.Dense
	want.Apply(func(_, _ int, v float64) float64 { return v * v }, array.RandomDense(11, rows, cols, cr, cc))
	near(t, "Map", compute(t, ctx, x.Map("arraytest.square")), &want)
	_ = square
}

func TestTypedErrors(t *testing.T) {
	x := array.Random(1, 10, 20, 5, 5)
	var shape *array.ShapeError
	if err := x.Add(array.Random(1, 20, 10, 5, 5)).Err(); !errors.As(err, &shape) || shape.Op != "Add" {
		t.Fatalf("Add of 10x20 and 20x10: %v", err)
	}
	if err := x.MatMul(x).Err(); !errors.As(err, &shape) || shape.Op != "MatMul" {
		t.Fatalf("MatMul of 10x20 and 10x20: %v", err)
	}
	var chunk *array.ChunkError
	for name, a := range map[string]array.Array{
		"zero chunk":      array.Random(1, 10, 10, 0, 5),
		"empty":           array.Ones(0, 10, 5, 5),
		"rechunk sum":     x.RechunkTo([]int{5, 4}, []int{20}),
		"rechunk zero":    x.RechunkTo([]int{10, 0}, []int{20}),
		"rechunk regular": x.Rechunk(-1, 3),
	} {
		if err := a.Err(); !errors.As(err, &chunk) {
			t.Fatalf("%s: %v, want a *ChunkError", name, err)
		}
	}
	var axis *array.AxisError
	if err := x.Sum(2).Err(); !errors.As(err, &axis) || axis.Axis != 2 {
		t.Fatalf("Sum(2): %v", err)
	}
	if err := x.Mean(-2).Err(); !errors.As(err, &axis) {
		t.Fatalf("Mean(-2): %v", err)
	}
	// Errors stick through later operations and Compute.
	bad := x.Sum(5).Scale(2).Add(x).T().Mean(array.Axis0)
	if _, err := bad.Compute(context.Background()); !errors.As(err, &axis) {
		t.Fatalf("Compute of a failed expression: %v", err)
	}
	if _, err := x.ComputeScalar(context.Background()); !errors.As(err, &shape) {
		t.Fatalf("ComputeScalar of a 10x20 array: %v", err)
	}
}

// calls counts the calls of arraytest.count, one per chunk; a test with
// in-process workers reads it directly.
var calls atomic.Int64

var _ = graph.Register("arraytest.count", func(_ context.Context, x []float64) ([]float64, error) {
	calls.Add(1)
	return append([]float64(nil), x...), nil
})

// TestPersistRunsNothingAgain persists an array and computes on it: the
// tasks before the persist point run once, in the background after
// Persist returns, and never again (in-process workers, so the test reads
// the count of calls directly).
func TestPersistRunsNothingAgain(t *testing.T) {
	ctx := start(t, atoll.WithWorkerMode(atoll.InProcessWorkers))
	calls.Store(0)
	x := array.Random(12, rows, cols, cr, cc).Map("arraytest.count")
	nchunks := int64(len(x.Keys()))
	p, err := x.Persist(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Graph()) != int(nchunks) {
		t.Fatalf("the persisted array's graph has %d keys, want its %d chunks only", len(p.Graph()), nchunks)
	}
	testutil.Eventually(t, "the persisted chunks to be computed", func() bool { return calls.Load() == nchunks })
	xd := array.RandomDense(12, rows, cols, cr, cc)
	near(t, "persisted", compute(t, ctx, p), xd)
	var want mat.Dense
	want.Add(xd, xd)
	near(t, "persisted + persisted", compute(t, ctx, p.Add(p)), &want)
	if _, err := p.Sum(array.AllAxes).ComputeScalar(ctx); err != nil {
		t.Fatal(err)
	}
	if got := calls.Load(); got != nchunks {
		t.Fatalf("computing on the persisted array re-ran arraytest.count: %d calls, want %d", got, nchunks)
	}
	// The array that was not persisted still computes from scratch.
	near(t, "not persisted", compute(t, ctx, x), xd)
	if got := calls.Load(); got != 2*nchunks {
		t.Fatalf("after computing x: %d calls, want %d", got, 2*nchunks)
	}
}

// TestPersistSubmitsOnlyNewTasks counts submitted tasks with graph's
// stats, in worker processes: after Persist, an expression on the
// persisted array submits its own tasks and none of the persisted ones.
func TestPersistSubmitsOnlyNewTasks(t *testing.T) {
	ctx := start(t)
	var stats graph.Stats
	record := graph.WithStats(func(s graph.Stats) { stats = s })
	x := array.Random(13, rows, cols, cr, cc).Scale(2) // random → scale chains fuse: one task per chunk
	nchunks := len(x.Keys())
	p, err := x.Persist(ctx, record)
	if err != nil {
		t.Fatal(err)
	}
	if stats.Submitted != nchunks {
		t.Fatalf("Persist submitted %d tasks, want %d (stats %+v)", stats.Submitted, nchunks, stats)
	}
	y := p.Add(p).Sum(array.Axis0)
	got, err := y.Compute(ctx, record)
	if err != nil {
		t.Fatal(err)
	}
	// Per chunk one task (the add with its partial sum fused in), and per
	// column of chunks the final addvec of the partials (4 chunk rows,
	// within one tree node).
	if want := nchunks + len(y.Keys()); stats.Submitted != want {
		t.Fatalf("computing on the persisted array submitted %d tasks, want %d (stats %+v)", stats.Submitted, want, stats)
	}
	xd := array.RandomDense(13, rows, cols, cr, cc)
	want := mat.NewDense(1, cols, nil)
	for i := range rows {
		for j := range cols {
			want.Set(0, j, want.At(0, j)+4*xd.At(i, j))
		}
	}
	near(t, "(2x + 2x).Sum(Axis0)", got, want)
}

func mul(a, b mat.Matrix) *mat.Dense {
	var m mat.Dense
	m.Mul(a, b)
	return &m
}
