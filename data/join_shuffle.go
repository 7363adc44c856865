package data

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/bitutil"

	"github.com/atoll-runtime/atoll/internal/errs"
)

// Running a shuffled join, the driver's side: the right side cut into
// parts (and a part too large for one task into chunks), the left's
// pieces grouped into join tasks as they come, and the tasks that emit
// the rows no task matched. The tasks' side is in join_exec.go.

// joinShuffle runs a shuffled join: the right side cut into parts, the
// left's map tasks (the stage's fused maps, then the cut), and the join
// tasks over both, as the left's pieces come. A part whose right rows
// are more than a task should hold (a frequent key's rows all hash to
// one part) is joined in chunks of them: each group of the part's left
// pieces goes to one task per chunk, and the left rows no chunk matched
// (left, full and anti joins; the matched ones for semi joins) come from
// one more task per group at the end.
func (a *allToAll) joinShuffle(ctx context.Context) (blockStream, error) {
	p := a.op.join
	parts := p.parts
	if parts == 0 {
		// the left's blocks, or enough parts for a part's right rows to
		// take a quarter of the budget
		parts = max(a.defaultParts(), int(min(4096, (4*max(p.rightEst, 0)+a.r.budget-1)/max(a.r.budget, 1))))
	}
	hp := &logicalOp{name: "hash_partition", kind: kindAllToAll, parts: parts, groupKeys: p.spec.RightKeys}
	rs, _, _, err := p.right.startIn(ctx, a.r, hp)
	if err != nil {
		return nil, err
	}
	pieces, err := drain(ctx, rs, a.r)
	if err != nil {
		return nil, err
	}
	for i := range pieces {
		pieces[i].borrowed = true // shared by the part's tasks: released by the units
	}
	ms := a.mapStream(a.sub("join_map"), outSpec{Kind: "hash_split", Parts: parts, GroupKeys: p.spec.LeftKeys})
	ju := &joinUnits{r: a.r, left: ms, parts: parts, spec: p.spec, key: newBuildKey(),
		pending: make([][]block, parts), pendingBytes: make([]int64, parts), emitted: make([]int, parts),
		partBuilds: make([][]int, parts), partEst: make([]int64, parts), pieces: pieces,
		planned: p.leftSchema, rightPlanned: p.rightSchema}
	cut, chunked, largest := 0, 0, int64(0)
	for part, u := range byPart(pieces, parts) {
		ju.partEst[part] = u.estimate
		chunks := chunkPart(u, a.reduceLimit())
		if len(chunks) > 1 {
			cut, chunked, largest = cut+1, chunked+len(chunks), max(largest, u.estimate)
		}
		for _, c := range chunks {
			ju.partBuilds[part] = append(ju.partBuilds[part], len(ju.builds))
			ju.builds = append(ju.builds, c)
		}
	}
	if cut > 0 {
		a.stats.addNote("Join", fmt.Sprintf("%d of %d parts' right rows joined in chunks, %d in all (the largest part %.1f MB, at most %.1f MB a chunk)",
			cut, parts, chunked, float64(largest)/1e6, float64(a.reduceLimit())/1e6))
	}
	ju.matched, ju.split = make([][]byte, len(ju.builds)), make([]bool, len(ju.builds))
	js := &taskStream{r: a.r, st: a.sub("join"), src: ju, out: outSpec{Kind: "blocks"}, opts: a.opts, onMeta: ju.meta}
	return &chainStream{first: js, then: func() blockStream { return ju.finish(a) }, done: ju.close}, nil
}

// joinUnits yields a shuffled join's tasks: a part's right pieces (or
// each chunk of them) with a group of its left pieces, as the left's map
// tasks return them.
type joinUnits struct {
	r            *run
	left         blockStream // the left's map tasks: parts pieces each, in order
	parts        int
	builds       []unit  // the right's pieces: a part's, or a chunk of a part's
	partBuilds   [][]int // per part, its builds
	partEst      []int64 // per part, its right bytes
	pieces       []block
	spec         joinSpec
	key          string
	taken        int // left pieces taken
	pending      [][]block
	pendingBytes []int64
	emitted      []int
	leftDone     bool
	ready        []unit
	order        []joinReport // per unit handed out, what its metadata reports
	matched      [][]byte     // per build: the right rows its tasks matched
	split        []bool       // per build: its rows were joined by several tasks
	groups       []leftGroup  // left pieces joined in chunks, kept for their rest
	closed       bool
	err          error
	schema       *arrow.Schema // the left pieces'
	planned      *arrow.Schema // the left's in the plan (nil: unknown)
	rightPlanned *arrow.Schema // the right's in the plan (nil: unknown)
}

// joinReport is where a join task's metadata goes: the build whose
// matched right rows it reports and the left group whose matched left
// rows it reports (-1: none).
type joinReport struct{ build, group int }

// leftGroup is a group of left pieces joined with each chunk of a part's
// right rows: the tasks report which of its rows matched, and the
// group's rest is emitted at the end.
type leftGroup struct {
	pieces  []block
	rows    int64
	matched []byte
}

// target is the left bytes a join task of part p takes: enough to pay
// for building the part's table, within a quarter of the budget.
func (j *joinUnits) target(p int) int64 {
	return max(1, min(j.r.budget/4, max(16<<20, 2*j.partEst[p])))
}

func (j *joinUnits) nextUnit(ctx context.Context) (unit, bool, error) {
	for len(j.ready) == 0 {
		if j.err != nil {
			return unit{}, false, j.err
		}
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
					j.ready = append(j.ready, j.unitsFor(p, true)...)
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
			j.ready = append(j.ready, j.unitsFor(p, false)...)
		}
	}
	u := j.ready[0]
	j.ready = j.ready[1:]
	return u, true, nil
}

// unitsFor makes the tasks of part p over its pending left pieces, one
// per build of the part; last: the left has no more.
func (j *joinUnits) unitsFor(p int, last bool) []unit {
	left := j.pending[p]
	builds := j.partBuilds[p]
	chunked := len(builds) > 1
	group := -1
	if chunked && j.spec.How != "inner" && j.spec.How != "right" {
		// the left rows' outcome takes every chunk: the group is kept
		// for its rest, and every task borrows it
		var rows int64
		for _, b := range left {
			rows += b.rows
		}
		group = len(j.groups)
		j.groups = append(j.groups, leftGroup{pieces: left, rows: rows})
	}
	var us []unit
	for c, bi := range builds {
		spec := j.spec
		spec.Left = len(left)
		spec.BuildKey = fmt.Sprintf("%s/%d", j.key, bi)
		spec.ReportLeftMatched = group >= 0
		report := joinReport{build: -1, group: group}
		if spec.keepsUnmatchedBuild() {
			if last && j.emitted[p] == 0 {
				spec.EmitUnmatchedBuild = true
				spec.LeftSchema = j.leftSchema()
			} else {
				spec.ReportMatched = true
				j.split[bi] = true
				report.build = bi
			}
		}
		j.order = append(j.order, report)
		// the last task of the group takes the left's pieces, unless a
		// group keeps them; the others borrow them
		pieces := left
		if group >= 0 || c < len(builds)-1 {
			pieces = borrowedCopy(left)
		}
		us = append(us, unit{join: &spec, inputs: pieces, lazy: j.builds[bi].inputs,
			estimate: j.pendingBytes[p] + j.builds[bi].estimate})
	}
	j.emitted[p]++
	j.pending[p], j.pendingBytes[p] = nil, 0
	return us
}

// borrowedCopy is bs marked borrowed: given to a task, never released.
func borrowedCopy(bs []block) []block {
	out := append([]block(nil), bs...)
	for i := range out {
		out[i].borrowed = true
	}
	return out
}

// meta collects the right rows, and the left rows, a task matched (in
// the order tasks were handed out: the stream collects in that order).
func (j *joinUnits) meta(m *taskMeta) {
	if len(j.order) == 0 {
		return
	}
	r := j.order[0]
	j.order = j.order[1:]
	if r.build >= 0 {
		j.matched[r.build] = orBitmap(j.matched[r.build], m.Matched)
	}
	if r.group >= 0 {
		g := &j.groups[r.group]
		if want := int(bitutil.BytesForBits(g.rows)); len(m.LeftMatched) != want {
			j.err = errs.Malformedf(metaWhat, "a bitmap of %d bytes for %d left rows", len(m.LeftMatched), g.rows)
			return
		}
		g.matched = orBitmap(g.matched, m.LeftMatched)
	}
}

// orBitmap sets in dst the bits set in src (dst made as long as src
// when nil; bits past its end are dropped).
func orBitmap(dst, src []byte) []byte {
	if dst == nil {
		dst = make([]byte, len(src))
	}
	for i := range min(len(src), len(dst)) {
		dst[i] |= src[i]
	}
	return dst
}

// finish is the stream of the tasks that emit the right rows no task
// matched, for the builds that took several tasks (right and full
// joins), and the rest of each left group joined in chunks.
func (j *joinUnits) finish(a *allToAll) blockStream {
	if j.err != nil {
		return &failedStream{err: j.err}
	}
	var us []unit
	for bi := range j.builds {
		if !j.split[bi] {
			continue
		}
		spec := j.spec
		spec.UnmatchedOnly, spec.Matched, spec.Left, spec.LeftSchema = true, j.matched[bi], 0, j.leftSchema()
		us = append(us, unit{join: &spec, lazy: j.builds[bi].inputs, estimate: j.builds[bi].estimate})
	}
	for g := range j.groups {
		grp := &j.groups[g]
		spec := j.spec
		spec.LeftRest, spec.Left, spec.RightSchema = true, len(grp.pieces), j.rightSchema()
		spec.LeftMatched = grp.matched
		if spec.LeftMatched == nil {
			spec.LeftMatched = make([]byte, bitutil.BytesForBits(grp.rows))
		}
		var est int64
		for _, b := range grp.pieces {
			est += b.bytes
		}
		// the task takes the group's pieces (the stream releases them)
		us = append(us, unit{join: &spec, inputs: grp.pieces, estimate: est})
		grp.pieces = nil
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

// rightSchema is the right side's schema, IPC-encoded: from its pieces,
// else from the plan.
func (j *joinUnits) rightSchema() []byte {
	for _, b := range j.pieces {
		if b.schema != nil && b.schema.NumFields() > 0 {
			return encodeSchema(b.schema)
		}
	}
	if j.rightPlanned != nil {
		return encodeSchema(j.rightPlanned)
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
	for _, u := range j.ready { // units not handed out own their left pieces
		for _, b := range u.inputs {
			b.release()
		}
	}
	j.ready = nil
	for g := range j.groups {
		for _, b := range j.groups[g].pieces {
			b.release()
		}
		j.groups[g].pieces = nil
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
