package data

import (
	"fmt"
	"math"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// The build side's output columns in row layout (DuckDB keeps its join
// build side in rows too): the values of a build row side by side, each
// widened to 64 bits, a string column of few distinct values as its code
// in a small dictionary. A probe's matches land anywhere in the build
// side; reading a row's values from one place costs one cache miss per
// match instead of one per column (two for a string). Columns with nulls,
// and strings of many values, are taken column by column instead.

// payloadKind is how a column is stored in a row.
type payloadKind uint8

const (
	payInt    payloadKind = iota // a signed integer, sign-extended
	payUint                      // an unsigned integer
	payFloat                     // a float64's bits, or a float32's as float64
	payBool                      // 0 or 1
	payString                    // a code in dict
)

// payload is the row layout of some of the build record's columns.
type payload struct {
	cols   []int // the record's columns, in the layout's order
	kinds  []payloadKind
	types  []arrow.DataType
	dicts  []*array.String // payString: the distinct values
	stride int
	rows   []uint64 // row r's values at rows[r*stride:]
}

// maxDictValues bounds the distinct values of a string column kept as
// codes.
const maxDictValues = 1 << 16

// newPayload lays out the columns cols of rec (those without nulls that
// fit), nil when none does.
func newPayload(rec arrow.RecordBatch, cols []int) *payload {
	p := &payload{}
	n := int(rec.NumRows())
	var codes [][]uint64
	for _, j := range cols {
		c := rec.Column(j)
		if c.NullN() > 0 {
			continue
		}
		var vals []uint64
		var kind payloadKind
		var dict *array.String
		switch a := c.(type) {
		case *array.Int64:
			kind, vals = payInt, widen(a.Int64Values(), func(v int64) uint64 { return uint64(v) })
		case *array.Int32:
			kind, vals = payInt, widen(a.Int32Values(), func(v int32) uint64 { return uint64(int64(v)) })
		case *array.Int16:
			kind, vals = payInt, widen(a.Int16Values(), func(v int16) uint64 { return uint64(int64(v)) })
		case *array.Int8:
			kind, vals = payInt, widen(a.Int8Values(), func(v int8) uint64 { return uint64(int64(v)) })
		case *array.Uint64:
			kind, vals = payUint, widen(a.Uint64Values(), func(v uint64) uint64 { return v })
		case *array.Uint32:
			kind, vals = payUint, widen(a.Uint32Values(), func(v uint32) uint64 { return uint64(v) })
		case *array.Uint16:
			kind, vals = payUint, widen(a.Uint16Values(), func(v uint16) uint64 { return uint64(v) })
		case *array.Uint8:
			kind, vals = payUint, widen(a.Uint8Values(), func(v uint8) uint64 { return uint64(v) })
		case *array.Float64:
			kind, vals = payFloat, widen(a.Float64Values(), math.Float64bits)
		case *array.Float32:
			kind, vals = payFloat, widen(a.Float32Values(), func(v float32) uint64 { return math.Float64bits(float64(v)) })
		case *array.Boolean:
			kind, vals = payBool, make([]uint64, n)
			for i := range n {
				if a.Value(i) {
					vals[i] = 1
				}
			}
		case *array.String:
			var ok bool
			if vals, dict, ok = dictCodes(a); !ok {
				continue
			}
			kind = payString
		default:
			continue
		}
		p.cols, p.kinds, p.types, p.dicts = append(p.cols, j), append(p.kinds, kind), append(p.types, c.DataType()), append(p.dicts, dict)
		codes = append(codes, vals)
	}
	if len(p.cols) == 0 {
		return nil
	}
	p.stride = len(p.cols)
	p.rows = make([]uint64, n*p.stride)
	for c, vals := range codes {
		for r, v := range vals {
			p.rows[r*p.stride+c] = v
		}
	}
	return p
}

func widen[T any](vs []T, f func(T) uint64) []uint64 {
	out := make([]uint64, len(vs))
	for i, v := range vs {
		out[i] = f(v)
	}
	return out
}

// dictCodes codes a's values by a dictionary of its distinct values,
// false when it has too many.
func dictCodes(a *array.String) ([]uint64, *array.String, bool) {
	seen := map[string]uint64{}
	codes := make([]uint64, a.Len())
	b := array.NewStringBuilder(memory.DefaultAllocator)
	defer b.Release()
	for i := range codes {
		v := a.Value(i)
		c, ok := seen[v]
		if !ok {
			if len(seen) >= maxDictValues || len(seen) > a.Len()/4+16 {
				return nil, nil, false
			}
			c = uint64(len(seen))
			seen[v] = c
			b.Append(v)
		}
		codes[i] = c
	}
	return codes, b.NewStringArray(), true
}

// has says where column j of the record is in the layout (-1: not).
func (p *payload) has(j int) int {
	for c, pj := range p.cols {
		if pj == j {
			return c
		}
	}
	return -1
}

// gather makes the layout's columns for rows ri (null where ri[k] < 0):
// one pass over the matched rows, then one per column to make it.
func (p *payload) gather(mem memory.Allocator, ri []int32) []arrow.Array {
	n := len(ri)
	bufs := make([]*memory.Buffer, p.stride)
	outs := make([][]uint64, p.stride)
	for c := range bufs {
		bufs[c] = memory.NewResizableBuffer(mem)
		bufs[c].Resize(n * 8)
		outs[c] = arrow.GetData[uint64](bufs[c].Bytes())[:n]
	}
	var valid *memory.Buffer
	nulls := 0
	for k, r := range ri {
		if r < 0 {
			if valid == nil {
				valid = memory.NewResizableBuffer(mem)
				valid.Resize(int(bitutil.BytesForBits(int64(n))))
				bitutil.SetBitsTo(valid.Bytes(), 0, int64(n), true)
			}
			bitutil.ClearBit(valid.Bytes(), k)
			nulls++
			for c := range outs {
				outs[c][k] = 0
			}
			continue
		}
		row := p.rows[int(r)*p.stride : int(r+1)*p.stride]
		for c, v := range row {
			outs[c][k] = v
		}
	}
	arrs := make([]arrow.Array, p.stride)
	for c := range arrs {
		arrs[c] = p.column(mem, c, bufs[c], outs[c], valid, nulls)
	}
	if valid != nil {
		valid.Release()
	}
	return arrs
}

// column makes layout column c's array from its 64-bit values (held in
// buf, which it takes).
func (p *payload) column(mem memory.Allocator, c int, buf *memory.Buffer, vals []uint64, valid *memory.Buffer, nulls int) arrow.Array {
	n := len(vals)
	t := p.types[c]
	mk := func(bufs ...*memory.Buffer) arrow.Array {
		if valid != nil {
			valid.Retain()
		}
		d := array.NewData(t, n, append([]*memory.Buffer{valid}, bufs...), nil, nulls, 0)
		for _, b := range bufs {
			b.Release()
		}
		defer d.Release()
		return array.MakeFromData(d)
	}
	switch t.ID() {
	case arrow.INT64, arrow.UINT64, arrow.FLOAT64:
		return mk(buf) // the 64-bit values are the column
	case arrow.INT32:
		return mk(narrow[int32](mem, buf, vals, func(v uint64) int32 { return int32(int64(v)) }))
	case arrow.INT16:
		return mk(narrow[int16](mem, buf, vals, func(v uint64) int16 { return int16(int64(v)) }))
	case arrow.INT8:
		return mk(narrow[int8](mem, buf, vals, func(v uint64) int8 { return int8(int64(v)) }))
	case arrow.UINT32:
		return mk(narrow[uint32](mem, buf, vals, func(v uint64) uint32 { return uint32(v) }))
	case arrow.UINT16:
		return mk(narrow[uint16](mem, buf, vals, func(v uint64) uint16 { return uint16(v) }))
	case arrow.UINT8:
		return mk(narrow[uint8](mem, buf, vals, func(v uint64) uint8 { return uint8(v) }))
	case arrow.FLOAT32:
		return mk(narrow[float32](mem, buf, vals, func(v uint64) float32 { return float32(math.Float64frombits(v)) }))
	case arrow.BOOL:
		bits := memory.NewResizableBuffer(mem)
		bits.Resize(int(bitutil.BytesForBits(int64(n))))
		bb := bits.Bytes()
		clear(bb)
		for k, v := range vals {
			if v != 0 {
				bitutil.SetBit(bb, k)
			}
		}
		buf.Release()
		return mk(bits)
	case arrow.STRING:
		dict := p.dicts[c]
		offs, data := dict.ValueOffsets(), dict.ValueBytes()
		size := 0
		for k, v := range vals {
			if valid == nil || bitutil.BitIsSet(valid.Bytes(), k) {
				size += int(offs[v+1] - offs[v])
			}
		}
		ob := memory.NewResizableBuffer(mem)
		ob.Resize((n + 1) * 4)
		o := arrow.GetData[int32](ob.Bytes())[:n+1]
		db := memory.NewResizableBuffer(mem)
		db.Resize(size)
		dst := db.Bytes()
		at := int32(0)
		for k, v := range vals {
			o[k] = at
			if valid == nil || bitutil.BitIsSet(valid.Bytes(), k) {
				at += int32(copy(dst[at:], data[offs[v]-offs[0]:offs[v+1]-offs[0]]))
			}
		}
		o[n] = at
		buf.Release()
		return mk(ob, db)
	}
	panic(fmt.Sprintf("data: a join payload of type %s", t)) // newPayload lays out only the types above
}

// narrow converts 64-bit values into a buffer of T (releasing buf).
func narrow[T int32 | int16 | int8 | uint32 | uint16 | uint8 | float32](mem memory.Allocator, buf *memory.Buffer, vals []uint64, f func(uint64) T) *memory.Buffer {
	out, o := fixedOf[T](mem, len(vals))
	for k, v := range vals {
		o[k] = f(v)
	}
	buf.Release()
	return out
}

func fixedOf[T int32 | int16 | int8 | uint32 | uint16 | uint8 | float32](mem memory.Allocator, n int) (*memory.Buffer, []T) {
	b := memory.NewResizableBuffer(mem)
	var zero T
	b.Resize(n * int(unsafe.Sizeof(zero)))
	return b, arrow.GetData[T](b.Bytes())[:n]
}
