package data

import (
	"context"
	"errors"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/atoll-runtime/atoll"
	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/errs"
)

// A part's right pieces are cut in chunks only when they are more than
// twice the limit: each chunk at most the limit (a larger piece alone),
// every piece once, in order.
func TestChunkPart(t *testing.T) {
	part := func(sizes ...int64) unit {
		var u unit
		for i, s := range sizes {
			u.inputs = append(u.inputs, block{rows: int64(i), bytes: s})
			u.estimate += s
		}
		return u
	}
	if got := chunkPart(part(5, 5, 10), 10); len(got) != 1 || len(got[0].inputs) != 3 {
		t.Errorf("20 bytes, limit 10: %d chunks, want one", len(got))
	}
	got := chunkPart(part(4, 4, 4, 30, 2, 9, 1), 10)
	var sizes [][]int64
	var next int64
	for _, c := range got {
		var s []int64
		var sum int64
		for _, b := range c.inputs {
			if b.rows != next {
				t.Fatalf("piece %d where %d was next", b.rows, next)
			}
			next++
			s = append(s, b.bytes)
			sum += b.bytes
		}
		if sum != c.estimate {
			t.Errorf("chunk %v estimated at %d", s, c.estimate)
		}
		sizes = append(sizes, s)
	}
	want := [][]int64{{4, 4}, {4}, {30}, {2}, {9, 1}}
	if len(sizes) != len(want) || next != 7 {
		t.Fatalf("chunks %v, want %v", sizes, want)
	}
	for i := range want {
		if len(sizes[i]) != len(want[i]) || sizes[i][0] != want[i][0] {
			t.Fatalf("chunks %v, want %v", sizes, want)
		}
	}
}

// A task of a left group's rest given a bitmap of the wrong size fails
// with a MalformedError naming both.
func TestLeftRestChecksItsBitmap(t *testing.T) {
	b := array.NewInt64Builder(memory.DefaultAllocator)
	b.AppendValues([]int64{1, 2, 3, 4, 5, 6, 7, 8, 9}, nil)
	col := b.NewArray()
	b.Release()
	s := arrow.NewSchema([]arrow.Field{{Name: "k", Type: arrow.PrimitiveTypes.Int64}}, nil)
	rec := array.NewRecordBatch(s, []arrow.Array{col}, 9)
	col.Release()
	defer rec.Release()
	enc, err := encodeBlock(rec)
	if err != nil {
		t.Fatal(err)
	}
	in := []atoll.Raw{{Codec: atollpb.Codec_CODEC_BYTES, Data: enc}}
	js := &joinSpec{How: "anti", LeftKeys: []string{"k"}, RightKeys: []string{"k"}, Left: 1, LeftRest: true, LeftMatched: []byte{0xff}}
	_, err = leftRest(context.Background(), js, in)
	var me *errs.MalformedError
	if !errors.As(err, &me) {
		t.Fatalf("a 1-byte bitmap for 9 rows: %v", err)
	}
	js.LeftMatched = []byte{0xfe, 0x01} // rows 1 to 8 matched
	out, err := leftRest(context.Background(), js, in)
	if err != nil {
		t.Fatal(err)
	}
	defer releaseAll(out)
	if len(out) != 1 || out[0].NumRows() != 1 || out[0].Column(0).(*array.Int64).Value(0) != 1 {
		t.Fatalf("anti rest of rows 1-8 matched: %v", out)
	}
}
