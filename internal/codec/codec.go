// Package codec turns Go values into object bytes and back.
//
// Flat numeric slices ([]byte, []float64, []float32, []int64, []int32) are
// stored as their raw little-endian memory and decoded as views: a Get of a
// []float64 from the object store returns a slice that points into the
// shared arena, with no copy. Protobuf messages use the protobuf wire
// format. Every other Go value uses encoding/gob, which handles structs,
// maps, slices and basic types, decoded into the concrete type the reader
// names (interface-typed values are not supported).
//
// Decoding trusts nothing in the bytes: a malformed object fails with
// ErrInvalidArgument, and a gob stream is checked before encoding/gob sees
// it so that a count it claims cannot make gob allocate more than the
// object's size warrants (see checkGob). FuzzDecode and FuzzRoundTrip
// check both.
package codec

import (
	"bytes"
	"encoding/gob"
	"fmt"
	"reflect"
	"unsafe"

	"google.golang.org/protobuf/proto"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/errs"
)

// Encoded is an encoded value. For raw slices Data aliases the value's own
// memory (no copy): the caller must not keep it past the value's lifetime
// and must not modify it.
type Encoded struct {
	Codec atollpb.Codec
	Data  []byte
}

// Raw is a value as stored: its codec and its bytes, not decoded. Encoding
// a Raw stores its bytes as they are; decoding an object as a Raw returns a
// view of its bytes. It is how code that learns types at run time (task
// graphs) passes values through the SDK.
type Raw struct {
	Codec atollpb.Codec
	Data  []byte
}

// Encode encodes v. Raw numeric slices are not copied.
func Encode(v any) (Encoded, error) {
	switch x := v.(type) {
	case Raw:
		if x.Codec == atollpb.Codec_CODEC_UNSPECIFIED {
			return Encoded{}, errs.Invalidf("encode a Raw value: no codec")
		}
		return Encoded(x), nil
	case []byte:
		return Encoded{atollpb.Codec_CODEC_BYTES, x}, nil
	case []float64:
		return Encoded{atollpb.Codec_CODEC_FLOAT64, sliceBytes(x)}, nil
	case []float32:
		return Encoded{atollpb.Codec_CODEC_FLOAT32, sliceBytes(x)}, nil
	case []int64:
		return Encoded{atollpb.Codec_CODEC_INT64, sliceBytes(x)}, nil
	case []int32:
		return Encoded{atollpb.Codec_CODEC_INT32, sliceBytes(x)}, nil
	case proto.Message:
		b, err := proto.Marshal(x)
		if err != nil {
			return Encoded{}, errs.Invalidf("encode %T: %v", v, err)
		}
		return Encoded{atollpb.Codec_CODEC_PROTO, b}, nil
	}
	if b, ok := encodeGobBasic(v); ok {
		return Encoded{atollpb.Codec_CODEC_GOB, b}, nil
	}
	var buf bytes.Buffer
	if err := gob.NewEncoder(&buf).Encode(v); err != nil {
		return Encoded{}, errs.Invalidf("encode %T with gob: %v", v, err)
	}
	return Encoded{atollpb.Codec_CODEC_GOB, buf.Bytes()}, nil
}

// RawCodec reports the raw codec for the element type of a flat slice
// type T, if T is one.
func RawCodec[T any]() (atollpb.Codec, bool) {
	var zero T
	switch any(zero).(type) {
	case []byte:
		return atollpb.Codec_CODEC_BYTES, true
	case []float64:
		return atollpb.Codec_CODEC_FLOAT64, true
	case []float32:
		return atollpb.Codec_CODEC_FLOAT32, true
	case []int64:
		return atollpb.Codec_CODEC_INT64, true
	case []int32:
		return atollpb.Codec_CODEC_INT32, true
	}
	return atollpb.Codec_CODEC_UNSPECIFIED, false
}

// IsView reports whether decoding a T from raw bytes returns a view that
// aliases those bytes.
func IsView[T any]() bool {
	if _, ok := any(*new(T)).(Raw); ok {
		return true
	}
	_, ok := RawCodec[T]()
	return ok
}

// Decode decodes data into a T. For raw slice types the result aliases
// data when data is suitably aligned (always true for the object store,
// whose blocks are 64-byte aligned) and is a copy otherwise.
func Decode[T any](c atollpb.Codec, data []byte) (T, error) {
	var zero T
	var out any
	var err error
	switch any(zero).(type) {
	case Raw:
		out = Raw{Codec: c, Data: data}
	case []byte:
		out, err = rawView[byte](c, atollpb.Codec_CODEC_BYTES, data)
	case []float64:
		out, err = rawView[float64](c, atollpb.Codec_CODEC_FLOAT64, data)
	case []float32:
		out, err = rawView[float32](c, atollpb.Codec_CODEC_FLOAT32, data)
	case []int64:
		out, err = rawView[int64](c, atollpb.Codec_CODEC_INT64, data)
	case []int32:
		out, err = rawView[int32](c, atollpb.Codec_CODEC_INT32, data)
	default:
		return decodeOther[T](c, data)
	}
	if err != nil {
		return zero, err
	}
	return out.(T), nil
}

func decodeOther[T any](c atollpb.Codec, data []byte) (T, error) {
	var zero T
	switch c {
	case atollpb.Codec_CODEC_PROTO:
		m, ok := any(zero).(proto.Message)
		if !ok {
			return zero, errs.Invalidf("object holds a protobuf message; %T is not one", zero)
		}
		t := reflect.TypeOf(zero)
		if t == nil || t.Kind() != reflect.Pointer {
			return zero, errs.Invalidf("decode protobuf into %T: need a pointer message type", zero)
		}
		msg := m.ProtoReflect().Type().New().Interface()
		if err := proto.Unmarshal(data, msg); err != nil {
			return zero, errs.Invalidf("decode %T: %v", zero, err)
		}
		return msg.(T), nil
	case atollpb.Codec_CODEC_GOB:
		if t := reflect.TypeFor[T](); t.Kind() == reflect.Interface {
			return zero, errs.Invalidf("cannot decode a gob object into interface type %v: use the concrete type", t)
		}
		// A basic value decodes into a variable of its own: v escapes
		// to the heap (gob's Decode takes it as an interface), b does
		// not, so a task's int result decodes without an allocation.
		var b T
		if decodeGobBasic(data, &b) {
			return b, nil
		}
		var v T
		if err := checkGob(data); err != nil {
			return zero, errs.Invalidf("decode %v with gob: %v", reflect.TypeFor[T](), err)
		}
		if err := gob.NewDecoder(bytes.NewReader(data)).Decode(&v); err != nil {
			return zero, errs.Invalidf("decode %v with gob: %v", reflect.TypeFor[T](), err)
		}
		return v, nil
	}
	// A raw object asked for as a non-raw type (e.g. []float64 as any).
	switch c {
	case atollpb.Codec_CODEC_BYTES, atollpb.Codec_CODEC_FLOAT64, atollpb.Codec_CODEC_FLOAT32,
		atollpb.Codec_CODEC_INT64, atollpb.Codec_CODEC_INT32:
		v, err := DecodeAny(c, data)
		if err != nil {
			return zero, err
		}
		t, ok := v.(T)
		if !ok {
			return zero, errs.Invalidf("object holds a %T, not a %T", v, zero)
		}
		return t, nil
	}
	return zero, errs.Invalidf("cannot decode codec %v into %T", c, zero)
}

// DecodeType decodes data into a new value of type t, as Decode[T] does
// for T = t: raw slices as views, protobuf messages (pointer types) and
// gob values otherwise.
func DecodeType(c atollpb.Codec, data []byte, t reflect.Type) (reflect.Value, error) {
	if t == nil {
		return reflect.Value{}, errs.Invalidf("decode into a nil type")
	}
	if t == reflect.TypeFor[Raw]() {
		return reflect.ValueOf(Raw{Codec: c, Data: data}), nil
	}
	switch t {
	case reflect.TypeFor[[]byte](), reflect.TypeFor[[]float64](), reflect.TypeFor[[]float32](),
		reflect.TypeFor[[]int64](), reflect.TypeFor[[]int32]():
		var v any
		var err error
		switch t {
		case reflect.TypeFor[[]byte]():
			v, err = rawView[byte](c, atollpb.Codec_CODEC_BYTES, data)
		case reflect.TypeFor[[]float64]():
			v, err = rawView[float64](c, atollpb.Codec_CODEC_FLOAT64, data)
		case reflect.TypeFor[[]float32]():
			v, err = rawView[float32](c, atollpb.Codec_CODEC_FLOAT32, data)
		case reflect.TypeFor[[]int64]():
			v, err = rawView[int64](c, atollpb.Codec_CODEC_INT64, data)
		default:
			v, err = rawView[int32](c, atollpb.Codec_CODEC_INT32, data)
		}
		if err != nil {
			return reflect.Value{}, err
		}
		return reflect.ValueOf(v), nil
	}
	switch c {
	case atollpb.Codec_CODEC_PROTO:
		if t.Kind() != reflect.Pointer || !t.Implements(reflect.TypeFor[proto.Message]()) {
			return reflect.Value{}, errs.Invalidf("object holds a protobuf message; %v is not a pointer message type", t)
		}
		msg := reflect.New(t.Elem()).Interface().(proto.Message)
		if err := proto.Unmarshal(data, msg); err != nil {
			return reflect.Value{}, errs.Invalidf("decode %v: %v", t, err)
		}
		return reflect.ValueOf(msg), nil
	case atollpb.Codec_CODEC_GOB:
		if t.Kind() == reflect.Interface {
			return reflect.Value{}, errs.Invalidf("cannot decode a gob object into interface type %v: use the concrete type", t)
		}
		if err := checkGob(data); err != nil {
			return reflect.Value{}, errs.Invalidf("decode %v with gob: %v", t, err)
		}
		p := reflect.New(t)
		if err := gob.NewDecoder(bytes.NewReader(data)).DecodeValue(p); err != nil {
			return reflect.Value{}, errs.Invalidf("decode %v with gob: %v", t, err)
		}
		return p.Elem(), nil
	}
	v, err := DecodeAny(c, data)
	if err != nil {
		return reflect.Value{}, err
	}
	rv := reflect.ValueOf(v)
	if !rv.Type().AssignableTo(t) {
		return reflect.Value{}, errs.Invalidf("object holds a %T, not a %v", v, t)
	}
	out := reflect.New(t).Elem()
	out.Set(rv)
	return out, nil
}

// DecodeAny decodes a raw object into a copy of its slice (the caller
// holds no pin). Gob and protobuf objects cannot be decoded without
// knowing their type.
func DecodeAny(c atollpb.Codec, data []byte) (any, error) {
	switch c {
	case atollpb.Codec_CODEC_BYTES:
		return append([]byte(nil), data...), nil
	case atollpb.Codec_CODEC_FLOAT64:
		return copyRaw[float64](data), nil
	case atollpb.Codec_CODEC_FLOAT32:
		return copyRaw[float32](data), nil
	case atollpb.Codec_CODEC_INT64:
		return copyRaw[int64](data), nil
	case atollpb.Codec_CODEC_INT32:
		return copyRaw[int32](data), nil
	}
	return nil, errs.Invalidf("cannot decode codec %v without a type", c)
}

type number interface {
	~byte | ~float64 | ~float32 | ~int64 | ~int32
}

func rawView[E number](got, want atollpb.Codec, data []byte) ([]E, error) {
	if got != want {
		return nil, errs.Invalidf("object has codec %v, cannot view it as %v", got, want)
	}
	var e E
	size := int(unsafe.Sizeof(e))
	if len(data)%size != 0 {
		return nil, errs.Invalidf("object of %d bytes is not a whole number of %d-byte elements", len(data), size)
	}
	if len(data) == 0 {
		return []E{}, nil
	}
	if uintptr(unsafe.Pointer(&data[0]))%uintptr(unsafe.Alignof(e)) != 0 {
		return copyRaw[E](data), nil
	}
	return unsafe.Slice((*E)(unsafe.Pointer(&data[0])), len(data)/size), nil
}

func copyRaw[E number](data []byte) []E {
	var e E
	size := int(unsafe.Sizeof(e))
	out := make([]E, len(data)/size)
	if len(out) > 0 {
		copy(sliceBytes(out), data)
	}
	return out
}

// sliceBytes views a numeric slice's memory as bytes, without copying.
func sliceBytes[E number](s []E) []byte {
	if len(s) == 0 {
		return []byte{}
	}
	var e E
	return unsafe.Slice((*byte)(unsafe.Pointer(&s[0])), len(s)*int(unsafe.Sizeof(e)))
}

// ElemSize returns the element size of a raw codec, or 0.
func ElemSize(c atollpb.Codec) int {
	switch c {
	case atollpb.Codec_CODEC_BYTES:
		return 1
	case atollpb.Codec_CODEC_FLOAT64, atollpb.Codec_CODEC_INT64:
		return 8
	case atollpb.Codec_CODEC_FLOAT32, atollpb.Codec_CODEC_INT32:
		return 4
	}
	return 0
}

// BytesOf views the memory of a raw numeric slice as bytes. It panics if v
// is not one of the raw slice types; callers check with RawCodec first.
func BytesOf(v any) []byte {
	enc, err := Encode(v)
	if err != nil || ElemSize(enc.Codec) == 0 {
		panic(fmt.Sprintf("codec: BytesOf(%T): not a raw slice", v))
	}
	return enc.Data
}
