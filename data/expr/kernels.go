package expr

import (
	"bytes"
	"fmt"
	"math"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// The kernels arrow-go's compute package lacks: an integer and float
// remainder, fill_null, conditionals, and string predicates. Each is one
// loop over whole arrays (typed slices of their buffers), as Arrow's own
// kernels are; operands are arrays of one length, of the types Bind
// gave them.

// fixedBuffer allocates n values of T.
func fixedBuffer[T arrow.FixedWidthType](mem memory.Allocator, n int) (*memory.Buffer, []T) {
	buf := memory.NewResizableBuffer(mem)
	var zero T
	buf.Resize(n * int(unsafe.Sizeof(zero)))
	return buf, arrow.GetData[T](buf.Bytes())[:n]
}

// validityOf copies a's validity into a fresh bitmap of a.Len() bits
// (all set when a has no nulls).
func validityOf(mem memory.Allocator, a arrow.Array) *memory.Buffer {
	n := a.Len()
	buf := memory.NewResizableBuffer(mem)
	buf.Resize(int(bitutil.BytesForBits(int64(n))))
	out := buf.Bytes()
	if bm := a.NullBitmapBytes(); a.NullN() > 0 && len(bm) > 0 {
		bitutil.CopyBitmap(bm, a.Data().Offset(), n, out, 0)
	} else {
		bitutil.SetBitsTo(out, 0, int64(n), true)
	}
	return buf
}

// andValidity narrows bitmap out (n bits) to the rows a has values for.
func andValidity(out []byte, a arrow.Array) {
	if bm := a.NullBitmapBytes(); a.NullN() > 0 && len(bm) > 0 {
		bitutil.BitmapAnd(out, bm, 0, int64(a.Data().Offset()), out, 0, int64(a.Len()))
	}
}

// nullsOf is a copy of a's validity for a result of one value a row of
// a, or nil when a has no nulls (finish takes nil for none).
func nullsOf(mem memory.Allocator, a arrow.Array) *memory.Buffer {
	if a.NullN() == 0 {
		return nil
	}
	return validityOf(mem, a)
}

// finish makes an array of type t from values and a validity bitmap
// (nil: no nulls).
func finish(t arrow.DataType, n int, valid, values *memory.Buffer, extra ...*memory.Buffer) arrow.Array {
	nulls := 0
	if valid != nil {
		nulls = n - bitutil.CountSetBits(valid.Bytes(), 0, n)
	}
	if nulls == 0 && valid != nil {
		valid.Release()
		valid = nil
	}
	bufs := append([]*memory.Buffer{valid, values}, extra...)
	d := array.NewData(t, n, bufs, nil, nulls, 0)
	for _, b := range bufs {
		if b != nil {
			b.Release()
		}
	}
	defer d.Release()
	return array.MakeFromData(d)
}

// modArrays is the remainder a % b (Go's: the sign of a); an integer
// remainder by zero is null, a float one NaN.
func modArrays(mem memory.Allocator, a, b arrow.Array) (arrow.Array, error) {
	switch a.DataType().ID() {
	case arrow.INT8:
		return modInts[int8](mem, a, b), nil
	case arrow.INT16:
		return modInts[int16](mem, a, b), nil
	case arrow.INT32:
		return modInts[int32](mem, a, b), nil
	case arrow.INT64:
		return modInts[int64](mem, a, b), nil
	case arrow.UINT8:
		return modInts[uint8](mem, a, b), nil
	case arrow.UINT16:
		return modInts[uint16](mem, a, b), nil
	case arrow.UINT32:
		return modInts[uint32](mem, a, b), nil
	case arrow.UINT64:
		return modInts[uint64](mem, a, b), nil
	case arrow.FLOAT32:
		return modFloats[float32](mem, a, b), nil
	case arrow.FLOAT64:
		return modFloats[float64](mem, a, b), nil
	}
	return nil, fmt.Errorf("expr: mod of %s", typeName(a.DataType()))
}

func modInts[T int8 | int16 | int32 | int64 | uint8 | uint16 | uint32 | uint64](mem memory.Allocator, a, b arrow.Array) arrow.Array {
	n := a.Len()
	x, y := arrow.GetValues[T](a.Data(), 1), arrow.GetValues[T](b.Data(), 1)
	valid := validityOf(mem, a)
	andValidity(valid.Bytes(), b)
	vals, out := fixedBuffer[T](mem, n)
	vb := valid.Bytes()
	for i := range n {
		if d := y[i]; d != 0 {
			out[i] = x[i] % d // MinInt % -1 is 0 in Go, no panic
		} else {
			out[i] = 0
			bitutil.ClearBit(vb, i)
		}
	}
	return finish(a.DataType(), n, valid, vals)
}

func modFloats[T float32 | float64](mem memory.Allocator, a, b arrow.Array) arrow.Array {
	n := a.Len()
	x, y := arrow.GetValues[T](a.Data(), 1), arrow.GetValues[T](b.Data(), 1)
	valid := validityOf(mem, a)
	andValidity(valid.Bytes(), b)
	vals, out := fixedBuffer[T](mem, n)
	for i := range n {
		out[i] = T(math.Mod(float64(x[i]), float64(y[i])))
	}
	return finish(a.DataType(), n, valid, vals)
}

// fillNull is a where it has a value, else b.
func fillNull(mem memory.Allocator, a, b arrow.Array) (arrow.Array, error) {
	n := a.Len()
	src := make([]int32, n)
	for i := range n {
		if a.IsValid(i) {
			src[i] = 0
		} else {
			src[i] = 1
		}
	}
	return gather(mem, a.DataType(), []arrow.Array{a, b}, src)
}

// caseWhen evaluates a conditional: arrs is cond, value, cond, value,
// ..., then the value otherwise when hasElse. A row takes the value of
// its first true condition (a null condition is not true), else the
// otherwise value, else null.
func caseWhen(mem memory.Allocator, t arrow.DataType, arrs []arrow.Array, hasElse bool) (arrow.Array, error) {
	pairs := len(arrs) / 2
	if len(arrs) == 0 {
		return nil, fmt.Errorf("expr: a conditional without a branch")
	}
	n := arrs[0].Len()
	src := make([]int32, n)
	els := int32(-1)
	if hasElse {
		els = int32(len(arrs) - 1)
	}
	for i := range src {
		src[i] = els
	}
	for k := pairs - 1; k >= 0; k-- {
		c := arrs[2*k].(*array.Boolean)
		for i := range n {
			if c.IsValid(i) && c.Value(i) {
				src[i] = int32(2*k + 1)
			}
		}
	}
	return gather(mem, t, arrs, src)
}

// gather makes an array of type t whose row i is row i of arrs[src[i]]
// (null when src[i] < 0).
func gather(mem memory.Allocator, t arrow.DataType, arrs []arrow.Array, src []int32) (arrow.Array, error) {
	switch t.ID() {
	case arrow.INT8:
		return gatherFixed[int8](mem, t, arrs, src), nil
	case arrow.INT16:
		return gatherFixed[int16](mem, t, arrs, src), nil
	case arrow.INT32:
		return gatherFixed[int32](mem, t, arrs, src), nil
	case arrow.INT64:
		return gatherFixed[int64](mem, t, arrs, src), nil
	case arrow.UINT8:
		return gatherFixed[uint8](mem, t, arrs, src), nil
	case arrow.UINT16:
		return gatherFixed[uint16](mem, t, arrs, src), nil
	case arrow.UINT32:
		return gatherFixed[uint32](mem, t, arrs, src), nil
	case arrow.UINT64:
		return gatherFixed[uint64](mem, t, arrs, src), nil
	case arrow.FLOAT32:
		return gatherFixed[float32](mem, t, arrs, src), nil
	case arrow.FLOAT64:
		return gatherFixed[float64](mem, t, arrs, src), nil
	case arrow.TIMESTAMP, arrow.DATE64:
		return gatherFixed[int64](mem, t, arrs, src), nil
	case arrow.DATE32:
		return gatherFixed[int32](mem, t, arrs, src), nil
	case arrow.BOOL:
		b := array.NewBooleanBuilder(mem)
		defer b.Release()
		b.Reserve(len(src))
		for i, s := range src {
			if s < 0 || arrs[s].IsNull(i) {
				b.UnsafeAppendBoolToBitmap(false)
				continue
			}
			b.UnsafeAppend(arrs[s].(*array.Boolean).Value(i))
		}
		return b.NewArray(), nil
	case arrow.STRING:
		var size int
		for i, s := range src {
			if s >= 0 && arrs[s].IsValid(i) {
				size += arrs[s].(*array.String).ValueLen(i)
			}
		}
		b := array.NewStringBuilder(mem)
		defer b.Release()
		b.Reserve(len(src))
		b.ReserveData(size)
		for i, s := range src {
			if s < 0 || arrs[s].IsNull(i) {
				b.AppendNull()
				continue
			}
			b.Append(arrs[s].(*array.String).Value(i))
		}
		return b.NewArray(), nil
	}
	return nil, fmt.Errorf("expr: values of type %s", typeName(t))
}

func gatherFixed[T int8 | int16 | int32 | int64 | uint8 | uint16 | uint32 | uint64 | float32 | float64](mem memory.Allocator, t arrow.DataType, arrs []arrow.Array, src []int32) arrow.Array {
	n := len(src)
	vals := make([][]T, len(arrs))
	for k, a := range arrs {
		if arrow.TypeEqual(a.DataType(), t) {
			vals[k] = arrow.GetValues[T](a.Data(), 1)
		}
	}
	valid := memory.NewResizableBuffer(mem)
	valid.Resize(int(bitutil.BytesForBits(int64(n))))
	vb := valid.Bytes()
	buf, out := fixedBuffer[T](mem, n)
	for i, s := range src {
		if s < 0 || arrs[s].IsNull(i) {
			out[i] = 0
			bitutil.ClearBit(vb, i)
			continue
		}
		out[i] = vals[s][i]
		bitutil.SetBit(vb, i)
	}
	return finish(t, n, valid, buf)
}

// matchStrings is a string predicate (contains, starts_with,
// ends_with) of pattern over a's values; null where a is.
func matchStrings(mem memory.Allocator, op string, a arrow.Array, pattern string) (arrow.Array, error) {
	s, ok := a.(*array.String)
	if !ok {
		return nil, fmt.Errorf("expr: %s of %s", op, typeName(a.DataType()))
	}
	n := s.Len()
	p := []byte(pattern)
	match := bytes.Contains
	switch op {
	case opStartsWith:
		match = bytes.HasPrefix
	case opEndsWith:
		match = bytes.HasSuffix
	}
	valid := validityOf(mem, a)
	buf := memory.NewResizableBuffer(mem)
	buf.Resize(int(bitutil.BytesForBits(int64(n))))
	out := buf.Bytes()
	clear(out)
	offs := s.ValueOffsets()
	data := s.ValueBytes()
	base := offs[0]
	for i := range n {
		if match(data[offs[i]-base:offs[i+1]-base], p) {
			bitutil.SetBit(out, i)
		}
	}
	return finish(arrow.FixedWidthTypes.Boolean, n, valid, buf), nil
}

// boolToNumber converts bools to 0 and 1 of numeric type t. Arrow's
// cast kernel reads a sliced boolean array from its buffer's start
// (arrow-go v18.8.0 ignores the offset), so bools are converted here.
func boolToNumber(mem memory.Allocator, a *array.Boolean, t arrow.DataType) (arrow.Array, error) {
	switch t.ID() {
	case arrow.INT8:
		return boolsAs[int8](mem, a, t), nil
	case arrow.INT16:
		return boolsAs[int16](mem, a, t), nil
	case arrow.INT32:
		return boolsAs[int32](mem, a, t), nil
	case arrow.INT64:
		return boolsAs[int64](mem, a, t), nil
	case arrow.UINT8:
		return boolsAs[uint8](mem, a, t), nil
	case arrow.UINT16:
		return boolsAs[uint16](mem, a, t), nil
	case arrow.UINT32:
		return boolsAs[uint32](mem, a, t), nil
	case arrow.UINT64:
		return boolsAs[uint64](mem, a, t), nil
	case arrow.FLOAT32:
		return boolsAs[float32](mem, a, t), nil
	case arrow.FLOAT64:
		return boolsAs[float64](mem, a, t), nil
	}
	return nil, fmt.Errorf("expr: bool to %s", typeName(t))
}

func boolsAs[T int8 | int16 | int32 | int64 | uint8 | uint16 | uint32 | uint64 | float32 | float64](mem memory.Allocator, a *array.Boolean, t arrow.DataType) arrow.Array {
	n := a.Len()
	buf, out := fixedBuffer[T](mem, n)
	for i := range n {
		if a.Value(i) {
			out[i] = 1
		} else {
			out[i] = 0
		}
	}
	return finish(t, n, validityOf(mem, a), buf)
}

// isNotNull is a's validity as bools (never null).
func isNotNull(mem memory.Allocator, a arrow.Array) arrow.Array {
	n := a.Len()
	all := memory.NewResizableBuffer(mem)
	all.Resize(int(bitutil.BytesForBits(int64(n))))
	bitutil.SetBitsTo(all.Bytes(), 0, int64(n), true)
	return finish(arrow.FixedWidthTypes.Boolean, n, all, validityOf(mem, a))
}
