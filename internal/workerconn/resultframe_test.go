package workerconn

import (
	"bytes"
	"math/rand/v2"
	"testing"
	"unsafe"

	"google.golang.org/protobuf/proto"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/slab"
)

// randomResult is a task-result frame of the shapes workers send: the
// common one resultDecoder takes and the rarer ones it leaves to
// proto.Unmarshal.
func randomResult(r *rand.Rand) *atollpb.Frame {
	bs := func(max int) []byte {
		if r.IntN(4) == 0 {
			return nil
		}
		b := make([]byte, r.IntN(max))
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		return b
	}
	res := &atollpb.TaskResult{TaskId: bs(24), Attempt: r.Int32N(5) - 1, WorkerId: bs(17),
		BorrowsReported: r.IntN(2) == 0, BorrowsSeq: r.Uint64N(1 << 40)}
	for range r.IntN(3) {
		ret := &atollpb.ReturnObject{ObjectId: bs(24)}
		switch r.IntN(5) {
		case 0:
		case 1:
			ret.Value = &atollpb.Value{Codec: atollpb.Codec(r.IntN(4))}
		case 2:
			ret.Value = &atollpb.Value{Kind: &atollpb.Value_Stored{Stored: &atollpb.ObjectLocation{Length: 9}}}
		default:
			ret.Value = &atollpb.Value{Codec: atollpb.Codec(r.IntN(4)), Kind: &atollpb.Value_Inline{Inline: bs(300)}}
		}
		res.Returns = append(res.Returns, ret)
	}
	switch r.IntN(10) {
	case 0:
		res.Error = &atollpb.ErrorInfo{Code: atollpb.ErrorCode_NOT_FOUND, Message: "m"}
	case 1:
		res.ExecuteSpan = &atollpb.TraceContext{Traceparent: "00-x"}
	case 2:
		res.Borrows = [][]byte{bs(16)}
	}
	return &atollpb.Frame{Id: r.Uint64N(3), ReplyTo: r.Uint64N(3), Body: &atollpb.Frame_TaskResult{TaskResult: res}}
}

// TestDecodeResultMatchesProto decodes random result frames both ways:
// where a resultDecoder takes a frame, it gives what proto.Unmarshal gives,
// and it takes the common shape.
func TestDecodeResultMatchesProto(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	var results resultDecoder
	taken := 0
	for i := range 5000 {
		want := randomResult(r)
		b, err := proto.Marshal(want)
		if err != nil {
			t.Fatal(err)
		}
		got, ok := results.decode(b)
		if !ok {
			continue
		}
		taken++
		if !proto.Equal(got, want) {
			t.Fatalf("frame %d: decoded %v, want %v", i, got, want)
		}
		ref := &atollpb.Frame{}
		if err := proto.Unmarshal(b, ref); err != nil {
			t.Fatal(err)
		}
		if v := ref.GetTaskResult().GetReturns(); len(v) == 1 && v[0].GetValue().GetKind() != nil {
			if got.GetTaskResult().GetReturns()[0].GetValue().GetInline() == nil {
				t.Fatalf("frame %d: an empty inline value decoded as unset", i)
			}
		}
	}
	if taken < 1000 {
		t.Fatalf("the decoder took %d frames of 5000, want the common shape taken", taken)
	}
	one := &atollpb.Frame{Body: &atollpb.Frame_TaskResult{TaskResult: &atollpb.TaskResult{TaskId: []byte("t"),
		Returns: []*atollpb.ReturnObject{{ObjectId: []byte("o"), Value: &atollpb.Value{Kind: &atollpb.Value_Inline{Inline: []byte{1}}}}}}}}
	b, _ := proto.Marshal(one)
	if _, ok := results.decode(b); !ok {
		t.Fatal("a one-return inline result was left to proto.Unmarshal")
	}
	// The value's allocation, and a share of a run of result blocks.
	if n := testing.AllocsPerRun(10*slab.PerRun[resultBlock](), func() { results.decode(b) }); n > 1 {
		t.Fatalf("decoding a result made %v allocations, want at most 1", n)
	}
}

// A decoded value, which its owner may keep for long (a million, for a
// million results gathered), is a 128-byte block, a size class; values
// on either side of what the block holds in itself decode whole.
func TestDecodedValueBlock(t *testing.T) {
	if n := unsafe.Sizeof(valueBlock{}); n > 128 {
		t.Fatalf("valueBlock is %d bytes, want at most 128 (a size class)", n)
	}
	var results resultDecoder
	for _, size := range []int{1, 16, 17, 24, 200} {
		val := make([]byte, size)
		for i := range val {
			val[i] = byte(i + 1)
		}
		f := &atollpb.Frame{Body: &atollpb.Frame_TaskResult{TaskResult: &atollpb.TaskResult{TaskId: []byte("t"),
			Returns: []*atollpb.ReturnObject{{ObjectId: []byte("o"), Value: &atollpb.Value{Kind: &atollpb.Value_Inline{Inline: val}}}}}}}
		b, _ := proto.Marshal(f)
		got, ok := results.decode(b)
		if !ok {
			t.Fatalf("%d bytes: left to proto.Unmarshal", size)
		}
		if inline := got.GetTaskResult().GetReturns()[0].GetValue().GetInline(); !bytes.Equal(inline, val) {
			t.Fatalf("%d bytes: decoded %v", size, inline)
		}
	}
}

// TestDecodedResultsKeepTheirOwn: results decoded one after another
// share runs of blocks, not blocks: every result decoded still reads as
// its frame after more than a run's worth of later ones, however long
// its holder keeps it.
func TestDecodedResultsKeepTheirOwn(t *testing.T) {
	var results resultDecoder
	n := 3*slab.PerRun[resultBlock]() + 1
	frames := make([]*atollpb.Frame, n)
	got := make([]*atollpb.Frame, n)
	for i := range n {
		frames[i] = &atollpb.Frame{Id: uint64(i), Body: &atollpb.Frame_TaskResult{TaskResult: &atollpb.TaskResult{
			TaskId: []byte{byte(i), 't'}, Attempt: int32(i),
			Returns: []*atollpb.ReturnObject{{ObjectId: []byte{byte(i), 'o'}, Value: &atollpb.Value{Kind: &atollpb.Value_Inline{Inline: []byte{byte(i)}}}}}}}}
		b, _ := proto.Marshal(frames[i])
		f, ok := results.decode(b)
		if !ok {
			t.Fatalf("result %d: left to proto.Unmarshal", i)
		}
		got[i] = f
	}
	for i := range n {
		if !proto.Equal(got[i], frames[i]) {
			t.Fatalf("result %d reads %v after later decodes, want %v", i, got[i], frames[i])
		}
	}
}

// FuzzDecodeResult: on any bytes, a resultDecoder either declines or gives
// what proto.Unmarshal gives.
func FuzzDecodeResult(f *testing.F) {
	r := rand.New(rand.NewPCG(5, 6))
	for range 20 {
		b, _ := proto.Marshal(randomResult(r))
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		got, ok := new(resultDecoder).decode(b)
		if !ok {
			return
		}
		want := &atollpb.Frame{}
		if err := proto.Unmarshal(b, want); err != nil {
			t.Fatalf("the decoder took bytes proto.Unmarshal rejects (%v): %v", err, got)
		}
		if !proto.Equal(got, want) {
			t.Fatalf("decoded %v, want %v", got, want)
		}
	})
}

// TestResultFrameEncodingIsProtos: a task-result frame of the common
// shape is encoded byte for byte as proto.Marshal encodes it; others are
// left to proto.Marshal.
func TestResultFrameEncodingIsProtos(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	var results resultDecoder
	taken := 0
	for i := range 5000 {
		f := randomResult(r)
		want, err := proto.Marshal(f)
		if err != nil {
			t.Fatal(err)
		}
		n := resultFrameSize(f)
		_, common := results.decode(want)
		if (n >= 0) != common {
			t.Fatalf("frame %d: encoded by hand %v, decoded by hand %v: %v", i, n >= 0, common, f)
		}
		if n < 0 {
			continue
		}
		taken++
		got := appendResultFrame(nil, f)
		if n != len(want) || string(got) != string(want) {
			t.Fatalf("frame %d: size %d, bytes % x\nproto.Marshal: %d, % x", i, n, got, len(want), want)
		}
	}
	if taken < 1000 {
		t.Fatalf("%d of 5000 frames encoded by hand", taken)
	}
	if resultFrameSize(exitFrame("bye")) != -1 {
		t.Fatal("a frame that is not a result was taken")
	}
}
