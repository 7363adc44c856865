package codec

import (
	"bytes"
	"errors"
	"reflect"
	"runtime"
	"testing"
	"time"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/errs"
)

// gobUintBytes encodes x as gob encodes an unsigned integer.
func gobUintBytes(x uint64) []byte {
	if x <= 0x7f {
		return []byte{byte(x)}
	}
	var b []byte
	for ; x > 0; x >>= 8 {
		b = append([]byte{byte(x)}, b...)
	}
	return append([]byte{byte(-len(b))}, b...)
}

// patchLast replaces old by new in the last message of a gob stream whose
// messages are shorter than 128 bytes, and fixes that message's length.
func patchLast(t testing.TB, data, old, new []byte) []byte {
	t.Helper()
	last := 0
	for at := 0; at < len(data); at += 1 + int(data[at]) {
		if data[at] > 0x7f {
			t.Fatalf("message at %d is too long for patchLast", at)
		}
		last = at
	}
	msg := data[last+1:]
	if bytes.Count(msg, old) != 1 {
		t.Fatalf("% x is not once in the last message % x", old, msg)
	}
	msg = bytes.Replace(msg, old, new, 1)
	if len(msg) > 0x7f {
		t.Fatal("patched message too long")
	}
	return append(append(append([]byte(nil), data[:last]...), byte(len(msg))), msg...)
}

// mapBomb encodes v, which holds one map of one entry, "q", and makes the
// map's count claim n entries.
func mapBomb(t testing.TB, v any, n uint64) []byte {
	t.Helper()
	enc, err := Encode(v)
	if err != nil {
		t.Fatal(err)
	}
	// The entry: count 1, then the key.
	return patchLast(t, enc.Data, []byte{1, 1, 'q'}, append(gobUintBytes(n), 1, 'q'))
}

// A map whose count claims 2^24 entries in a few bytes: encoding/gob
// allocates the map (900 MB for a map[string]int, in seconds) before
// reading an entry.
func TestGobMapCountIsBounded(t *testing.T) {
	const claimed = 1 << 24
	bomb := func(v any) []byte { return mapBomb(t, v, claimed) }
	cases := []struct {
		name string
		data []byte
		typ  reflect.Type
	}{
		{"top-level map", bomb(map[string]int{"q": 5}), reflect.TypeFor[map[string]int]()},
		{"map in a struct", bomb(record{Counts: map[string]int{"q": 5}}), reflect.TypeFor[record]()},
		{"map in a slice", bomb([]record{{Counts: map[string]int{"q": 5}}}), reflect.TypeFor[[]record]()},
		{"map in an interface", bomb(record{Any: map[string]int{"q": 5}}), reflect.TypeFor[record]()},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			_, err := DecodeType(atollpb.Codec_CODEC_GOB, c.data, c.typ)
			runtime.ReadMemStats(&after)
			if !errors.Is(err, errs.ErrInvalidArgument) {
				t.Fatalf("decode a map claiming %d entries in %d bytes: %v", claimed, len(c.data), err)
			}
			if n := after.TotalAlloc - before.TotalAlloc; n > 16<<20 {
				t.Fatalf("decoding %d bytes allocated %d", len(c.data), n)
			}
		})
	}
	if _, err := Decode[map[string]int](atollpb.Codec_CODEC_GOB, cases[0].data); !errors.Is(err, errs.ErrInvalidArgument) {
		t.Fatalf("Decode: %v", err)
	}
}

// A message whose length prefix claims more bytes than follow.
func TestGobMessageLongerThanData(t *testing.T) {
	data := append(gobUintBytes(1<<30), 0xff, 0x80)
	if _, err := Decode[string](atollpb.Codec_CODEC_GOB, data); !errors.Is(err, errs.ErrInvalidArgument) {
		t.Fatalf("decode: %v", err)
	}
}

type gobShapes struct {
	B     bool
	U     uint16
	I     int8
	F     float32
	C     complex128
	Arr   [3]int
	Bytes [2]byte
	Grid  [][]string
	When  time.Time // a BinaryMarshaler
	P     **int
	M     map[point][]point
	Ifs   []any
	Embedded
}

type Embedded struct{ E string }

// checkGob must accept everything gob.Encoder writes: every kind of wire
// type, GobEncoder values, and interfaces nested in interfaces (whose type
// definitions gob sends inside the value and across messages).
func TestCheckGobAcceptsEncoderOutput(t *testing.T) {
	n := 7
	pn := &n
	shapes := gobShapes{
		B: true, U: 65535, I: -3, F: 1.5, C: complex(1, -2), Arr: [3]int{1, 0, 3}, Bytes: [2]byte{0, 9},
		Grid: [][]string{{"a"}, {}, {"b", "c"}}, When: time.Date(2024, 2, 29, 1, 2, 3, 4, time.UTC), P: &pn,
		M:        map[point][]point{{1, 2, "k"}: {{3, 4, "v"}}, {}: nil},
		Ifs:      []any{nil, record{Any: record{Any: map[string]int{"deep": 1}}}, map[string]int{}, record{}},
		Embedded: Embedded{"e"},
	}
	for _, v := range []any{
		true, uint(1 << 63), -1, 2.5, complex(3, 4), "", "s", [0]int{}, []int{},
		map[string]int{}, map[string]int{"a": 1}, point{}, shapes, []gobShapes{shapes, {}},
		record{Any: record{Any: record{Any: map[string]int{"x": 1}}}},
		map[string]record{"r": {Any: map[string]int{"y": 2}}, "": {}},
	} {
		enc, err := Encode(v)
		if err != nil {
			t.Fatalf("encode %T: %v", v, err)
		}
		if err := checkGob(enc.Data); err != nil {
			t.Fatalf("checkGob(%T %+v): %v", v, v, err)
		}
		got, err := DecodeType(enc.Codec, enc.Data, reflect.TypeOf(v))
		if err != nil {
			t.Fatalf("decode %T: %v", v, err)
		}
		if g, ok := got.Interface().(gobShapes); ok {
			if !g.When.Equal(shapes.When) {
				t.Fatalf("time %v became %v", shapes.When, g.When)
			}
			g.When = shapes.When
			got = reflect.ValueOf(g)
		}
		if !sameValue(reflect.ValueOf(v), got) && !reflect.DeepEqual(v, got.Interface()) {
			t.Fatalf("%T: %+v became %+v", v, v, got.Interface())
		}
	}
}
