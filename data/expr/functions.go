package expr

import (
	"encoding/binary"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// The functions' kernels arrow-go lacks, or whose behaviour differs from
// Go's: Round (arrow-go's round fails on a value whose scaled form
// overflows, where Go has nothing to round) and every string function
// (case, trimming, replacement, slices, character counts,
// concatenation). Abs, Floor, Ceil, Sqrt, Log and Pow are arrow-go's
// (eval's kernels).

// roundFloats is the floats of a rounded to digits decimal places,
// halves away from zero.
func roundFloats(mem memory.Allocator, a arrow.Array, digits string) (arrow.Array, error) {
	d, err := strconv.Atoi(digits)
	if err != nil || d < 0 || d > maxRoundDigits {
		return nil, fmt.Errorf("expr: round to %q decimal places", digits)
	}
	switch a.DataType().ID() {
	case arrow.FLOAT64:
		return roundAll[float64](mem, a, math.Pow10(d)), nil
	case arrow.FLOAT32:
		return roundAll[float32](mem, a, math.Pow10(d)), nil
	}
	return nil, fmt.Errorf("expr: round of %s", typeName(a.DataType()))
}

func roundAll[T float32 | float64](mem memory.Allocator, a arrow.Array, scale float64) arrow.Array {
	n := a.Len()
	x := arrow.GetValues[T](a.Data(), 1)[:n]
	valid := nullsOf(mem, a)
	vals, out := fixedBuffer[T](mem, n)
	if scale == 1 {
		for i, v := range x {
			out[i] = T(math.Round(float64(v)))
		}
		return finish(a.DataType(), n, valid, vals)
	}
	for i, v := range x {
		// a value too large to scale is whole already, and itself; NaN
		// stays NaN
		y := float64(v) * scale
		r := T(math.Round(y) / scale)
		if math.IsInf(y, 0) {
			r = v
		}
		out[i] = r
	}
	return finish(a.DataType(), n, valid, vals)
}

// stringFuncs are the string-to-string functions' Go functions.
var stringFuncs = map[string]func(string) string{opLower: strings.ToLower, opUpper: strings.ToUpper, opTrim: strings.TrimSpace}

// mapStrings is the function op of each string of a. The lower and upper
// case of ASCII text map its bytes in place of a call per value.
func mapStrings(mem memory.Allocator, a arrow.Array, op string) (arrow.Array, error) {
	s, ok := a.(*array.String)
	f := stringFuncs[op]
	if !ok || f == nil {
		return nil, fmt.Errorf("expr: %s of %s", op, typeName(a.DataType()))
	}
	if op != opTrim && s.Len() > 0 && isASCII(s.ValueBytes()) {
		return asciiCase(mem, s, op == opUpper), nil
	}
	return eachString(mem, s, f), nil
}

// isASCII says whether b is ASCII text, eight bytes at a time.
func isASCII(b []byte) bool {
	for len(b) >= 8 {
		if binary.LittleEndian.Uint64(b)&highBits != 0 {
			return false
		}
		b = b[8:]
	}
	for _, c := range b {
		if c >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// highBits is the high bit of each byte of a word.
const highBits = 0x8080808080808080

// asciiCase is the lower (or upper) case of s, whose text is ASCII: its
// offsets kept, its bytes mapped eight at a time (a letter of the other
// case has its 0x20 bit flipped).
func asciiCase(mem memory.Allocator, s *array.String, upper bool) arrow.Array {
	from := byte('A')
	if upper {
		from = 'a'
	}
	// per byte: the high bit of x+geFrom is set where the byte is from
	// or more, of x+gtLast where it is past the 26th letter (no carry
	// crosses a byte: every byte is below 0x80)
	geFrom := 0x0101010101010101 * uint64(0x80-from)
	gtLast := 0x0101010101010101 * uint64(0x80-from-26)
	n := s.Len()
	offs := s.ValueOffsets()
	base := offs[0]
	offBuf, outOffs := fixedBuffer[int32](mem, n+1)
	for i, o := range offs[:n+1] {
		outOffs[i] = o - base
	}
	data := s.ValueBytes()
	dataBuf := memory.NewResizableBuffer(mem)
	dataBuf.Resize(len(data))
	out := dataBuf.Bytes()
	i := 0
	for ; i+8 <= len(data); i += 8 {
		x := binary.LittleEndian.Uint64(data[i:])
		letters := ((x + geFrom) ^ (x + gtLast)) & highBits
		binary.LittleEndian.PutUint64(out[i:], x^letters>>2)
	}
	for ; i < len(data); i++ {
		c := data[i]
		if c-from < 26 {
			c ^= 0x20
		}
		out[i] = c
	}
	return finish(arrow.BinaryTypes.String, n, nullsOf(mem, s), offBuf, dataBuf)
}

// runeCounts is the number of characters of each string of a, as int64s.
func runeCounts(mem memory.Allocator, a arrow.Array) (arrow.Array, error) {
	s, ok := a.(*array.String)
	if !ok {
		return nil, fmt.Errorf("expr: len of %s", typeName(a.DataType()))
	}
	n := s.Len()
	vals, out := fixedBuffer[int64](mem, n)
	if n == 0 {
		return finish(arrow.PrimitiveTypes.Int64, n, nullsOf(mem, s), vals), nil
	}
	offs := s.ValueOffsets()
	data := s.ValueBytes()
	base := offs[0]
	for i := range n {
		out[i] = int64(utf8.RuneCount(data[offs[i]-base : offs[i+1]-base]))
	}
	return finish(arrow.PrimitiveTypes.Int64, n, nullsOf(mem, s), vals), nil
}

// replaceStrings is each string of a with every old replaced by new: a
// itself when no string holds old.
func replaceStrings(mem memory.Allocator, a arrow.Array, old, new string) (arrow.Array, error) {
	s, ok := a.(*array.String)
	if !ok {
		return nil, fmt.Errorf("expr: replace of %s", typeName(a.DataType()))
	}
	if old != "" && !strings.Contains(unsafeString(s.ValueBytes()), old) {
		a.Retain()
		return a, nil
	}
	return eachString(mem, s, func(v string) string { return strings.ReplaceAll(v, old, new) }), nil
}

// sliceStrings is Slice(start, length) of each string of a: byte
// offsets when a's text is ASCII, characters counted otherwise.
func sliceStrings(mem memory.Allocator, a arrow.Array, start, length int) (arrow.Array, error) {
	s, ok := a.(*array.String)
	if !ok {
		return nil, fmt.Errorf("expr: slice of %s", typeName(a.DataType()))
	}
	// window is the characters [from, to) of a string of n
	window := func(n int) (int, int) {
		from := start
		if from < 0 {
			from += n
		}
		to := n
		if length >= 0 {
			to = min(from+length, n)
		}
		from = min(max(from, 0), n)
		return from, max(to, from)
	}
	if isASCII(s.ValueBytes()) {
		return eachString(mem, s, func(v string) string {
			from, to := window(len(v))
			return v[from:to]
		}), nil
	}
	return eachString(mem, s, func(v string) string {
		from, to := window(utf8.RuneCountInString(v))
		lo, hi := len(v), len(v)
		i := 0
		for at := range v {
			if i == from {
				lo = at
			}
			if i == to {
				hi = at
				break
			}
			i++
		}
		return v[min(lo, hi):hi]
	}), nil
}

// concatStrings is each row's strings of arrs one after the other, null
// where any is.
func concatStrings(mem memory.Allocator, arrs []arrow.Array) (arrow.Array, error) {
	ss := make([]*array.String, len(arrs))
	size := 0
	for i, a := range arrs {
		s, ok := a.(*array.String)
		if !ok {
			return nil, fmt.Errorf("expr: concat of %s", typeName(a.DataType()))
		}
		ss[i] = s
		size += len(s.ValueBytes())
	}
	n := ss[0].Len()
	b := array.NewStringBuilder(mem)
	defer b.Release()
	b.Reserve(n)
	b.ReserveData(size)
	var buf []byte
rows:
	for i := range n {
		buf = buf[:0]
		for _, s := range ss {
			if s.IsNull(i) {
				b.AppendNull()
				continue rows
			}
			buf = append(buf, s.Value(i)...)
		}
		b.BinaryBuilder.Append(buf)
	}
	return b.NewArray(), nil
}

// eachString is f of each string of s (nulls stay null).
func eachString(mem memory.Allocator, s *array.String, f func(string) string) arrow.Array {
	b := array.NewStringBuilder(mem)
	defer b.Release()
	b.Reserve(s.Len())
	b.ReserveData(len(s.ValueBytes()))
	for i := range s.Len() {
		if s.IsNull(i) {
			b.AppendNull()
			continue
		}
		b.Append(f(s.Value(i)))
	}
	return b.NewArray()
}

// unsafeString is b as a string, without a copy (for reading only).
func unsafeString(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }
