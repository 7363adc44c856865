package data

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
)

// The kernels of GroupBy-Aggregate. Rows are grouped with Arrow's hash
// kernel (dictionary_encode, one column at a time); arrow-go has no
// grouped aggregation kernels (Acero's hash_sum and friends are C++
// only), so the per-group folds below are loops over the group ids.
//
// A partial aggregate is a record of the group columns then, per
// aggregation, its state columns (name is the aggregation's, e.g.
// sum(x)):
//
//	count  name int64
//	sum    name int64|float64|duration, name#n int64 (values summed)
//	mean   name#n int64, name#sum float64
//	min    name (the column's type; null: no value yet)
//	max    name
//	std    name#n int64, name#mean float64, name#m2 float64 (sum of squared deviations)
//
// The float64 state of a mean or std of durations (name#sum, name#mean)
// says so in its field's metadata (the durations' unit), from which the
// reduce makes its result a duration.

// aggMap aggregates a map task's records partially and cuts the partial
// rows into o.Parts records by a hash of their group columns.
func aggMap(ctx context.Context, s *arrow.Schema, recs []arrow.RecordBatch, o *outSpec) ([]arrow.RecordBatch, error) {
	if s.NumFields() == 0 { // a task that read nothing
		return emptyParts(s, o.Parts), nil
	}
	// each record aggregated on its own (no copy of the rows), then
	// the partials combined
	var parts []arrow.RecordBatch
	defer func() { releaseAll(parts) }()
	for _, r := range recs {
		if r.NumRows() == 0 {
			continue
		}
		p, err := aggregateRecord(ctx, r, o.GroupKeys, o.Aggs, false, false, true)
		if err != nil {
			return nil, err
		}
		parts = append(parts, p)
	}
	var part arrow.RecordBatch
	var err error
	switch len(parts) {
	case 0: // the partial schema, from no row
		empty := emptyRecord(s)
		part, err = aggregateRecord(ctx, empty, o.GroupKeys, o.Aggs, false, false, false)
		empty.Release()
	case 1:
		part = parts[0]
		part.Retain()
	default:
		var all arrow.RecordBatch
		if all, err = concatRecords(compute.GetAllocator(ctx), parts[0].Schema(), parts); err == nil {
			part, err = aggregateRecord(ctx, all, o.GroupKeys, o.Aggs, true, false, true)
			all.Release()
		}
	}
	if err != nil {
		return nil, err
	}
	defer part.Release()
	return cutGroups(ctx, part, len(o.GroupKeys), o.Parts, false)
}

// aggSplit combines partial aggregates of one hash part that is too
// large for one reduce task, and cuts the combined rows into o.Parts
// sub-parts by a second hash of the group columns: the first cut put
// every row of a group in this part, the second puts them in one
// sub-part, and one reduce task per sub-part finishes the groups.
func aggSplit(ctx context.Context, s *arrow.Schema, recs []arrow.RecordBatch, o *outSpec) ([]arrow.RecordBatch, error) {
	if len(recs) == 0 {
		return emptyParts(s, o.Parts), nil
	}
	part, err := combinePartials(ctx, recs, o, false)
	if err != nil {
		return nil, err
	}
	defer part.Release()
	return cutGroups(ctx, part, len(o.GroupKeys), o.Parts, true)
}

// combinePartials folds partial aggregates (at least one record) into
// one row per group: partial states, or the final columns (finalOut).
func combinePartials(ctx context.Context, recs []arrow.RecordBatch, o *outSpec, finalOut bool) (arrow.RecordBatch, error) {
	rec, err := concatRecords(compute.GetAllocator(ctx), recs[0].Schema(), recs)
	if err != nil {
		return nil, err
	}
	defer rec.Release()
	return aggregateRecord(ctx, rec, o.GroupKeys, o.Aggs, true, finalOut, false)
}

// cutGroups cuts partial rows (the group columns first) into parts by a
// hash of their group columns; second takes the part from a remix of
// the hash, whose low bits do not repeat the first cut's.
func cutGroups(ctx context.Context, part arrow.RecordBatch, keys, parts int, second bool) ([]arrow.RecordBatch, error) {
	cols := make([]arrow.Array, keys)
	for i := range cols {
		cols[i] = part.Column(i)
	}
	hash := keyHasher(cols)
	idx := make([][]int64, parts)
	for i := range int(part.NumRows()) {
		h := hash(i)
		if second {
			h = remix(h)
		}
		p := h % uint64(parts)
		idx[p] = append(idx[p], int64(i))
	}
	return takeParts(ctx, part, idx)
}

// remix is splitmix64's finalizer: every bit of its result depends on
// every bit of h.
func remix(h uint64) uint64 {
	h ^= h >> 30
	h *= 0xbf58476d1ce4e5b9
	h ^= h >> 27
	h *= 0x94d049bb133111eb
	return h ^ h>>31
}

// aggReduce combines the partial aggregates of one hash part into one
// row per group, sorted by the group columns.
func aggReduce(ctx context.Context, s *arrow.Schema, recs []arrow.RecordBatch, o *outSpec) ([]arrow.RecordBatch, error) {
	if len(recs) == 0 {
		return nil, nil
	}
	final, err := combinePartials(ctx, recs, o, true)
	if err != nil {
		return nil, err
	}
	defer final.Release()
	if len(o.GroupKeys) == 0 {
		// one group (Dataset.Aggregate): nothing to order
		return splitBlocks([]arrow.RecordBatch{final}, o.TargetMaxBlockSize, o.MaxBlocks), nil
	}
	keys := make([]SortKey, len(o.GroupKeys))
	for i, k := range o.GroupKeys {
		keys[i] = SortKey{Column: k}
	}
	sorted, err := sortRecords(ctx, final.Schema(), []arrow.RecordBatch{final}, keys)
	if err != nil {
		return nil, err
	}
	defer sorted.Release()
	return splitBlocks([]arrow.RecordBatch{sorted}, o.TargetMaxBlockSize, o.MaxBlocks), nil
}

func emptyParts(s *arrow.Schema, n int) []arrow.RecordBatch {
	out := make([]arrow.RecordBatch, n)
	for i := range out {
		out[i] = emptyRecord(s)
	}
	return out
}

// aggregateRecord groups rec's rows by keys and folds aggs over each
// group: rec holds raw rows, or partial aggregates (partialIn). It
// returns the group columns (each group's first row) and the partial
// states, or the final columns (finalOut). With passDistinct (a map
// task's partials, which a reduce combines anyway), rows whose keys are
// nearly all distinct are not grouped: each row is a group of its own
// (Trino's adaptive partial aggregation), since hashing them would
// hardly shrink them.
func aggregateRecord(ctx context.Context, rec arrow.RecordBatch, keys []string, aggs []Agg, partialIn, finalOut, passDistinct bool) (arrow.RecordBatch, error) {
	s := rec.Schema()
	keyIdx := make([]int, len(keys))
	for i, k := range keys {
		j, err := keyColumn(s, k)
		if err != nil {
			return nil, err
		}
		if !sortable(s.Field(j).Type) {
			return nil, &ColumnError{Op: "GroupBy", Column: k, Type: s.Field(j).Type.String(), Supported: sortableTypes}
		}
		keyIdx[i] = j
	}
	var ids []int32
	var first []int64
	var err error
	distinct := passDistinct && mostlyDistinct(rec, keyIdx)
	if distinct {
		ids, first = identityIDs(int(rec.NumRows()))
	} else if ids, first, err = groupIDs(ctx, rec, keyIdx); err != nil {
		return nil, err
	}
	defer recycleIDs(ids) // the accumulators take what they need of them
	groups := len(first)
	accs := make([]accumulator, len(aggs))
	var inputs []arrow.Array // the aggregations' inputs, evaluated: the accumulators read them to the end
	defer func() { releaseArrays(inputs) }()
	for i, a := range aggs {
		var in arrow.Array
		if e, ok := a.Input(); ok && !partialIn {
			b, err := e.Bind(s)
			if err != nil {
				return nil, err
			}
			if in, err = evalExpr(ctx, opSpec{Kind: "aggregate"}, b, rec); err != nil {
				return nil, err
			}
			inputs = append(inputs, in)
		}
		if accs[i], err = newAccumulator(ctx, a, in, rec, partialIn, groups); err != nil {
			return nil, err
		}
		accs[i].addAll(ids)
	}
	firstIdx := int64Array(first, nil)
	defer firstIdx.Release()
	var fields []arrow.Field
	var cols []arrow.Array
	defer func() { releaseArrays(cols) }()
	for _, j := range keyIdx {
		c := rec.Column(j)
		if distinct { // every row its own group, in order
			c.Retain()
		} else if c, err = takeArray(ctx, c, firstIdx); err != nil {
			return nil, err
		}
		fields, cols = append(fields, s.Field(j)), append(cols, c)
	}
	for _, a := range accs {
		var fs []arrow.Field
		var cs []arrow.Array
		var err error
		if finalOut {
			fs, cs, err = a.final(ctx)
		} else {
			fs, cs, err = a.partial(ctx)
		}
		if err != nil {
			return nil, err
		}
		fields, cols = append(fields, fs...), append(cols, cs...)
	}
	return array.NewRecordBatch(arrow.NewSchema(fields, nil), cols, int64(groups)), nil
}

// mostlyDistinct samples distinctSample rows of rec at random (with
// replacement, seeded by the row count: the same rows every time) and
// says whether their keys (columns keyIdx, by hash) repeat no more than
// they would if the rows held distinctShare·n equally common keys or
// more. Aggregating such rows would shrink them by a fifth at most.
// Batches of fewer than 4·distinctSample rows are always aggregated.
func mostlyDistinct(rec arrow.RecordBatch, keyIdx []int) bool {
	n := int(rec.NumRows())
	if n < 4*distinctSample {
		return false
	}
	cols := make([]arrow.Array, len(keyIdx))
	for i, j := range keyIdx {
		cols[i] = rec.Column(j)
	}
	// m draws among d equally common keys find d·(1-(1-1/d)^m) of them
	m, d := float64(distinctSample), distinctShare*float64(n)
	repeats := int(m - d*(1-math.Exp(m*math.Log1p(-1/d))))
	hash := keyHasher(cols)
	r := rand.New(rand.NewPCG(uint64(n), 0x9e3779b97f4a7c15))
	seen := make(map[uint64]struct{}, 1024)
	for i := range distinctSample {
		seen[hash(r.IntN(n))] = struct{}{}
		if i+1-len(seen) > repeats {
			return false // keys repeat too often already
		}
	}
	return true
}

// distinctSample is how many rows mostlyDistinct draws; distinctShare the
// share of distinct keys past which rows are not aggregated.
const (
	distinctSample = 1 << 13
	distinctShare  = 0.8
)

// identityIDs numbers n rows as n groups of one row each.
func identityIDs(n int) ([]int32, []int64) {
	ids, first := scratchIDs(n), make([]int64, n)
	for i := range n {
		ids[i], first[i] = int32(i), int64(i)
	}
	return ids, first
}

// groupIDs gives each row of rec a dense group id by the columns keyIdx,
// in order of first appearance: each column's values get ids (a null is
// a value of its own; NaN one value, -0 the same as 0), and the ids of
// several columns are combined and made dense again. first holds each
// group's first row.
func groupIDs(_ context.Context, rec arrow.RecordBatch, keyIdx []int) ([]int32, []int64, error) {
	if len(keyIdx) == 0 {
		// no columns: every row is in the one group (Dataset.Aggregate)
		n := int(rec.NumRows())
		if n == 0 {
			return nil, nil, nil
		}
		ids := scratchIDs(n)
		clear(ids)
		return ids, []int64{0}, nil
	}
	var ids []int32
	var card int
	for k, j := range keyIdx {
		cids, c, err := columnGroupIDs(intKey(rec.Column(j)))
		if err != nil {
			return nil, nil, err
		}
		if k == 0 {
			ids, card = cids, c
			continue
		}
		combined := make([]int64, len(ids))
		for i := range ids {
			combined[i] = int64(ids[i])*int64(c) + int64(cids[i])
		}
		recycleIDs(ids)
		recycleIDs(cids)
		ids, card = denseIDs(combined, nil)
	}
	first := make([]int64, card)
	for g := range first {
		first[g] = -1
	}
	for i, g := range ids {
		if first[g] < 0 {
			first[g] = int64(i)
		}
	}
	return ids, first, nil
}

// columnGroupIDs numbers col's distinct values in order of appearance.
func columnGroupIDs(col arrow.Array) ([]int32, int, error) {
	var nulls arrow.Array
	if col.NullN() > 0 {
		nulls = col
	}
	switch c := col.(type) {
	case *array.Int64:
		ids, n := denseIDs(c.Int64Values(), nulls)
		return ids, n, nil
	case *array.Int32:
		vs := make([]int64, c.Len())
		for i, v := range c.Int32Values() {
			vs[i] = int64(v)
		}
		ids, n := denseIDs(vs, nulls)
		return ids, n, nil
	case *array.Float64:
		vs := make([]int64, c.Len())
		for i, v := range c.Float64Values() {
			vs[i] = int64(floatBits(v))
		}
		ids, n := denseIDs(vs, nulls)
		return ids, n, nil
	case *array.Float32:
		vs := make([]int64, c.Len())
		for i, v := range c.Float32Values() {
			vs[i] = int64(floatBits(float64(v)))
		}
		ids, n := denseIDs(vs, nulls)
		return ids, n, nil
	case *array.String:
		ids := scratchIDs(c.Len())
		seen := map[string]int32{}
		count, nullID := int32(0), int32(-1)
		for i := range ids {
			if nulls != nil && c.IsNull(i) {
				if nullID < 0 {
					nullID, count = count, count+1
				}
				ids[i] = nullID
				continue
			}
			v := c.Value(i) // a view of the batch: the map lives no longer than it
			id, ok := seen[v]
			if !ok {
				id, count = count, count+1
				seen[v] = id
			}
			ids[i] = id
		}
		return ids, int(count), nil
	}
	return nil, 0, fmt.Errorf("data: group keys of type %s", col.DataType())
}

// denseIDs numbers the distinct values of vs in order of appearance;
// rows null in nulls (if not nil) are one more value. Values within a
// range of at most denseRange (and of no more than four per row) index
// an array directly; others go through an open-addressing table that
// starts small and doubles, so that a block of a million rows with a
// thousand keys works in a table that stays in the CPU's cache.
func denseIDs(vs []int64, nulls arrow.Array) ([]int32, int) {
	if len(vs) == 0 {
		return nil, 0
	}
	lo, hi := vs[0], vs[0]
	for _, v := range vs {
		lo, hi = min(lo, v), max(hi, v)
	}
	if span := uint64(hi) - uint64(lo); hi >= lo && span < denseRange && span < 4*uint64(len(vs)) {
		return directIDs(vs, nulls, lo, int(span)+1)
	}
	return hashIDs(vs, nulls)
}

// denseRange bounds the span of values directIDs takes (a table of 4 MiB).
const denseRange = 1 << 20

// directIDs is denseIDs for values in [lo, lo+span): each value's id is
// kept at its offset from lo.
func directIDs(vs []int64, nulls arrow.Array, lo int64, span int) ([]int32, int) {
	slot := scratchIDs(span)
	defer recycleIDs(slot)
	for i := range slot {
		slot[i] = -1
	}
	ids := scratchIDs(len(vs))
	count, nullID := int32(0), int32(-1)
	if nulls == nil {
		for i, v := range vs {
			p := &slot[v-lo]
			if *p < 0 {
				*p, count = count, count+1
			}
			ids[i] = *p
		}
		return ids, int(count)
	}
	for i, v := range vs {
		if nulls.IsNull(i) {
			if nullID < 0 {
				nullID, count = count, count+1
			}
			ids[i] = nullID
			continue
		}
		p := &slot[v-lo]
		if *p < 0 {
			*p, count = count, count+1
		}
		ids[i] = *p
	}
	return ids, int(count)
}

// hashIDs is denseIDs with an open-addressing table.
func hashIDs(vs []int64, nulls arrow.Array) ([]int32, int) {
	n := len(vs)
	ids := scratchIDs(n)
	size := 16
	for size < 2*min(n, 1<<10) {
		size <<= 1
	}
	table := make([]idEntry, size)
	mask := uint64(size - 1)
	count := int32(0)
	nullID := int32(-1)
	for i, v := range vs {
		if i == 1<<10 && int(count) > 9<<10/10 && n > 4<<10 {
			// nearly every value of the first ones is new: size the table
			// for all of them now rather than doubling it up to there
			want := size
			for want < 2*n {
				want <<= 1
			}
			table, mask, size = rehash(table, want), uint64(want-1), want
		}
		if nulls != nil && nulls.IsNull(i) {
			if nullID < 0 {
				nullID, count = count, count+1
			}
			ids[i] = nullID
			continue
		}
		s := mix64(uint64(v)) & mask
		for {
			e := &table[s]
			if e.id1 == 0 {
				count++
				e.key, e.id1 = v, count
				break
			}
			if e.key == v {
				break
			}
			s = (s + 1) & mask
		}
		ids[i] = table[s].id1 - 1
		if int(count)*2 > size { // keep the table half empty
			table, mask, size = rehash(table, 2*size), uint64(2*size-1), 2*size
		}
	}
	return ids, int(count)
}

// idScratch recycles the []int32 slices rows are numbered in (a group id
// per row, and directIDs's table): a map task numbers every batch it
// reads, and a batch's ids are dead once its accumulators have added
// them up (aggregateRecord), so the next batch takes the same memory
// rather than leaving the collector a slice per batch.
var idScratch sync.Pool // of *[]int32

// scratchIDs returns n int32s, not cleared: their caller writes each.
func scratchIDs(n int) []int32 {
	if p, ok := idScratch.Get().(*[]int32); ok && cap(*p) >= n {
		return (*p)[:n]
	}
	return make([]int32, n)
}

// recycleIDs gives ids, from scratchIDs and no longer used, back.
func recycleIDs(ids []int32) {
	if cap(ids) > 0 {
		idScratch.Put(&ids)
	}
}

// idEntry is a slot of denseIDs's table: a value and its id plus one (0:
// empty, so a fresh table needs no filling).
type idEntry struct {
	key int64
	id1 int32
}

// rehash moves table's entries into a new table of size slots.
func rehash(old []idEntry, size int) []idEntry {
	table := make([]idEntry, size)
	mask := uint64(size - 1)
	for _, o := range old {
		if o.id1 == 0 {
			continue
		}
		s := mix64(uint64(o.key)) & mask
		for table[s].id1 != 0 {
			s = (s + 1) & mask
		}
		table[s] = o
	}
	return table
}

// keyHasher returns a hash of row i's values of cols, the same in every
// process (FNV-1a over the values, mixed; -0 is 0 and every NaN one NaN,
// so values a group may hold hash alike).
func keyHasher(cols []arrow.Array) func(i int) uint64 {
	const offset, prime = 14695981039346656037, 1099511628211
	cols = slices.Clone(cols)
	for i, c := range cols {
		cols[i] = intKey(c)
	}
	return func(i int) uint64 {
		h := uint64(offset)
		word := func(v uint64) {
			for range 8 {
				h = (h ^ (v & 0xff)) * prime
				v >>= 8
			}
		}
		for _, col := range cols {
			if col.IsNull(i) {
				word(0xfeedface)
				continue
			}
			switch c := col.(type) {
			case *array.Int64:
				word(uint64(c.Value(i)))
			case *array.Int32:
				word(uint64(c.Value(i)))
			case *array.Float64:
				word(floatBits(c.Value(i)))
			case *array.Float32:
				word(floatBits(float64(c.Value(i))))
			case *array.String:
				s := c.Value(i)
				for k := 0; k < len(s); k++ {
					h = (h ^ uint64(s[k])) * prime
				}
				word(uint64(len(s)))
			}
		}
		// FNV's low bits follow the values' low bits (keys that are all
		// multiples of 8 would share a part of 8): mix (MurmurHash3's
		// finalizer)
		h ^= h >> 33
		h *= 0xff51afd7ed558ccd
		h ^= h >> 33
		h *= 0xc4ceb9fe1a85ec53
		h ^= h >> 33
		return h
	}
}

func floatBits(f float64) uint64 {
	switch {
	case f == 0:
		return 0
	case math.IsNaN(f):
		return math.Float64bits(math.NaN())
	}
	return math.Float64bits(f)
}
