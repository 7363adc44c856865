package data

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// The kernels of Join: a hash table over the build side's key columns
// (a chained table of row numbers, DuckDB's layout), a probe that pairs
// each probe row with its matches, and the output made of those pairs
// with Arrow's take kernel. Keys hash the same in every process
// (hashKeys), so both sides of a shuffled join cut their rows into the
// same parts. A key with a null in it matches nothing (SQL's rule); NaN
// matches NaN and -0 matches 0, as GroupBy groups them.

// hashKeys hashes each row's key values (one loop per column over its
// typed values); valid[i] is false for a row with a null key.
func hashKeys(cols []arrow.Array) ([]uint64, []bool, error) {
	if len(cols) == 0 {
		return nil, nil, fmt.Errorf("data: a join without keys")
	}
	n := cols[0].Len()
	h := make([]uint64, n)
	var valid []bool
	for k, c := range cols {
		if c.NullN() > 0 {
			if valid == nil {
				valid = make([]bool, n)
				for i := range valid {
					valid[i] = true
				}
			}
			for i := range n {
				if c.IsNull(i) {
					valid[i] = false
				}
			}
		}
		seed := uint64(k+1) * 0x9e3779b97f4a7c15
		switch a := intKey(c).(type) {
		case *array.Int64:
			hashInts(h, a.Int64Values(), seed)
		case *array.Int32:
			hashInts(h, a.Int32Values(), seed)
		case *array.Int16:
			hashInts(h, a.Int16Values(), seed)
		case *array.Int8:
			hashInts(h, a.Int8Values(), seed)
		case *array.Uint64:
			hashInts(h, a.Uint64Values(), seed)
		case *array.Uint32:
			hashInts(h, a.Uint32Values(), seed)
		case *array.Uint16:
			hashInts(h, a.Uint16Values(), seed)
		case *array.Uint8:
			hashInts(h, a.Uint8Values(), seed)
		case *array.Float64:
			for i, v := range a.Float64Values() {
				h[i] = mix64(h[i] ^ floatBits(v) ^ seed)
			}
		case *array.Float32:
			for i, v := range a.Float32Values() {
				h[i] = mix64(h[i] ^ floatBits(float64(v)) ^ seed)
			}
		case *array.String:
			offs, data := a.ValueOffsets(), a.ValueBytes()
			for i := range n {
				h[i] = mix64(h[i] ^ hashBytes(data[offs[i]-offs[0]:offs[i+1]-offs[0]], seed))
			}
		case *array.Boolean:
			for i := range n {
				v := uint64(0)
				if a.Value(i) {
					v = 1
				}
				h[i] = mix64(h[i] ^ v ^ seed)
			}
		default:
			return nil, nil, fmt.Errorf("data: join keys of type %s", c.DataType())
		}
	}
	return h, valid, nil
}

func hashInts[T int64 | int32 | int16 | int8 | uint64 | uint32 | uint16 | uint8](h []uint64, vs []T, seed uint64) {
	for i, v := range vs {
		h[i] = mix64(h[i] ^ uint64(v) ^ seed)
	}
}

// mix64 is MurmurHash3's 64-bit finalizer.
func mix64(h uint64) uint64 {
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	h *= 0xc4ceb9fe1a85ec53
	h ^= h >> 33
	return h
}

// hashBytes hashes b eight bytes at a time.
func hashBytes(b []byte, seed uint64) uint64 {
	h := seed ^ uint64(len(b))*0x87c37b91114253d5
	for len(b) >= 8 {
		h = bits.RotateLeft64(h^binary.LittleEndian.Uint64(b)*0x4cf5ad432745937f, 31) * 0x52dce729
		b = b[8:]
	}
	var tail uint64
	for i, c := range b {
		tail |= uint64(c) << (8 * i)
	}
	return mix64(h ^ tail)
}

// keyEqual compares row i of a probe key column with row j of a build
// key column (of the same type, neither null).
func keyEqual(p, b arrow.Array) (func(i, j int) bool, error) {
	if !arrow.TypeEqual(p.DataType(), b.DataType()) {
		return nil, fmt.Errorf("data: join keys of types %s and %s", p.DataType(), b.DataType())
	}
	p, b = intKey(p), intKey(b)
	switch x := p.(type) {
	case *array.Int64:
		return sliceEq(x.Int64Values(), b.(*array.Int64).Int64Values()), nil
	case *array.Int32:
		return sliceEq(x.Int32Values(), b.(*array.Int32).Int32Values()), nil
	case *array.Int16:
		return sliceEq(x.Int16Values(), b.(*array.Int16).Int16Values()), nil
	case *array.Int8:
		return sliceEq(x.Int8Values(), b.(*array.Int8).Int8Values()), nil
	case *array.Uint64:
		return sliceEq(x.Uint64Values(), b.(*array.Uint64).Uint64Values()), nil
	case *array.Uint32:
		return sliceEq(x.Uint32Values(), b.(*array.Uint32).Uint32Values()), nil
	case *array.Uint16:
		return sliceEq(x.Uint16Values(), b.(*array.Uint16).Uint16Values()), nil
	case *array.Uint8:
		return sliceEq(x.Uint8Values(), b.(*array.Uint8).Uint8Values()), nil
	case *array.Float64:
		bv := b.(*array.Float64).Float64Values()
		pv := x.Float64Values()
		return func(i, j int) bool { return floatBits(pv[i]) == floatBits(bv[j]) }, nil
	case *array.Float32:
		bv := b.(*array.Float32).Float32Values()
		pv := x.Float32Values()
		return func(i, j int) bool { return floatBits(float64(pv[i])) == floatBits(float64(bv[j])) }, nil
	case *array.String:
		bs := b.(*array.String)
		return func(i, j int) bool { return x.Value(i) == bs.Value(j) }, nil
	case *array.Boolean:
		bb := b.(*array.Boolean)
		return func(i, j int) bool { return x.Value(i) == bb.Value(j) }, nil
	}
	return nil, fmt.Errorf("data: join keys of type %s", p.DataType())
}

func sliceEq[T comparable](p, b []T) func(i, j int) bool {
	return func(i, j int) bool { return p[i] == b[j] }
}

// joinTable indexes the build rows by their keys. One integer key whose
// values span a range not much wider than the rows is a perfect hash
// (dense: a row per value, DuckDB's perfect hash join); one int64 key
// otherwise an open-addressing table of (key, first row) slots, one
// cache line per probe; any other keys a chained table of row numbers
// by hash, keys compared on a hash's match. next chains the rows of
// equal keys (-1 ends a chain).
type joinTable struct {
	rec   arrow.RecordBatch // the build rows
	keys  []arrow.Array
	next  []int32
	dups  bool // some key is on several rows: follow next
	bytes int64
	// dense: rows of key value lo+i start at dense[i]; identity: row i's
	// key is lo+i (no lookup)
	dense    []int32
	lo       int64
	identity bool
	// the output columns in row layout, made by the first output
	payOnce sync.Once
	pay     *payload
	// int64 keys: slots by hash
	slots []slot
	// any keys: buckets by hash, rows' hashes
	hashes  []uint64
	buckets []int32
	mask    uint64
}

type slot struct {
	key int64
	row int32 // first row of the key; -1: an empty slot
	_   int32
}

// integerValues is an integer key column's values as int64 (nil for
// another type).
func integerValues(a arrow.Array) []int64 {
	switch c := intKey(a).(type) {
	case *array.Int64:
		return c.Int64Values()
	case *array.Int32:
		out := make([]int64, c.Len())
		for i, v := range c.Int32Values() {
			out[i] = int64(v)
		}
		return out
	}
	return nil
}

// buildTable indexes rec's rows by the columns keyIdx; rows with a null
// key are left out (they match nothing). It retains rec.
func buildTable(rec arrow.RecordBatch, keyIdx []int) (*joinTable, error) {
	if rec.NumRows() >= math.MaxInt32 {
		return nil, fmt.Errorf("data: a join's build side of %d rows in one part: more parts are needed", rec.NumRows())
	}
	t := &joinTable{rec: rec}
	for _, j := range keyIdx {
		t.keys = append(t.keys, rec.Column(j))
	}
	n := int(rec.NumRows())
	t.next = make([]int32, n)
	if len(t.keys) == 1 {
		if vs := integerValues(t.keys[0]); vs != nil {
			t.buildInts(vs, t.keys[0])
			rec.Retain()
			t.bytes = recordBytes(rec) + int64(n)*4 + int64(len(t.dense))*4 + int64(len(t.slots))*16
			return t, nil
		}
	}
	h, valid, err := hashKeys(t.keys)
	if err != nil {
		return nil, err
	}
	size := 1
	for size < 2*n {
		size <<= 1
	}
	t.hashes, t.mask = h, uint64(size-1)
	t.buckets = make([]int32, size)
	for i := range t.buckets {
		t.buckets[i] = -1
	}
	for i := n - 1; i >= 0; i-- { // chains in row order
		if valid != nil && !valid[i] {
			t.next[i] = -1
			continue
		}
		b := h[i] & t.mask
		t.next[i] = t.buckets[b]
		t.buckets[b] = int32(i)
	}
	rec.Retain()
	t.bytes = recordBytes(rec) + int64(n)*12 + int64(size)*4
	return t, nil
}

// buildInts indexes one integer key: densely when its values span at
// most four times the rows, else by open addressing.
func (t *joinTable) buildInts(vs []int64, col arrow.Array) {
	n := len(vs)
	nulls := col.NullN() > 0
	lo, hi := int64(math.MaxInt64), int64(math.MinInt64)
	for i, v := range vs {
		if nulls && col.IsNull(i) {
			continue
		}
		lo, hi = min(lo, v), max(hi, v)
	}
	if hi >= lo && uint64(hi-lo) < uint64(4*n+1024) {
		t.lo = lo
		t.dense = make([]int32, hi-lo+1)
		for i := range t.dense {
			t.dense[i] = -1
		}
		t.identity = !nulls && int(hi-lo) == n-1
		for i := n - 1; i >= 0; i-- {
			if nulls && col.IsNull(i) {
				t.next[i] = -1
				continue
			}
			d := vs[i] - lo
			t.next[i] = t.dense[d]
			t.dups = t.dups || t.dense[d] >= 0
			t.dense[d] = int32(i)
			t.identity = t.identity && d == int64(i)
		}
		return
	}
	size := 1
	for size < 2*n {
		size <<= 1
	}
	t.mask = uint64(size - 1)
	t.slots = make([]slot, size)
	for i := range t.slots {
		t.slots[i].row = -1
	}
	for i := n - 1; i >= 0; i-- {
		t.next[i] = -1
		if nulls && col.IsNull(i) {
			continue
		}
		v := vs[i]
		for s := mix64(uint64(v)) & t.mask; ; s = (s + 1) & t.mask {
			sl := &t.slots[s]
			if sl.row < 0 {
				sl.key, sl.row = v, int32(i)
				break
			}
			if sl.key == v {
				t.next[i], sl.row = sl.row, int32(i)
				t.dups = true
				break
			}
		}
	}
}

// first is the first build row of key v (one integer key), -1 for none.
func (t *joinTable) first(v int64) int32 {
	if t.identity {
		d := uint64(v - t.lo)
		if d >= uint64(len(t.dense)) {
			return -1
		}
		return int32(d)
	}
	if t.dense != nil {
		d := uint64(v - t.lo)
		if d >= uint64(len(t.dense)) {
			return -1
		}
		return t.dense[d]
	}
	for s := mix64(uint64(v)) & t.mask; ; s = (s + 1) & t.mask {
		sl := &t.slots[s]
		if sl.row < 0 || sl.key == v {
			return sl.row
		}
	}
}

// release lets go of the table's rows (its payload is Go memory, the
// garbage collector's).
func (t *joinTable) release() { t.rec.Release() }

// payloadOf is t's right output columns (those of cols) in row layout,
// made once.
func (t *joinTable) payloadOf(cols []int) *payload {
	t.payOnce.Do(func() { t.pay = newPayload(t.rec, cols) })
	return t.pay
}

// probe pairs each probe row with the build rows of equal keys: pairs
// in probe row order (and build row order within a probe row). A probe
// row without a match gets one pair with build -1 when keepUnmatched.
// matchedBuild, if not nil, is set for every build row matched.
func (t *joinTable) probe(keys []arrow.Array, keepUnmatched bool, matchedBuild []bool) (pi, bi []int32, matched []bool, err error) {
	n := keys[0].Len()
	matched = make([]bool, n)
	pi = make([]int32, 0, n)
	bi = make([]int32, 0, n)
	emit := func(i int, j int32) {
		pi, bi = append(pi, int32(i)), append(bi, j)
		matched[i] = true
		if matchedBuild != nil {
			matchedBuild[j] = true
		}
	}
	if t.dense != nil || t.slots != nil {
		if !arrow.TypeEqual(keys[0].DataType(), t.keys[0].DataType()) {
			return nil, nil, nil, fmt.Errorf("data: join keys of types %s and %s", keys[0].DataType(), t.keys[0].DataType())
		}
		vs := integerValues(keys[0])
		nulls := keys[0].NullN() > 0
		for i, v := range vs {
			if !nulls || keys[0].IsValid(i) {
				j := t.first(v)
				if j >= 0 && !t.dups { // one row per key: no chain to follow
					emit(i, j)
				} else {
					for ; j >= 0; j = t.next[j] {
						emit(i, j)
					}
				}
			}
			if keepUnmatched && !matched[i] {
				pi, bi = append(pi, int32(i)), append(bi, -1)
			}
		}
		return pi, bi, matched, nil
	}
	h, valid, err := hashKeys(keys)
	if err != nil {
		return nil, nil, nil, err
	}
	eqs := make([]func(i, j int) bool, len(keys))
	for k := range keys {
		if eqs[k], err = keyEqual(keys[k], t.keys[k]); err != nil {
			return nil, nil, nil, err
		}
	}
	for i := range n {
		if valid == nil || valid[i] {
			for j := t.buckets[h[i]&t.mask]; j >= 0; j = t.next[j] {
				if t.hashes[j] == h[i] && allEqual(eqs, i, int(j)) {
					emit(i, j)
				}
			}
		}
		if keepUnmatched && !matched[i] {
			pi, bi = append(pi, int32(i)), append(bi, -1)
		}
	}
	return pi, bi, matched, nil
}

func allEqual(eqs []func(i, j int) bool, i, j int) bool {
	for _, eq := range eqs {
		if !eq(i, j) {
			return false
		}
	}
	return true
}

// indexArray is rows as an int32 array, a negative row a null.
func indexArray(rows []int32) arrow.Array {
	b := array.NewInt32Builder(memory.DefaultAllocator)
	defer b.Release()
	b.Reserve(len(rows))
	for _, r := range rows {
		if r < 0 {
			b.UnsafeAppendBoolToBitmap(false)
		} else {
			b.UnsafeAppend(r)
		}
	}
	return b.NewArray()
}

// boolMask is flags (negated when not) as a boolean array.
func boolMask(flags []bool, want bool) *array.Boolean {
	b := array.NewBooleanBuilder(memory.DefaultAllocator)
	defer b.Release()
	b.Reserve(len(flags))
	for _, f := range flags {
		b.UnsafeAppend(f == want)
	}
	return b.NewBooleanArray()
}

// joinOutput assembles joined rows from index pairs: row k takes left
// row li[k] (null columns when negative) and right row ri[k] of t. The
// output is left's columns, then right's but its keys; the key columns
// take the right's values where the left has none (a right or full
// join's unmatched right rows). Left columns are the left's own when
// li is every left row in order; right columns come from t's row
// layout where it has them.
func joinOutput(ctx context.Context, js *joinSpec, left arrow.RecordBatch, t *joinTable, li, ri []int32) (arrow.RecordBatch, error) {
	right := t.rec
	schema, err := js.outSchema(left.Schema(), right.Schema())
	if err != nil {
		return nil, err
	}
	var cols []arrow.Array
	fail := func(err error) (arrow.RecordBatch, error) {
		releaseArrays(cols)
		return nil, err
	}
	rightKey := map[string]int{} // left key column -> right key column
	for k, lk := range js.LeftKeys {
		j, err := keyColumn(right.Schema(), js.RightKeys[k])
		if err != nil {
			return fail(err)
		}
		rightKey[lk] = j
	}
	var la, ra arrow.Array
	defer func() {
		for _, a := range []arrow.Array{la, ra} {
			if a != nil {
				a.Release()
			}
		}
	}()
	index := func(a *arrow.Array, rows []int32) arrow.Array {
		if *a == nil {
			*a = indexArray(rows)
		}
		return *a
	}
	leftMissing := slicesContains(li, -1)
	identity := !leftMissing && int64(len(li)) == left.NumRows() && isIdentity(li)
	for i, f := range left.Schema().Fields() {
		var c arrow.Array
		if identity {
			c = left.Column(i)
			c.Retain()
		} else if c, err = takeArray(ctx, left.Column(i), index(&la, li)); err != nil {
			return fail(err)
		}
		if j, isKey := rightKey[f.Name]; isKey && leftMissing {
			rc, err := takeArray(ctx, right.Column(j), index(&ra, ri))
			if err != nil {
				c.Release()
				return fail(err)
			}
			merged, err := coalesce(c, rc)
			c.Release()
			rc.Release()
			if err != nil {
				return fail(err)
			}
			c = merged
		}
		cols = append(cols, c)
	}
	var outCols []int // the right's output columns
	for j, f := range right.Schema().Fields() {
		if !js.isRightKey(f.Name) {
			outCols = append(outCols, j)
		}
	}
	var gathered []arrow.Array
	p := t.payloadOf(outCols)
	if p != nil {
		gathered = p.gather(memory.DefaultAllocator, ri)
	}
	for _, j := range outCols {
		if p != nil {
			if c := p.has(j); c >= 0 {
				cols = append(cols, gathered[c])
				gathered[c] = nil
				continue
			}
		}
		c, err := takeArray(ctx, right.Column(j), index(&ra, ri))
		if err != nil {
			releaseArrays(gathered)
			return fail(err)
		}
		cols = append(cols, c)
	}
	releaseArrays(gathered)
	out := array.NewRecordBatch(schema, cols, int64(len(li)))
	releaseArrays(cols)
	return out, nil
}

// isIdentity says whether rows is 0, 1, 2...
func isIdentity(rows []int32) bool {
	for i, r := range rows {
		if r != int32(i) {
			return false
		}
	}
	return true
}

func slicesContains(s []int32, v int32) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// coalesce is a where it has a value, else b (both of one type).
func coalesce(a, b arrow.Array) (arrow.Array, error) {
	if a.NullN() == 0 {
		a.Retain()
		return a, nil
	}
	// Arrow's take, with indices into the concatenation of a and b
	both, err := array.Concatenate([]arrow.Array{a, b}, memory.DefaultAllocator)
	if err != nil {
		return nil, err
	}
	defer both.Release()
	idx := make([]int32, a.Len())
	for i := range idx {
		if a.IsValid(i) {
			idx[i] = int32(i)
		} else {
			idx[i] = int32(a.Len() + i)
		}
	}
	ia := indexArray(idx)
	defer ia.Release()
	return takeArray(context.Background(), both, ia)
}

// bitmapOf packs flags into a bitmap (the matched build rows a join
// task reports).
func bitmapOf(flags []bool) []byte {
	out := make([]byte, bitutil.BytesForBits(int64(len(flags))))
	for i, f := range flags {
		if f {
			bitutil.SetBit(out, i)
		}
	}
	return out
}
