package data_test

import (
	"bytes"
	"context"
	"os"
	"runtime"
	"runtime/debug"
	"testing"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/atoll-runtime/atoll/data"
	"github.com/atoll-runtime/atoll/internal/pss"
)

// Tasks that read every byte of their block's int64 column 0 and return
// one row: how the worker's memory grew while they did, the sum of the
// values and whether the column lay in shared memory. touchBlock reads
// the column in place; copyBlock copies it first (the control: what a
// read that copied its block would cost).
var (
	touchBlock = data.RegisterBatchFunc("test.touchBlock", func(_ context.Context, rec arrow.RecordBatch) (arrow.RecordBatch, error) {
		return memoryGrowth(rec, false)
	})
	copyBlock = data.RegisterBatchFunc("test.copyBlock", func(_ context.Context, rec arrow.RecordBatch) (arrow.RecordBatch, error) {
		return memoryGrowth(rec, true)
	})
)

var growthSchema = arrow.NewSchema([]arrow.Field{
	{Name: "anon", Type: arrow.PrimitiveTypes.Int64},  // growth of the worker's anonymous memory
	{Name: "pss", Type: arrow.PrimitiveTypes.Int64},   // of its PSS
	{Name: "shmem", Type: arrow.PrimitiveTypes.Int64}, // of its PSS in shared memory
	{Name: "bytes", Type: arrow.PrimitiveTypes.Int64}, // the column's size
	{Name: "sum", Type: arrow.PrimitiveTypes.Int64},
	{Name: "shared", Type: arrow.FixedWidthTypes.Boolean},
}, nil)

func memoryGrowth(rec arrow.RecordBatch, copyIt bool) (arrow.RecordBatch, error) {
	buf := rec.Column(0).Data().Buffers()[1].Bytes()
	shared, err := inSharedMapping(uint64(uintptr(unsafe.Pointer(unsafe.SliceData(buf)))))
	if err != nil {
		return nil, err
	}
	// the heap gives its free pages back first: a copy must take new
	// pages, not reuse ones an earlier task left resident
	debug.FreeOSMemory()
	before, err := pss.ReadRollup(os.Getpid())
	if err != nil {
		return nil, err
	}
	src := buf
	if copyIt {
		src = bytes.Clone(buf)
	}
	var sum int64
	for _, v := range arrow.Int64Traits.CastFromBytes(src) {
		sum += v
	}
	after, err := pss.ReadRollup(os.Getpid())
	if err != nil {
		return nil, err
	}
	runtime.KeepAlive(src)
	mem := memory.DefaultAllocator
	cols := make([]arrow.Array, growthSchema.NumFields())
	for i, v := range []int64{
		int64(after.Anonymous) - int64(before.Anonymous),
		int64(after.Pss) - int64(before.Pss),
		int64(after.PssShmem) - int64(before.PssShmem),
		int64(len(buf)),
		sum,
	} {
		b := array.NewInt64Builder(mem)
		b.Append(v)
		cols[i] = b.NewArray()
		b.Release()
	}
	b := array.NewBooleanBuilder(mem)
	b.Append(shared)
	cols[len(cols)-1] = b.NewArray()
	b.Release()
	defer func() {
		for _, c := range cols {
			c.Release()
		}
	}()
	return array.NewRecordBatch(growthSchema, cols, 1), nil
}

// TestZeroCopyReadsPSS: a task in a worker process that reads every byte
// of a 64 MiB block grows the worker's own (anonymous) memory by far
// less than the block: it reads the store's shared pages in place. Its
// PSS grows by half the block: the pages are shared with the driver that
// put the block (PSS charges them half to each), and they are not a copy.
// The control, a task that copies the block and reads the copy, grows
// the worker's anonymous memory by at least most of the block (under
// -race, more: the copy's shadow memory), so the measure sees a copy.
func TestZeroCopyReadsPSS(t *testing.T) {
	ctx := start(t)
	const n = 8 << 20 // int64s: 64 MiB
	// the block is put by the driver: no worker has touched its pages
	b := array.NewInt64Builder(memory.DefaultAllocator)
	b.Reserve(n)
	for i := range int64(n) {
		b.UnsafeAppend(i)
	}
	col := b.NewArray()
	b.Release()
	rec := array.NewRecordBatch(arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}}, nil), []arrow.Array{col}, n)
	col.Release()
	ds, err := data.FromArrow(ctx, rec)
	rec.Release()
	if err != nil {
		t.Fatal(err)
	}
	const mib = 1 << 20
	measure := func(fn *data.BatchFunc) data.Row {
		t.Helper()
		rows, err := ds.MapBatches(fn).TakeAll(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) != 1 {
			t.Fatalf("%d rows, want 1", len(rows))
		}
		r := rows[0]
		if r["sum"] != int64(n*(n-1)/2) || r["bytes"] != int64(n*8) || r["shared"] != true {
			t.Fatalf("the task did not read the whole block from shared memory: %v", r)
		}
		t.Logf("anonymous memory +%.1f MiB, PSS +%.1f MiB (shared memory +%.1f MiB)",
			float64(r["anon"].(int64))/mib, float64(r["pss"].(int64))/mib, float64(r["shmem"].(int64))/mib)
		return r
	}
	const block = n * 8
	r := measure(touchBlock)
	if r["anon"].(int64) > block/4 {
		t.Errorf("reading the block in place grew the worker's anonymous memory by %d bytes, over a quarter of the block's %d", r["anon"], block)
	}
	if r["shmem"].(int64) < block/4 {
		t.Errorf("reading the block grew the worker's shared memory by %d bytes only: the measure does not see the block's pages", r["shmem"])
	}
	if r["pss"].(int64) > block*3/4 {
		t.Errorf("reading the block grew the worker's PSS by %d bytes, about the block's %d", r["pss"], block)
	}
	if r := measure(copyBlock); r["anon"].(int64) < block*3/4 {
		t.Errorf("copying the block grew the worker's anonymous memory by %d bytes only, under 3/4 of the block's %d: the measure misses copies", r["anon"], block)
	}
}
