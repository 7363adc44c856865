package codec

import (
	"bytes"
	"encoding/gob"
	"errors"
	"math"
	"reflect"
	"testing"
	"unicode/utf8"

	"google.golang.org/protobuf/proto"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/errs"
)

// record is a gob value with every shape whose size comes from the wire:
// strings, byte slices, slices, a map, a recursive type and an interface
// (holding a registered type: a map or a record).
type record struct {
	ID     int64
	Name   string
	Data   []byte
	Tags   []string
	Counts map[string]int
	Kids   []record
	Next   *record
	Any    any
}

func init() {
	gob.Register(record{})
	gob.Register(map[string]int{})
}

// fuzzSeeds are values whose encodings seed FuzzDecode, one of each codec.
func fuzzSeeds() []any {
	r := record{ID: -7, Name: "r", Data: []byte{1, 2}, Tags: []string{"a", "bc"}, Counts: map[string]int{"x": 1, "y": -2}}
	r.Kids = []record{{ID: 1, Counts: map[string]int{"k": 3}}}
	r.Next = &record{Name: "next", Any: record{Any: map[string]int{"in": 1}}}
	return []any{
		[]byte("bytes"), []float64{1.5, math.Inf(-1)}, []float32{0.25}, []int64{-1, 1 << 40}, []int32{7, -7},
		&atollpb.ErrorInfo{Code: atollpb.ErrorCode_OBJECT_LOST, Message: "gone", ObjectId: []byte{1, 2, 3}},
		&atollpb.Frame{Id: 3, Body: &atollpb.Frame_Exit{Exit: &atollpb.WorkerExit{Reason: "idle"}}},
		int64(42), "hello", r, map[string]int{"a": 1, "b": 2}, []record{r, {}},
	}
}

// FuzzDecode decodes arbitrary bytes under an arbitrary codec as each type
// the package handles differently (raw views, protobuf, gob with and
// without maps, Raw, any). Decoding must never panic or allocate beyond
// what the bytes can describe; it fails with ErrInvalidArgument or gives a
// value that Decode and DecodeType agree on and that survives an
// Encode/Decode round trip.
func FuzzDecode(f *testing.F) {
	for _, v := range fuzzSeeds() {
		enc, err := Encode(v)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(uint8(enc.Codec), enc.Data)
		f.Add(uint8(enc.Codec), enc.Data[:len(enc.Data)/2])
	}
	f.Add(uint8(atollpb.Codec_CODEC_UNSPECIFIED), []byte{})
	f.Add(uint8(atollpb.Codec_CODEC_ERROR), []byte{0xff, 0xff})
	f.Add(uint8(atollpb.Codec_CODEC_GOB), []byte{0xfc, 0x7f, 0xff, 0xff, 0xff, 0x01})
	f.Add(uint8(99), []byte("garbage"))
	// Maps claiming 2^60 entries (see TestGobMapCountIsBounded).
	f.Add(uint8(atollpb.Codec_CODEC_GOB), mapBomb(f, map[string]int{"q": 1}, 1<<60))
	f.Add(uint8(atollpb.Codec_CODEC_GOB), mapBomb(f, record{Any: map[string]int{"q": 1}}, 1<<60))
	f.Fuzz(func(t *testing.T, c uint8, data []byte) {
		codec := atollpb.Codec(c)
		checkDecode(t, codec, data, func(a, b Raw) bool { return a.Codec == b.Codec && bytes.Equal(a.Data, b.Data) })
		checkDecode(t, codec, data, bytes.Equal)
		checkDecode(t, codec, data, sameRaw[float64])
		checkDecode(t, codec, data, sameRaw[float32])
		checkDecode(t, codec, data, sameRaw[int64])
		checkDecode(t, codec, data, sameRaw[int32])
		checkDecode(t, codec, data, func(a, b *atollpb.ErrorInfo) bool { return proto.Equal(a, b) })
		checkDecode(t, codec, data, func(a, b *atollpb.Frame) bool { return proto.Equal(a, b) })
		checkDecode(t, codec, data, func(a, b int64) bool { return a == b })
		checkDecode(t, codec, data, func(a, b string) bool { return a == b })
		checkDecode(t, codec, data, sameGob[record])
		checkDecode(t, codec, data, sameGob[map[string]int])
		checkDecode(t, codec, data, sameGob[[]record])
		checkDecode(t, codec, data, func(a, b any) bool { return sameGob(a, b) })
	})
}

// checkDecode decodes data as a T with Decode and DecodeType, and checks
// that they agree, that a failure is ErrInvalidArgument, and that a value
// decoded encodes and decodes back to itself (same compares two Ts).
func checkDecode[T any](t *testing.T, c atollpb.Codec, data []byte, same func(a, b T) bool) {
	t.Helper()
	typ := reflect.TypeFor[T]()
	v, err := Decode[T](c, data)
	rv, terr := DecodeType(c, data, typ)
	if err != nil || terr != nil {
		if !errors.Is(err, errs.ErrInvalidArgument) || !errors.Is(terr, errs.ErrInvalidArgument) {
			t.Fatalf("decode %v as %v: Decode: %v; DecodeType: %v (want both ErrInvalidArgument)", c, typ, err, terr)
		}
		return
	}
	if !same(v, rv.Interface().(T)) {
		t.Fatalf("decode %v as %v: Decode gave %#v, DecodeType %#v", c, typ, v, rv.Interface())
	}
	enc, err := Encode(v)
	if err != nil {
		if r, ok := any(v).(Raw); ok && r.Codec == atollpb.Codec_CODEC_UNSPECIFIED && errors.Is(err, errs.ErrInvalidArgument) {
			return // a Raw needs a codec to be stored
		}
		t.Fatalf("re-encode %v decoded as %v: %v", c, typ, err)
	}
	back, err := Decode[T](enc.Codec, enc.Data)
	if err != nil || !same(v, back) {
		t.Fatalf("%v decoded as %v did not round-trip: %#v became %#v (%v)", c, typ, v, back, err)
	}
}

// FuzzRoundTrip builds typed values from the fuzzer's fields and checks
// that each one decodes to what was encoded.
func FuzzRoundTrip(f *testing.F) {
	f.Add(int64(0), "", []byte(nil), 0.0, int32(0))
	f.Add(int64(-1), "name", []byte{0, 1, 2, 255}, math.Pi, int32(-5))
	f.Add(int64(math.MinInt64), "\xff\xfe", []byte("x"), math.NaN(), int32(math.MaxInt32))
	f.Fuzz(func(t *testing.T, id int64, name string, data []byte, x float64, n int32) {
		r := record{ID: id, Name: name, Data: data, Tags: []string{name, ""}, Counts: map[string]int{name: int(n)}}
		r.Kids = []record{{ID: int64(n), Name: name}, {Data: data}}
		if n%2 == 0 {
			r.Next = &record{ID: id, Counts: map[string]int{"": 0}, Any: record{Name: name, Any: r.Counts}}
		} else {
			r.Any = map[string]int{name: int(id)}
		}
		roundTrip(t, data, bytes.Equal)
		roundTrip(t, []float64{x, -x, float64(n)}, sameRaw[float64])
		roundTrip(t, []float32{float32(x)}, sameRaw[float32])
		roundTrip(t, []int64{id, int64(n)}, sameRaw[int64])
		roundTrip(t, []int32{n}, sameRaw[int32])
		roundTrip(t, Raw{Codec: atollpb.Codec_CODEC_GOB, Data: data}, func(a, b Raw) bool { return a.Codec == b.Codec && bytes.Equal(a.Data, b.Data) })
		roundTrip(t, id, func(a, b int64) bool { return a == b })
		roundTrip(t, name, func(a, b string) bool { return a == b })
		roundTrip(t, x, func(a, b float64) bool { return math.Float64bits(a) == math.Float64bits(b) })
		roundTrip(t, r, sameGob[record])
		roundTrip(t, r.Counts, sameGob[map[string]int])
		roundTrip(t, []record{r, {}}, sameGob[[]record])
		msg := &atollpb.ErrorInfo{Code: atollpb.ErrorCode(n), Message: name, TaskId: data}
		if !utf8.ValidString(name) {
			// proto3 strings must be UTF-8: refused, with a typed error.
			if _, err := Encode(msg); !errors.Is(err, errs.ErrInvalidArgument) {
				t.Fatalf("encode a message with a non-UTF-8 string: %v", err)
			}
			return
		}
		roundTrip(t, msg, func(a, b *atollpb.ErrorInfo) bool { return proto.Equal(a, b) })
	})
}

func roundTrip[T any](t *testing.T, v T, same func(a, b T) bool) {
	t.Helper()
	enc, err := Encode(v)
	if err != nil {
		t.Fatalf("encode %T: %v", v, err)
	}
	back, err := Decode[T](enc.Codec, enc.Data)
	if err != nil || !same(v, back) {
		t.Fatalf("%T: %#v became %#v (%v)", v, v, back, err)
	}
	rv, err := DecodeType(enc.Codec, enc.Data, reflect.TypeFor[T]())
	if err != nil || !same(v, rv.Interface().(T)) {
		t.Fatalf("%T with DecodeType: %#v became %#v (%v)", v, v, rv, err)
	}
}

// sameRaw compares raw slices bit for bit (NaN is equal to itself).
func sameRaw[E number](a, b []E) bool { return bytes.Equal(sliceBytes(a), sliceBytes(b)) }

// sameGob compares values as gob carries them: an empty slice or map is
// sent as nothing and comes back nil.
func sameGob[T any](a, b T) bool { return sameValue(reflect.ValueOf(a), reflect.ValueOf(b)) }

func sameValue(a, b reflect.Value) bool {
	if !a.IsValid() || !b.IsValid() {
		return a.IsValid() == b.IsValid()
	}
	if a.Type() != b.Type() {
		return false
	}
	switch a.Kind() {
	case reflect.Slice:
		if a.Len() != b.Len() {
			return false
		}
		if a.Type().Elem().Kind() == reflect.Uint8 {
			return bytes.Equal(a.Bytes(), b.Bytes())
		}
		for i := range a.Len() {
			if !sameValue(a.Index(i), b.Index(i)) {
				return false
			}
		}
		return true
	case reflect.Map:
		if a.Len() != b.Len() {
			return false
		}
		for it := a.MapRange(); it.Next(); {
			if w := b.MapIndex(it.Key()); !w.IsValid() || !sameValue(it.Value(), w) {
				return false
			}
		}
		return true
	case reflect.Pointer, reflect.Interface:
		if a.IsNil() || b.IsNil() {
			return a.IsNil() == b.IsNil()
		}
		return sameValue(a.Elem(), b.Elem())
	case reflect.Struct:
		for i := range a.NumField() {
			if !sameValue(a.Field(i), b.Field(i)) {
				return false
			}
		}
		return true
	case reflect.Float32, reflect.Float64:
		return math.Float64bits(a.Float()) == math.Float64bits(b.Float())
	}
	return a.Equal(b)
}
