package data

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/atoll-runtime/atoll/data/expr"
)

// peakAllocator counts the bytes it has handed out and not taken back,
// and keeps their peak.
type peakAllocator struct {
	mu         sync.Mutex
	cur, peak  int
	underlying memory.Allocator
}

func (a *peakAllocator) add(n int) {
	a.mu.Lock()
	a.cur += n
	a.peak = max(a.peak, a.cur)
	a.mu.Unlock()
}

func (a *peakAllocator) Allocate(size int) []byte {
	b := a.underlying.Allocate(size)
	a.add(cap(b))
	return b
}

func (a *peakAllocator) Reallocate(size int, b []byte) []byte {
	old := cap(b)
	nb := a.underlying.Reallocate(size, b)
	a.add(cap(nb) - old)
	return nb
}

func (a *peakAllocator) Free(b []byte) {
	a.add(-cap(b))
	a.underlying.Free(b)
}

// TestStreamedReadTask: a read task whose ops filter runs them on each
// batch as the Parquet read goes (a row group of four batches): its rows
// are the ones the ops over the whole row group make, and it holds at
// most three quarters of the Arrow memory at once (about 60%: the
// reader's page buffers are the same either way).
func TestStreamedReadTask(t *testing.T) {
	ctx := context.Background()
	const rows = 4 * parquetBatchRows
	path := filepath.Join(t.TempDir(), "in.parquet")
	b := array.NewInt64Builder(memory.DefaultAllocator)
	for i := range rows {
		b.Append(int64(i))
	}
	col := b.NewInt64Array()
	b.Release()
	rec := array.NewRecordBatch(arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}}, nil), []arrow.Array{col}, rows)
	col.Release()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := writeParquet(ctx, f, []arrow.RecordBatch{rec}); err != nil { // one row group
		t.Fatal(err)
	}
	rec.Release()
	spec := &taskSpec{
		Read: &readSpec{Kind: "parquet", Path: path, RowGroups: []int{0}},
		Ops: []opSpec{
			{Kind: "with_column", Column: "m", Exprs: []expr.Expr{expr.Col("id").Mul(3).Add(expr.Col("id").Mod(7)).Mod(10)}},
			{Kind: "where", Exprs: []expr.Expr{expr.Col("m").Lt(3)}},
		},
		Out: outSpec{Kind: "blocks", MaxBlocks: 8, TargetMaxBlockSize: 512 << 20},
	}
	if !streamed(spec, 0) {
		t.Fatal("the read and filter are not streamed")
	}
	streaming := &peakAllocator{underlying: memory.NewGoAllocator()}
	_, blocks, err := runTask(compute.WithAllocator(ctx, streaming), spec, nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []int64
	for _, blk := range blocks {
		r, err := decodeBlock(blk)
		if err != nil {
			t.Fatal(err)
		}
		ids := r.Column(0).(*array.Int64)
		for i := range ids.Len() {
			got = append(got, ids.Value(i))
		}
		r.Release()
	}
	var want []int64
	for i := range int64(rows) {
		if (3*i+i%7)%10 < 3 {
			want = append(want, i)
		}
	}
	if len(got) != len(want) {
		t.Fatalf("%d rows, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("row %d: id %d, want %d", i, got[i], want[i])
		}
	}

	// the same ops over the row group read whole
	whole := &peakAllocator{underlying: memory.NewGoAllocator()}
	wctx := compute.WithAllocator(ctx, whole)
	recs, _, err := spec.Read.read(wctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, op := range spec.Ops {
		next, err := applyOp(wctx, op, recs, nil)
		releaseAll(recs)
		if recs = next; err != nil {
			t.Fatal(err)
		}
	}
	releaseAll(recs)
	if streaming.peak*4 > whole.peak*3 {
		t.Errorf("streamed, the task held %d bytes of Arrow memory at most; read whole, %d", streaming.peak, whole.peak)
	}
	t.Logf("peak Arrow memory: %d bytes streamed, %d read whole", streaming.peak, whole.peak)
}

// TestStreamed: which tasks run their ops batch by batch.
func TestStreamed(t *testing.T) {
	read := &readSpec{Kind: "parquet"}
	where := opSpec{Kind: "where"}
	withCol := opSpec{Kind: "with_column"}
	for _, c := range []struct {
		name   string
		spec   taskSpec
		inputs int
		want   bool
	}{
		{"filtered blocks", taskSpec{Read: read, Ops: []opSpec{withCol, where}, Out: outSpec{Kind: "blocks"}}, 0, true},
		{"aggregated", taskSpec{Read: read, Ops: []opSpec{withCol}, Out: outSpec{Kind: "agg_map"}}, 0, true},
		{"unfiltered blocks", taskSpec{Read: read, Ops: []opSpec{withCol}, Out: outSpec{Kind: "blocks"}}, 0, false},
		{"no ops", taskSpec{Read: read, Out: outSpec{Kind: "agg_map"}}, 0, false},
		{"batches", taskSpec{Read: read, Ops: []opSpec{where, {Kind: "map_batches"}}, Out: outSpec{Kind: "agg_map"}}, 0, false},
		{"limit", taskSpec{Read: read, Ops: []opSpec{where, {Kind: "limit"}}, Out: outSpec{Kind: "blocks"}}, 0, false},
		{"no read", taskSpec{Ops: []opSpec{where}, Out: outSpec{Kind: "blocks"}}, 1, false},
		{"inputs", taskSpec{Read: read, Ops: []opSpec{where}, Out: outSpec{Kind: "blocks"}}, 1, false},
	} {
		if got := streamed(&c.spec, c.inputs); got != c.want {
			t.Errorf("%s: streamed %v, want %v", c.name, got, c.want)
		}
	}
}
