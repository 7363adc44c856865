package data

import (
	"context"
	"fmt"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/bitutil"

	"github.com/atoll-runtime/atoll"
	"github.com/atoll-runtime/atoll/internal/errs"
)

// Running joins: the tasks' side (a broadcast probe, a shuffled join
// task, the hash split of both sides) and the driver's (the streams of a
// shuffled join). See join.go for the strategies.

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
// task's arguments) on keys: from the worker's cache when key names one,
// else built (and cached, on copies of the rows). The caller releases it.
func buildSide(key string, blocks []atoll.Raw, keys []string) (*joinTable, error) {
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
	all, err := concatRecords(schema, recs)
	if err != nil {
		return nil, err
	}
	defer all.Release()
	if key != "" && len(recs) == 1 { // a view of the store: copy it to keep it
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
	t, err := buildSide(js.BuildKey, shared[js.SharedFrom:js.SharedTo], js.RightKeys)
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

// runJoinTask is a shuffled join's task: its inputs are one part's
// left pieces (js.Left of them), then the right's. It returns the
// joined records and, when asked, the right rows it matched.
func runJoinTask(ctx context.Context, js *joinSpec, inputs []atoll.Raw) ([]arrow.RecordBatch, []byte, error) {
	if js.Left < 0 || js.Left > len(inputs) {
		return nil, nil, errs.Malformedf(specWhat, "a join task of %d left inputs among %d", js.Left, len(inputs))
	}
	t, err := buildSide(js.BuildKey, inputs[js.Left:], js.RightKeys)
	if err != nil {
		return nil, nil, err
	}
	defer t.release()
	var matchedBuild []bool
	if js.keepsUnmatchedBuild() {
		matchedBuild = make([]bool, t.rec.NumRows())
		if js.UnmatchedOnly {
			if len(js.Matched) != int(bitutil.BytesForBits(t.rec.NumRows())) {
				return nil, nil, errs.Malformedf(specWhat, "a bitmap of %d bytes for %d right rows", len(js.Matched), t.rec.NumRows())
			}
			for j := range matchedBuild {
				matchedBuild[j] = bitutil.BitIsSet(js.Matched, j)
			}
		}
	}
	var out []arrow.RecordBatch
	fail := func(err error) ([]arrow.RecordBatch, []byte, error) {
		releaseAll(out)
		return nil, nil, err
	}
	var leftSchema *arrow.Schema
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
		r, err := joinProbe(ctx, js, rec, t, matchedBuild)
		rec.Release()
		if err != nil {
			return fail(err)
		}
		out = append(out, r)
	}
	var report []byte
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
		report = bitmapOf(matchedBuild)
	}
	return out, report, nil
}

// hashSplit cuts a task's rows into parts by a hash of the key columns
// (the same in every process): a shuffled join's map side. A row with a
// null key goes to part 0 (it matches nothing).
func hashSplit(ctx context.Context, s *arrow.Schema, recs []arrow.RecordBatch, keys []string, parts int) ([]arrow.RecordBatch, error) {
	rec, err := concatRecords(s, recs)
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

// joinShuffle runs a shuffled join: the right side cut into parts, the
// left's map tasks (the stage's fused maps, then the cut), and the join
// tasks over both, as the left's pieces come.
func (a *allToAll) joinShuffle(ctx context.Context) (blockStream, error) {
	p := a.op.join
	parts := p.parts
	if parts == 0 {
		// the left's blocks, or enough parts for a part's right rows to
		// take a quarter of the budget
		parts = max(a.defaultParts(), int(min(4096, (4*max(p.rightEst, 0)+a.r.budget-1)/max(a.r.budget, 1))))
	}
	hp := &logicalOp{name: "hash_partition", kind: kindAllToAll, parts: parts, groupKeys: p.spec.RightKeys}
	rs, _, err := p.right.startIn(ctx, a.r, hp)
	if err != nil {
		return nil, err
	}
	pieces, err := drain(ctx, rs, a.r)
	if err != nil {
		return nil, err
	}
	builds := byPart(pieces, parts)
	for i := range builds {
		for k := range builds[i].inputs {
			builds[i].inputs[k].borrowed = true // shared by the part's tasks: released by the units
		}
	}
	ms := a.mapStream(a.sub("join_map"), outSpec{Kind: "hash_split", Parts: parts, GroupKeys: p.spec.LeftKeys})
	ju := &joinUnits{r: a.r, left: ms, parts: parts, builds: builds, spec: p.spec, key: newBuildKey(),
		pending: make([][]block, parts), pendingBytes: make([]int64, parts), emitted: make([]int, parts),
		matched: make([][]byte, parts), split: make([]bool, parts), pieces: pieces, planned: p.leftSchema}
	js := &taskStream{r: a.r, st: a.sub("join"), src: ju, out: outSpec{Kind: "blocks"}, opts: a.opts, onMeta: ju.meta}
	return &chainStream{first: js, then: func() blockStream { return ju.finish(a) }, done: ju.close}, nil
}

// joinUnits yields a shuffled join's tasks: a part's right pieces with a
// group of its left pieces, as the left's map tasks return them.
type joinUnits struct {
	r            *run
	left         blockStream // the left's map tasks: parts pieces each, in order
	parts        int
	builds       []unit // per part: the right's pieces
	pieces       []block
	spec         joinSpec
	key          string
	taken        int // left pieces taken
	pending      [][]block
	pendingBytes []int64
	emitted      []int
	leftDone     bool
	ready        []unit
	order        []int // per unit handed out, its part (for meta)
	matched      [][]byte
	split        []bool
	closed       bool
	schema       *arrow.Schema // the left pieces'
	planned      *arrow.Schema // the left's in the plan (nil: unknown)
}

// target is the left bytes a join task of part p takes: enough to pay
// for building the part's table, within a quarter of the budget.
func (j *joinUnits) target(p int) int64 {
	return max(1, min(j.r.budget/4, max(16<<20, 2*j.builds[p].estimate)))
}

func (j *joinUnits) nextUnit(ctx context.Context) (unit, bool, error) {
	for len(j.ready) == 0 {
		if j.leftDone {
			return unit{}, false, nil
		}
		b, ok, err := j.left.next(ctx)
		if err != nil {
			return unit{}, false, err
		}
		if !ok {
			j.leftDone = true
			for p := range j.parts {
				if len(j.pending[p]) > 0 || j.emitted[p] == 0 {
					j.ready = append(j.ready, j.unitFor(p, true))
				}
			}
			continue
		}
		p := j.taken % j.parts
		j.taken++
		if b.schema != nil && b.schema.NumFields() > 0 {
			j.schema = b.schema
		}
		j.pending[p] = append(j.pending[p], b)
		j.pendingBytes[p] += b.bytes
		if j.pendingBytes[p] >= j.target(p) {
			j.ready = append(j.ready, j.unitFor(p, false))
		}
	}
	u := j.ready[0]
	j.ready = j.ready[1:]
	return u, true, nil
}

// unitFor makes the task of part p over its pending left pieces; last:
// the left has no more.
func (j *joinUnits) unitFor(p int, last bool) unit {
	spec := j.spec
	spec.Left = len(j.pending[p])
	spec.BuildKey = fmt.Sprintf("%s/%d", j.key, p)
	report := -1
	if spec.keepsUnmatchedBuild() {
		if last && j.emitted[p] == 0 {
			spec.EmitUnmatchedBuild = true
			spec.LeftSchema = j.leftSchema()
		} else {
			spec.ReportMatched = true
			j.split[p] = true
			report = p
		}
	}
	j.order = append(j.order, report)
	u := unit{join: &spec, inputs: append(append([]block(nil), j.pending[p]...), j.builds[p].inputs...),
		estimate: j.pendingBytes[p] + j.builds[p].estimate}
	j.emitted[p]++
	j.pending[p], j.pendingBytes[p] = nil, 0
	return u
}

// meta collects the right rows a task matched (in the order tasks were
// handed out: the stream collects in that order).
func (j *joinUnits) meta(m *taskMeta) {
	if len(j.order) == 0 {
		return
	}
	p := j.order[0]
	j.order = j.order[1:]
	if p < 0 {
		return
	}
	if j.matched[p] == nil {
		j.matched[p] = make([]byte, len(m.Matched))
	}
	for i := range min(len(m.Matched), len(j.matched[p])) {
		j.matched[p][i] |= m.Matched[i]
	}
}

// finish is the stream of the tasks that emit the right rows no task
// matched, for the parts that took several tasks (right and full joins).
func (j *joinUnits) finish(a *allToAll) blockStream {
	var us []unit
	for p := range j.parts {
		if !j.split[p] {
			continue
		}
		spec := j.spec
		spec.UnmatchedOnly, spec.Matched, spec.Left, spec.LeftSchema = true, j.matched[p], 0, j.leftSchema()
		us = append(us, unit{join: &spec, inputs: j.builds[p].inputs, estimate: j.builds[p].estimate})
	}
	if len(us) == 0 {
		return &blockList{r: j.r}
	}
	return &taskStream{r: j.r, st: a.sub("join_unmatched"), src: &listUnits{us: us}, out: outSpec{Kind: "blocks"}, opts: a.opts}
}

// leftSchema is the left side's schema, IPC-encoded: from a piece seen,
// else from the plan.
func (j *joinUnits) leftSchema() []byte {
	if j.schema != nil {
		return encodeSchema(j.schema)
	}
	if j.planned != nil {
		return encodeSchema(j.planned)
	}
	return nil
}

func (j *joinUnits) close() {
	if j.closed {
		return
	}
	j.closed = true
	j.left.close()
	for p := range j.pending {
		for _, b := range j.pending[p] {
			b.release()
		}
		j.pending[p] = nil
	}
	for _, b := range j.pieces {
		b.borrowed = false
		b.release()
	}
	j.pieces = nil
}

// chainStream yields first's blocks, then those of the stream then
// makes; done runs once both are closed.
type chainStream struct {
	first  blockStream
	then   func() blockStream
	second blockStream
	done   func()
}

func (c *chainStream) next(ctx context.Context) (block, bool, error) {
	if c.second == nil {
		b, ok, err := c.first.next(ctx)
		if err != nil || ok {
			return b, ok, err
		}
		c.second = c.then()
	}
	return c.second.next(ctx)
}

func (c *chainStream) close() {
	c.first.close()
	if c.second != nil {
		c.second.close()
	}
	if c.done != nil {
		c.done()
	}
}
