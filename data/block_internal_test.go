package data

import (
	"strings"
	"testing"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// TestDecodeBlockIsZeroCopy: every buffer of a decoded block lies inside
// the block's bytes.
func TestDecodeBlockIsZeroCopy(t *testing.T) {
	ib := array.NewInt64Builder(memory.DefaultAllocator)
	sb := array.NewStringBuilder(memory.DefaultAllocator)
	for i := range 1000 {
		ib.Append(int64(i))
		if i%7 == 0 {
			sb.AppendNull()
		} else {
			sb.Append("row")
		}
	}
	ia, sa := ib.NewArray(), sb.NewArray()
	s := arrow.NewSchema([]arrow.Field{{Name: "i", Type: arrow.PrimitiveTypes.Int64}, {Name: "s", Type: arrow.BinaryTypes.String, Nullable: true}}, nil)
	rec := array.NewRecordBatch(s, []arrow.Array{ia, sa}, 1000)
	ia.Release()
	sa.Release()
	defer rec.Release()
	b, err := encodeBlock(rec)
	if err != nil {
		t.Fatal(err)
	}
	got, err := decodeBlock(b)
	if err != nil {
		t.Fatal(err)
	}
	defer got.Release()
	if !array.RecordEqual(rec, got) {
		t.Fatalf("decoded block differs")
	}
	lo := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	hi := lo + uintptr(len(b))
	n := 0
	for _, c := range got.Columns() {
		for _, buf := range c.Data().Buffers() {
			if buf == nil || buf.Len() == 0 {
				continue
			}
			p := uintptr(unsafe.Pointer(unsafe.SliceData(buf.Bytes())))
			if p < lo || p+uintptr(buf.Len()) > hi {
				t.Errorf("a %s buffer of %d bytes at %#x is outside the block [%#x, %#x): copied", c.DataType(), buf.Len(), p, lo, hi)
			}
			n++
		}
	}
	if n < 4 {
		t.Fatalf("checked %d buffers, want validity+values+offsets+data", n)
	}
}

func TestSplitBlocks(t *testing.T) {
	ib := array.NewInt64Builder(memory.DefaultAllocator)
	for i := range 1000 {
		ib.Append(int64(i))
	}
	a := ib.NewArray()
	rec := array.NewRecordBatch(arrow.NewSchema([]arrow.Field{{Name: "i", Type: arrow.PrimitiveTypes.Int64}}, nil), []arrow.Array{a}, 1000)
	a.Release()
	defer rec.Release()
	size := recordBytes(rec) // 8000 bytes of values, and the buffer's padding
	parts := splitBlocks([]arrow.RecordBatch{rec}, 2000, 100)
	defer releaseAll(parts)
	if want := int((size + 1999) / 2000); len(parts) != want || want < 4 {
		t.Fatalf("%d blocks of a %d-byte record, want %d (>= 4)", len(parts), size, want)
	}
	var rows int64
	for _, p := range parts {
		rows += p.NumRows()
	}
	if rows != 1000 {
		t.Fatalf("blocks hold %d rows, want 1000", rows)
	}
	capped := splitBlocks([]arrow.RecordBatch{rec}, 2000, 3)
	defer releaseAll(capped)
	if len(capped) != 3 {
		t.Fatalf("%d blocks with MaxBlocks 3, want 3", len(capped))
	}
}

// A block of a slice reserves about its rows' bytes, not its parent's:
// a task cutting a record into n slices (Repartition's map side, blocks
// past the target size) held n times the record in encoded blocks.
func TestEncodeBlockOfASlice(t *testing.T) {
	ib := array.NewInt64Builder(memory.DefaultAllocator)
	sb := array.NewStringBuilder(memory.DefaultAllocator)
	bb := array.NewBooleanBuilder(memory.DefaultAllocator)
	for i := range 100_000 {
		ib.Append(int64(i))
		sb.Append(strings.Repeat("x", 1+i%200))
		bb.Append(i%3 == 0)
	}
	ia, sa, ba := ib.NewArray(), sb.NewArray(), bb.NewArray()
	s := arrow.NewSchema([]arrow.Field{{Name: "i", Type: arrow.PrimitiveTypes.Int64}, {Name: "s", Type: arrow.BinaryTypes.String},
		{Name: "b", Type: arrow.FixedWidthTypes.Boolean}}, nil)
	rec := array.NewRecordBatch(s, []arrow.Array{ia, sa, ba}, 100_000)
	ia.Release()
	sa.Release()
	ba.Release()
	defer rec.Release()
	for _, r := range []arrow.RecordBatch{rec.NewSlice(0, 1000), rec.NewSlice(50_000, 51_000), rec.NewSlice(7, 7)} {
		b, err := encodeBlock(r)
		r.Release()
		if err != nil {
			t.Fatal(err)
		}
		if cap(b) > 2*len(b)+64<<10 {
			t.Errorf("a block of %d rows: %d bytes in a buffer of %d", r.NumRows(), len(b), cap(b))
		}
		got, err := decodeBlock(b)
		if err != nil || got.NumRows() != r.NumRows() {
			t.Fatalf("decoded %v, %v", got, err)
		}
		got.Release()
	}
}
