package codec

import (
	"encoding/binary"
	"math"
	"math/bits"
)

// A gob stream of one basic value (bool, the integers, the floats, a
// string) is short and fixed in shape: its length, the type id of its
// kind, a zero (a singleton, not a struct), the value. encoding/gob makes
// an encoder or a decoder, compiled for the type, per stream, which costs
// far more than the value (a task returning an int paid ~18 allocations
// to decode it). appendGobBasic and decodeGobBasic write and read exactly
// those bytes for the exact basic types, so the objects are the same
// gob streams as before, readable by encoding/gob and read from it; any
// stream not of that exact shape goes to encoding/gob (which reports what
// is wrong with it).

// gob's type ids of the basic kinds.
const (
	gobIDBool   = 1
	gobIDInt    = 2
	gobIDUint   = 3
	gobIDFloat  = 4
	gobIDString = 6
)

// appendGobUint appends u as gob encodes an unsigned integer: below 128
// one byte, else the negated byte count and the big-endian bytes.
func appendGobUint(b []byte, u uint64) []byte {
	if u < 128 {
		return append(b, byte(u))
	}
	n := (bits.Len64(u) + 7) / 8
	b = append(b, byte(-n))
	for i := n - 1; i >= 0; i-- {
		b = append(b, byte(u>>(8*i)))
	}
	return b
}

// readGobUint reads a gob unsigned integer from b: its value and the
// bytes it took, or ok false.
func readGobUint(b []byte) (u uint64, n int, ok bool) {
	if len(b) == 0 {
		return 0, 0, false
	}
	if b[0] < 128 {
		return uint64(b[0]), 1, true
	}
	k := int(-int8(b[0]))
	if k < 1 || k > 8 || len(b) < 1+k {
		return 0, 0, false
	}
	for _, c := range b[1 : 1+k] {
		u = u<<8 | uint64(c)
	}
	return u, 1 + k, true
}

func gobIntBits(i int64) uint64 {
	if i < 0 {
		return uint64(^i<<1) | 1
	}
	return uint64(i << 1)
}

func gobFloatBits(f float64) uint64 { return bits.ReverseBytes64(math.Float64bits(f)) }

// encodeGobBasic returns the gob stream of v if v is of an exact basic
// type, else false.
func encodeGobBasic(v any) ([]byte, bool) {
	var id int64
	var body [binary.MaxVarintLen64 + 1]byte
	val := body[:0]
	switch x := v.(type) {
	case bool:
		id = gobIDBool
		if x {
			val = append(val, 1)
		} else {
			val = append(val, 0)
		}
	case int:
		id, val = gobIDInt, appendGobUint(val, gobIntBits(int64(x)))
	case int8:
		id, val = gobIDInt, appendGobUint(val, gobIntBits(int64(x)))
	case int16:
		id, val = gobIDInt, appendGobUint(val, gobIntBits(int64(x)))
	case int32:
		id, val = gobIDInt, appendGobUint(val, gobIntBits(int64(x)))
	case int64:
		id, val = gobIDInt, appendGobUint(val, gobIntBits(x))
	case uint:
		id, val = gobIDUint, appendGobUint(val, uint64(x))
	case uint8:
		id, val = gobIDUint, appendGobUint(val, uint64(x))
	case uint16:
		id, val = gobIDUint, appendGobUint(val, uint64(x))
	case uint32:
		id, val = gobIDUint, appendGobUint(val, uint64(x))
	case uint64:
		id, val = gobIDUint, appendGobUint(val, x)
	case float32:
		id, val = gobIDFloat, appendGobUint(val, gobFloatBits(float64(x)))
	case float64:
		id, val = gobIDFloat, appendGobUint(val, gobFloatBits(x))
	case string:
		msg := appendGobUint(nil, gobIntBits(gobIDString))
		msg = append(msg, 0)
		msg = appendGobUint(msg, uint64(len(x)))
		msg = append(msg, x...)
		out := appendGobUint(make([]byte, 0, len(msg)+9), uint64(len(msg)))
		return append(out, msg...), true
	default:
		return nil, false
	}
	// id as a gob int (one byte for these), the singleton's zero, the value.
	n := 2 + len(val)
	out := make([]byte, 0, n+1)
	out = appendGobUint(out, uint64(n))
	out = append(out, byte(gobIntBits(id)), 0)
	return append(out, val...), true
}

// gobBasicValue parses a gob stream of one basic value of type id want:
// its value (the unsigned bits; for a string, the string's bytes in str)
// or ok false when data is not exactly such a stream.
func gobBasicValue(data []byte, want int64) (u uint64, str []byte, ok bool) {
	size, n, ok := readGobUint(data)
	if !ok || uint64(len(data)-n) != size || size < 3 {
		return 0, nil, false
	}
	msg := data[n:]
	if msg[0] != byte(gobIntBits(want)) || msg[1] != 0 {
		return 0, nil, false
	}
	u, n, ok = readGobUint(msg[2:])
	if !ok {
		return 0, nil, false
	}
	rest := msg[2+n:]
	if want == gobIDString {
		if uint64(len(rest)) != u {
			return 0, nil, false
		}
		return 0, rest, true
	}
	if len(rest) != 0 {
		return 0, nil, false
	}
	return u, nil, true
}

// decodeGobBasic decodes data into *out, of an exact basic type, and
// reports whether it did (false: not such a type, or data not exactly
// such a stream or out of the type's range: encoding/gob decides).
func decodeGobBasic(data []byte, out any) bool {
	signed := func(bitSize int) (int64, bool) {
		u, _, ok := gobBasicValue(data, gobIDInt)
		if !ok {
			return 0, false
		}
		i := int64(u >> 1)
		if u&1 != 0 {
			i = ^i
		}
		if bitSize < 64 && (i < -1<<(bitSize-1) || i > 1<<(bitSize-1)-1) {
			return 0, false
		}
		return i, true
	}
	unsigned := func(bitSize int) (uint64, bool) {
		u, _, ok := gobBasicValue(data, gobIDUint)
		if !ok || bitSize < 64 && u > 1<<bitSize-1 {
			return 0, false
		}
		return u, true
	}
	float := func() (float64, bool) {
		u, _, ok := gobBasicValue(data, gobIDFloat)
		return math.Float64frombits(bits.ReverseBytes64(u)), ok
	}
	switch p := out.(type) {
	case *bool:
		u, _, ok := gobBasicValue(data, gobIDBool)
		if !ok || u > 1 {
			return false
		}
		*p = u == 1
	case *int:
		i, ok := signed(bits.UintSize)
		if !ok {
			return false
		}
		*p = int(i)
	case *int8:
		i, ok := signed(8)
		if !ok {
			return false
		}
		*p = int8(i)
	case *int16:
		i, ok := signed(16)
		if !ok {
			return false
		}
		*p = int16(i)
	case *int32:
		i, ok := signed(32)
		if !ok {
			return false
		}
		*p = int32(i)
	case *int64:
		i, ok := signed(64)
		if !ok {
			return false
		}
		*p = i
	case *uint:
		u, ok := unsigned(bits.UintSize)
		if !ok {
			return false
		}
		*p = uint(u)
	case *uint8:
		u, ok := unsigned(8)
		if !ok {
			return false
		}
		*p = uint8(u)
	case *uint16:
		u, ok := unsigned(16)
		if !ok {
			return false
		}
		*p = uint16(u)
	case *uint32:
		u, ok := unsigned(32)
		if !ok {
			return false
		}
		*p = uint32(u)
	case *uint64:
		u, ok := unsigned(64)
		if !ok {
			return false
		}
		*p = u
	case *float64:
		f, ok := float()
		if !ok {
			return false
		}
		*p = f
	case *float32:
		f, ok := float()
		if !ok || !math.IsInf(f, 0) && !math.IsNaN(f) && math.Abs(f) > math.MaxFloat32 {
			return false
		}
		*p = float32(f)
	case *string:
		_, s, ok := gobBasicValue(data, gobIDString)
		if !ok {
			return false
		}
		*p = string(s)
	default:
		return false
	}
	return true
}
