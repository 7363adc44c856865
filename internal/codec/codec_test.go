package codec

import (
	"errors"
	"reflect"
	"testing"
	"unsafe"

	"google.golang.org/protobuf/proto"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/errs"
)

type point struct {
	X, Y int
	Name string
}

func TestRawSlicesRoundTripAsViews(t *testing.T) {
	xs := []float64{1.5, 2.5, -3}
	enc, err := Encode(xs)
	if err != nil || enc.Codec != atollpb.Codec_CODEC_FLOAT64 || len(enc.Data) != 24 {
		t.Fatalf("encode: %v %v %d", err, enc.Codec, len(enc.Data))
	}
	if unsafe.Pointer(&enc.Data[0]) != unsafe.Pointer(&xs[0]) {
		t.Fatal("encoding a []float64 copied it")
	}
	back, err := Decode[[]float64](enc.Codec, enc.Data)
	if err != nil || len(back) != 3 || back[2] != -3 {
		t.Fatalf("decode: %v %v", back, err)
	}
	if unsafe.Pointer(&back[0]) != unsafe.Pointer(&xs[0]) {
		t.Fatal("decoding aligned bytes copied them")
	}
	for _, v := range []any{[]byte("abc"), []int64{1, -2}, []int32{7}, []float32{0.5}} {
		enc, err := Encode(v)
		if err != nil || ElemSize(enc.Codec) == 0 {
			t.Fatalf("%T: %v %v", v, enc.Codec, err)
		}
		got, err := DecodeAny(enc.Codec, enc.Data)
		if err != nil {
			t.Fatalf("%T: %v", v, err)
		}
		if len(BytesOf(got)) != len(enc.Data) {
			t.Fatalf("%T: round trip changed the length", v)
		}
	}
}

func TestMisalignedBytesAreCopied(t *testing.T) {
	buf := make([]byte, 17)
	got, err := Decode[[]int64](atollpb.Codec_CODEC_INT64, buf[1:17])
	if err != nil || len(got) != 2 {
		t.Fatalf("decode misaligned: %v %v", got, err)
	}
}

func TestGobValues(t *testing.T) {
	for _, v := range []any{42, "hello", point{1, 2, "p"}, map[string]int{"a": 1}, []string{"x"}} {
		enc, err := Encode(v)
		if err != nil || enc.Codec != atollpb.Codec_CODEC_GOB {
			t.Fatalf("%T: %v %v", v, enc.Codec, err)
		}
	}
	enc, _ := Encode(point{3, 4, "q"})
	p, err := Decode[point](enc.Codec, enc.Data)
	if err != nil || p != (point{3, 4, "q"}) {
		t.Fatalf("decode point: %v %v", p, err)
	}
	if _, err := Decode[string](enc.Codec, enc.Data); !errors.Is(err, errs.ErrInvalidArgument) {
		t.Fatalf("decoding a point as a string: %v", err)
	}
	enc, _ = Encode(7)
	n, err := Decode[int](enc.Codec, enc.Data)
	if err != nil || n != 7 {
		t.Fatalf("decode int: %v %v", n, err)
	}
	if _, err := Decode[any](enc.Codec, enc.Data); !errors.Is(err, errs.ErrInvalidArgument) {
		t.Fatalf("decoding gob into an interface: %v", err)
	}
}

func TestProtoMessages(t *testing.T) {
	msg := &atollpb.ErrorInfo{Code: atollpb.ErrorCode_OBJECT_LOST, Message: "gone"}
	enc, err := Encode(msg)
	if err != nil || enc.Codec != atollpb.Codec_CODEC_PROTO {
		t.Fatalf("encode proto: %v %v", enc.Codec, err)
	}
	back, err := Decode[*atollpb.ErrorInfo](enc.Codec, enc.Data)
	if err != nil || !proto.Equal(back, msg) {
		t.Fatalf("decode proto: %v %v", back, err)
	}
	if _, err := Decode[int](enc.Codec, enc.Data); err == nil {
		t.Fatal("decoding a protobuf object as int succeeded")
	}
}

func TestTypeMismatchIsTyped(t *testing.T) {
	enc, _ := Encode([]float64{1})
	if _, err := Decode[[]int32](enc.Codec, enc.Data); !errors.Is(err, errs.ErrInvalidArgument) {
		t.Fatalf("want invalid argument, got %v", err)
	}
	if _, err := Decode[[]float64](atollpb.Codec_CODEC_FLOAT64, make([]byte, 5)); !errors.Is(err, errs.ErrInvalidArgument) {
		t.Fatalf("want invalid argument for a ragged length, got %v", err)
	}
	got, err := Decode[any](enc.Codec, enc.Data)
	if err != nil || got.([]float64)[0] != 1 {
		t.Fatalf("raw as any: %v %v", got, err)
	}
}

func TestDecodeTypeMatchesDecode(t *testing.T) {
	p := point{1, 2, "p"}
	xs := []float64{1, 2}
	msg := &atollpb.Value{Codec: atollpb.Codec_CODEC_GOB}
	for _, v := range []any{p, xs, []byte("ab"), []int32{7}, 42, "s", map[string]int{"a": 1}, msg} {
		enc, err := Encode(v)
		if err != nil {
			t.Fatal(err)
		}
		got, err := DecodeType(enc.Codec, enc.Data, reflect.TypeOf(v))
		if err != nil {
			t.Fatalf("DecodeType(%T): %v", v, err)
		}
		if m, ok := v.(proto.Message); ok {
			if !proto.Equal(m, got.Interface().(proto.Message)) {
				t.Fatalf("DecodeType(%T) = %v", v, got)
			}
			continue
		}
		if !reflect.DeepEqual(got.Interface(), v) {
			t.Fatalf("DecodeType(%T) = %#v", v, got.Interface())
		}
	}
	// Raw slices decode as views, like Decode.
	enc, _ := Encode(xs)
	got, _ := DecodeType(enc.Codec, enc.Data, reflect.TypeOf(xs))
	if unsafe.Pointer(&got.Interface().([]float64)[0]) != unsafe.Pointer(&xs[0]) {
		t.Fatal("DecodeType copied a []float64")
	}
	// Raw gets the bytes as stored; a mismatch is a typed error.
	raw, err := DecodeType(enc.Codec, enc.Data, reflect.TypeFor[Raw]())
	if err != nil || raw.Interface().(Raw).Codec != atollpb.Codec_CODEC_FLOAT64 {
		t.Fatalf("DecodeType(Raw) = %v, %v", raw, err)
	}
	if _, err := DecodeType(enc.Codec, enc.Data, reflect.TypeFor[[]int64]()); !errors.Is(err, errs.ErrInvalidArgument) {
		t.Fatalf("float64s as int64s: %v", err)
	}
	gob, _ := Encode(p)
	if _, err := DecodeType(gob.Codec, gob.Data, reflect.TypeFor[int]()); !errors.Is(err, errs.ErrInvalidArgument) {
		t.Fatalf("point as int: %v", err)
	}
	if _, err := Encode(Raw{Data: []byte{1}}); !errors.Is(err, errs.ErrInvalidArgument) {
		t.Fatalf("Raw without codec: %v", err)
	}
}
