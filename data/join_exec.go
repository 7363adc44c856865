package data

import (
	"bytes"
	"context"
	"encoding/gob"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/atoll-runtime/atoll"
	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/errs"
)

// Running joins, the tasks' side: a broadcast probe, a shuffled join
// task and the hash split of both sides (the driver's streams of a
// shuffled join are in join_shuffle.go). See join.go for the strategies.

// tableCache keeps the hash tables a worker process built, by build key,
// so the tasks of one join on one worker build the right side's table
// once. Its tables own their rows (copied out of the store: a task's
// arguments are views only while it runs). Bounded by maxCachedBytes,
// the oldest table going first.
type tableCache struct {
	mu     sync.Mutex
	tables map[string]*joinTable
	order  []string
	bytes  int64
}

// maxCachedBytes bounds the tables a worker keeps between tasks.
const maxCachedBytes = 256 << 20

var joinTables = &tableCache{tables: map[string]*joinTable{}}

// get returns the table of key, retained (the caller releases it).
func (c *tableCache) get(key string) *joinTable {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := c.tables[key]
	if t != nil {
		t.rec.Retain()
	}
	return t
}

// put keeps t (retaining it) unless it is too large.
func (c *tableCache) put(key string, t *joinTable) {
	if t.bytes > maxCachedBytes/2 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.tables[key]; ok {
		return
	}
	for c.bytes+t.bytes > maxCachedBytes && len(c.order) > 0 {
		old := c.order[0]
		c.order = c.order[1:]
		c.bytes -= c.tables[old].bytes
		c.tables[old].release()
		delete(c.tables, old)
	}
	t.rec.Retain()
	c.tables[key] = t
	c.order = append(c.order, key)
	c.bytes += t.bytes
}

// buildSide returns the hash table of the build blocks (views of the
// task's arguments, or the process's own bytes when owned) on keys: from
// the worker's cache when key names one, else built (and cached, on
// copies of the rows unless owned). The caller releases it.
func buildSide(key string, blocks []atoll.Raw, keys []string, owned bool) (*joinTable, error) {
	if key != "" {
		if t := joinTables.get(key); t != nil {
			return t, nil
		}
	}
	var recs []arrow.RecordBatch
	defer func() { releaseAll(recs) }()
	var schema *arrow.Schema
	for _, b := range blocks {
		rec, err := decodeBlock(b.Data)
		if err != nil {
			return nil, err
		}
		schema = rec.Schema()
		recs = append(recs, rec)
	}
	if schema == nil {
		return nil, errs.Malformedf(specWhat, "a join without its right side")
	}
	all, err := concatRecords(memory.DefaultAllocator, schema, recs)
	if err != nil {
		return nil, err
	}
	defer all.Release()
	if key != "" && len(recs) == 1 && !owned { // a view of the store: copy it to keep it
		c, err := copyRecord(all)
		if err != nil {
			return nil, err
		}
		all.Release()
		all = c
	}
	idx := make([]int, len(keys))
	for i, k := range keys {
		if idx[i], err = keyColumn(schema, k); err != nil {
			return nil, err
		}
	}
	t, err := buildTable(all, idx)
	if err != nil {
		return nil, err
	}
	if key != "" {
		joinTables.put(key, t)
	}
	return t, nil
}

// lazyRefs is the argument of a task that reads blocks only when it
// needs them (joinSpec.LazyRight): their refs, which the task borrows.
type lazyRefs struct{ Refs []atoll.ObjectRef[atoll.Raw] }

// lazyArg is bs's refs as a task's argument (gob, the encoding that
// carries refs: the task holds them while it runs).
func lazyArg(bs []block) (atoll.Raw, error) {
	lr := lazyRefs{Refs: make([]atoll.ObjectRef[atoll.Raw], len(bs))}
	for i, b := range bs {
		lr.Refs[i] = b.ref
	}
	var buf bytes.Buffer
	if err := gob.NewEncoder(&buf).Encode(lr); err != nil {
		return atoll.Raw{}, err
	}
	return atoll.Raw{Codec: atollpb.Codec_CODEC_GOB, Data: buf.Bytes()}, nil
}

// lazyBuildSide is buildSide over blocks lent as refs (lazyArg): the
// worker's table of key when it has one, else the blocks read and built.
func lazyBuildSide(ctx context.Context, key string, arg atoll.Raw, keys []string) (*joinTable, error) {
	if key != "" {
		if t := joinTables.get(key); t != nil {
			return t, nil
		}
	}
	if arg.Codec != atollpb.Codec_CODEC_GOB {
		return nil, errs.Malformedf(specWhat, "a join's right side of codec %v", arg.Codec)
	}
	lr, err := atoll.DecodeRaw[lazyRefs](ctx, arg)
	defer func() {
		for _, r := range lr.Refs {
			r.Release()
		}
	}()
	if err != nil {
		return nil, err
	}
	blocks, err := atoll.GetAll(ctx, lr.Refs)
	if err != nil {
		return nil, err
	}
	return buildSide(key, blocks, keys, true) // Get's copies
}

// probeKeys returns rec's key columns.
func probeKeys(rec arrow.RecordBatch, keys []string) ([]arrow.Array, error) {
	out := make([]arrow.Array, len(keys))
	for i, k := range keys {
		j, err := keyColumn(rec.Schema(), k)
		if err != nil {
			return nil, err
		}
		out[i] = rec.Column(j)
	}
	return out, nil
}

// joinProbe joins rec (left rows) with t (right rows) as js says,
// marking the right rows matched in matchedBuild (if not nil).
func joinProbe(ctx context.Context, js *joinSpec, rec arrow.RecordBatch, t *joinTable, matchedBuild []bool) (arrow.RecordBatch, error) {
	keys, err := probeKeys(rec, js.LeftKeys)
	if err != nil {
		return nil, err
	}
	keep := js.How == "left" || js.How == "full"
	pi, bi, matched, err := t.probe(keys, keep, matchedBuild)
	if err != nil {
		return nil, err
	}
	switch js.How {
	case "semi", "anti":
		mask := boolMask(matched, js.How == "semi")
		defer mask.Release()
		return filterByMask(ctx, rec, mask)
	}
	return joinOutput(ctx, js, rec, t, pi, bi)
}

// unmatchedBuild is the right rows of t not matched, joined with no left
// row (a right or full join's rest); left is the left side's schema.
func unmatchedBuild(ctx context.Context, js *joinSpec, left *arrow.Schema, t *joinTable, matched []bool) (arrow.RecordBatch, error) {
	var li, bi []int32
	for j := range int(t.rec.NumRows()) {
		if !matched[j] {
			li, bi = append(li, -1), append(bi, int32(j))
		}
	}
	empty := emptyRecord(left)
	defer empty.Release()
	return joinOutput(ctx, js, empty, t, li, bi)
}

// applyJoinProbe runs a broadcast join over a task's records: the right
// side is the task's shared arguments.
func applyJoinProbe(ctx context.Context, op opSpec, recs []arrow.RecordBatch, shared []atoll.Raw) ([]arrow.RecordBatch, error) {
	js := op.Join
	if js.SharedFrom < 0 || js.SharedTo > len(shared) || js.SharedFrom >= js.SharedTo {
		return nil, errs.Malformedf(specWhat, "a join on shared arguments %d to %d of %d", js.SharedFrom, js.SharedTo, len(shared))
	}
	t, err := buildSide(js.BuildKey, shared[js.SharedFrom:js.SharedTo], js.RightKeys, false)
	if err != nil {
		return nil, err
	}
	defer t.release()
	var out []arrow.RecordBatch
	for _, rec := range recs {
		r, err := joinProbe(ctx, js, rec, t, nil)
		if err != nil {
			releaseAll(out)
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

// joinMatches is what a shuffled join's task reports beside its rows:
// the right rows it matched (report_matched) and the left rows it
// matched (report_left_matched), as bitmaps.
type joinMatches struct{ right, left []byte }

// runJoinTask is a shuffled join's task: its inputs are one part's
// left pieces (js.Left of them), then the right's (or a chunk of the
// right's). It returns the joined records and, when asked, the rows it
// matched. A task of the left's rest (js.LeftRest) takes left pieces
// only.
func runJoinTask(ctx context.Context, js *joinSpec, inputs []atoll.Raw) ([]arrow.RecordBatch, joinMatches, error) {
	if js.Left < 0 || js.Left > len(inputs) {
		return nil, joinMatches{}, errs.Malformedf(specWhat, "a join task of %d left inputs among %d", js.Left, len(inputs))
	}
	if js.LeftRest {
		out, err := leftRest(ctx, js, inputs)
		return out, joinMatches{}, err
	}
	var t *joinTable
	var err error
	if right := inputs[js.Left:]; js.LazyRight {
		if len(right) != 1 {
			return nil, joinMatches{}, errs.Malformedf(specWhat, "a join's right side in %d arguments", len(right))
		}
		t, err = lazyBuildSide(ctx, js.BuildKey, right[0], js.RightKeys)
	} else {
		t, err = buildSide(js.BuildKey, right, js.RightKeys, false)
	}
	if err != nil {
		return nil, joinMatches{}, err
	}
	defer t.release()
	var matchedBuild []bool
	if js.keepsUnmatchedBuild() {
		matchedBuild = make([]bool, t.rec.NumRows())
		if js.UnmatchedOnly {
			if len(js.Matched) != int(bitutil.BytesForBits(t.rec.NumRows())) {
				return nil, joinMatches{}, errs.Malformedf(specWhat, "a bitmap of %d bytes for %d right rows", len(js.Matched), t.rec.NumRows())
			}
			for j := range matchedBuild {
				matchedBuild[j] = bitutil.BitIsSet(js.Matched, j)
			}
		}
	}
	var out []arrow.RecordBatch
	fail := func(err error) ([]arrow.RecordBatch, joinMatches, error) {
		releaseAll(out)
		return nil, joinMatches{}, err
	}
	var leftSchema *arrow.Schema
	var leftMatched []bool // report_left_matched: over every left row
	for _, in := range inputs[:js.Left] {
		rec, err := decodeBlock(in.Data)
		if err != nil {
			return fail(err)
		}
		leftSchema = rec.Schema()
		if rec.NumRows() == 0 {
			rec.Release()
			continue
		}
		var r arrow.RecordBatch
		if js.ReportLeftMatched {
			var m []bool
			r, m, err = probePairs(ctx, js, rec, t, matchedBuild)
			leftMatched = append(leftMatched, m...)
		} else {
			r, err = joinProbe(ctx, js, rec, t, matchedBuild)
		}
		rec.Release()
		if err != nil {
			return fail(err)
		}
		if r != nil {
			out = append(out, r)
		}
	}
	var report joinMatches
	if js.ReportLeftMatched {
		report.left = bitmapOf(leftMatched)
	}
	switch {
	case js.EmitUnmatchedBuild || js.UnmatchedOnly:
		if leftSchema == nil && len(js.LeftSchema) > 0 {
			if leftSchema, err = decodeSchema(js.LeftSchema); err != nil {
				return fail(err)
			}
		}
		if leftSchema == nil {
			return fail(errs.Malformedf(specWhat, "a join task without the left's schema"))
		}
		r, err := unmatchedBuild(ctx, js, leftSchema, t, matchedBuild)
		if err != nil {
			return fail(err)
		}
		out = append(out, r)
	case js.ReportMatched:
		report.right = bitmapOf(matchedBuild)
	}
	return out, report, nil
}

// probePairs joins rec with one chunk of a part's right rows: it
// returns the pairs (nil for semi and anti joins, which keep left rows
// only) and which of rec's rows matched; the rows no chunk matched are
// the left's rest (leftRest).
func probePairs(ctx context.Context, js *joinSpec, rec arrow.RecordBatch, t *joinTable, matchedBuild []bool) (arrow.RecordBatch, []bool, error) {
	keys, err := probeKeys(rec, js.LeftKeys)
	if err != nil {
		return nil, nil, err
	}
	pi, bi, matched, err := t.probe(keys, false, matchedBuild)
	if err != nil || js.How == "semi" || js.How == "anti" {
		return nil, matched, err
	}
	r, err := joinOutput(ctx, js, rec, t, pi, bi)
	return r, matched, err
}

// leftRest is a task over a group of left pieces joined in chunks: the
// rows js.LeftMatched leaves unset (left, full and anti joins: with
// nulls for the right's columns but in anti joins) or sets (semi joins).
func leftRest(ctx context.Context, js *joinSpec, inputs []atoll.Raw) ([]arrow.RecordBatch, error) {
	var recs, out []arrow.RecordBatch
	defer func() { releaseAll(recs) }()
	var rows int64
	for _, in := range inputs {
		rec, err := decodeBlock(in.Data)
		if err != nil {
			return nil, err
		}
		recs = append(recs, rec)
		rows += rec.NumRows()
	}
	if len(js.LeftMatched) != int(bitutil.BytesForBits(rows)) {
		return nil, errs.Malformedf(specWhat, "a bitmap of %d bytes for %d left rows", len(js.LeftMatched), rows)
	}
	fail := func(err error) ([]arrow.RecordBatch, error) {
		releaseAll(out)
		return nil, err
	}
	var t *joinTable
	if js.How == "left" || js.How == "full" {
		rs, err := decodeSchema(js.RightSchema)
		if err != nil {
			return nil, err
		}
		if t, err = emptyTable(rs, js.RightKeys); err != nil {
			return nil, err
		}
		defer t.release()
	}
	at := 0
	for _, rec := range recs {
		n := int(rec.NumRows())
		keep := make([]bool, n)
		for i := range keep {
			keep[i] = bitutil.BitIsSet(js.LeftMatched, at+i) == (js.How == "semi")
		}
		at += n
		var r arrow.RecordBatch
		var err error
		if t == nil {
			mask := boolMask(keep, true)
			r, err = filterByMask(ctx, rec, mask)
			mask.Release()
		} else {
			var li, ri []int32
			for i, k := range keep {
				if k {
					li, ri = append(li, int32(i)), append(ri, -1)
				}
			}
			r, err = joinOutput(ctx, js, rec, t, li, ri)
		}
		if err != nil {
			return fail(err)
		}
		out = append(out, r)
	}
	return out, nil
}

// emptyTable is a table of no rows of schema s (the right's columns of
// rows with no right row).
func emptyTable(s *arrow.Schema, keys []string) (*joinTable, error) {
	rec := emptyRecord(s)
	defer rec.Release()
	idx := make([]int, len(keys))
	for i, k := range keys {
		var err error
		if idx[i], err = keyColumn(s, k); err != nil {
			return nil, err
		}
	}
	return buildTable(rec, idx)
}

// hashSplit cuts a task's rows into parts by a hash of the key columns
// (the same in every process): a shuffled join's map side. A row with a
// null key goes to part 0 (it matches nothing).
func hashSplit(ctx context.Context, s *arrow.Schema, recs []arrow.RecordBatch, keys []string, parts int) ([]arrow.RecordBatch, error) {
	rec, err := concatRecords(compute.GetAllocator(ctx), s, recs)
	if err != nil {
		return nil, err
	}
	defer rec.Release()
	if s.NumFields() == 0 {
		return emptyParts(s, parts), nil
	}
	cols, err := probeKeys(rec, keys)
	if err != nil {
		return nil, err
	}
	h, valid, err := hashKeys(cols)
	if err != nil {
		return nil, err
	}
	idx := make([][]int64, parts)
	for i, x := range h {
		p := 0
		if valid == nil || valid[i] {
			p = int(x % uint64(parts))
		}
		idx[p] = append(idx[p], int64(i))
	}
	return takeParts(ctx, rec, idx)
}
