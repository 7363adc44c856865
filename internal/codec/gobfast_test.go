package codec

import (
	"bytes"
	"encoding/gob"
	"math"
	"testing"
)

// The fast path writes exactly encoding/gob's stream of a basic value and
// reads it back as encoding/gob does.
func TestGobBasicMatchesGob(t *testing.T) {
	values := []any{
		false, true, 0, 1, -1, 63, 64, -64, -65, 127, 128, 300, -300, math.MaxInt64, math.MinInt64,
		int8(-128), int8(127), int16(-32768), int32(math.MinInt32), int64(1 << 40),
		uint(0), uint(255), uint8(200), uint16(65535), uint32(math.MaxUint32), uint64(math.MaxUint64),
		0.0, 1.5, -2.25, math.Inf(1), math.Inf(-1), math.MaxFloat64, math.SmallestNonzeroFloat64, float32(2.5), float32(-0.1),
		"", "a", "hello, world", string(make([]byte, 300)),
	}
	for _, v := range values {
		var want bytes.Buffer
		if err := gob.NewEncoder(&want).Encode(v); err != nil {
			t.Fatal(err)
		}
		got, ok := encodeGobBasic(v)
		if !ok || !bytes.Equal(got, want.Bytes()) {
			t.Fatalf("%T %v: % x, gob % x", v, v, got, want.Bytes())
		}
	}
	// Decoding: every pair of basic type and stream decodes as gob does,
	// or is left to gob (out of range, another kind).
	targets := []func() any{
		func() any { return new(bool) }, func() any { return new(int) }, func() any { return new(int8) },
		func() any { return new(int16) }, func() any { return new(int32) }, func() any { return new(int64) },
		func() any { return new(uint) }, func() any { return new(uint8) }, func() any { return new(uint16) },
		func() any { return new(uint32) }, func() any { return new(uint64) }, func() any { return new(float32) },
		func() any { return new(float64) }, func() any { return new(string) },
	}
	for _, v := range values {
		var buf bytes.Buffer
		if err := gob.NewEncoder(&buf).Encode(v); err != nil {
			t.Fatal(err)
		}
		for _, mk := range targets {
			fast, slow := mk(), mk()
			gobErr := gob.NewDecoder(bytes.NewReader(buf.Bytes())).Decode(slow)
			if !decodeGobBasic(buf.Bytes(), fast) {
				continue
			}
			if gobErr != nil {
				t.Fatalf("%T %v into %T: decoded, gob says %v", v, v, fast, gobErr)
			}
			if f, s := deref(fast), deref(slow); !same(f, s) {
				t.Fatalf("%T %v into %T: %v, gob %v", v, v, fast, f, s)
			}
		}
	}
}

func deref(p any) any {
	switch x := p.(type) {
	case *bool:
		return *x
	case *int:
		return *x
	case *int8:
		return *x
	case *int16:
		return *x
	case *int32:
		return *x
	case *int64:
		return *x
	case *uint:
		return *x
	case *uint8:
		return *x
	case *uint16:
		return *x
	case *uint32:
		return *x
	case *uint64:
		return *x
	case *float32:
		return *x
	case *float64:
		return *x
	case *string:
		return *x
	}
	return nil
}

// same compares two decoded values, NaN equal to NaN.
func same(a, b any) bool {
	switch x := a.(type) {
	case float64:
		y, ok := b.(float64)
		return ok && (x == y || math.IsNaN(x) && math.IsNaN(y))
	case float32:
		y, ok := b.(float32)
		return ok && (x == y || x != x && y != y)
	}
	return a == b
}

// Malformed or foreign streams are never taken by the fast path's
// decoder unless gob would take them too.
func FuzzGobBasic(f *testing.F) {
	for _, v := range []any{1, -5, uint8(3), 2.5, "x", true} {
		b, _ := encodeGobBasic(v)
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, mk := range []func() any{func() any { return new(int) }, func() any { return new(int8) }, func() any { return new(uint16) },
			func() any { return new(float32) }, func() any { return new(string) }, func() any { return new(bool) }} {
			fast, slow := mk(), mk()
			if !decodeGobBasic(data, fast) {
				continue
			}
			if err := gob.NewDecoder(bytes.NewReader(data)).Decode(slow); err != nil {
				t.Fatalf("% x into %T: fast path took it, gob: %v", data, fast, err)
			}
			if f, s := deref(fast), deref(slow); !same(f, s) {
				t.Fatalf("% x into %T: %v, gob %v", data, fast, f, s)
			}
		}
	})
}

// A basic value decodes without an allocation (a task's int result is
// decoded once per Get): the fast path's variable stays on the stack.
func TestGobBasicDecodesWithoutAllocating(t *testing.T) {
	enc, err := Encode(12345)
	if err != nil {
		t.Fatal(err)
	}
	allocs := testing.AllocsPerRun(100, func() {
		if v, err := Decode[int](enc.Codec, enc.Data); v != 12345 || err != nil {
			t.Fatalf("decoded %d, %v; want 12345", v, err)
		}
	})
	if allocs != 0 {
		t.Fatalf("Decode[int] allocates %.1f times, want 0", allocs)
	}
}
