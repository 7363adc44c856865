package data

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/atoll-runtime/atoll/internal/errs"
)

// The hash all-to-alls (aggregate, random_shuffle): a map task per input
// block (the stage's fused ops, then P returns), then a reduce task per
// part. Their map outputs stay in the store until the reduces run, as a
// sort's do; the store spills them.

// shapeOutput shapes a task's output for the output kinds added beside
// the sort's (task.go).
func shapeOutput(ctx context.Context, s *arrow.Schema, recs []arrow.RecordBatch, o *outSpec) ([]arrow.RecordBatch, error) {
	switch o.Kind {
	case "agg_map":
		return aggMap(ctx, s, recs, o)
	case "agg_reduce":
		return aggReduce(ctx, s, recs, o)
	case "agg_split":
		return aggSplit(ctx, s, recs, o)
	case "shuffle_map":
		return shuffleMap(ctx, s, recs, o)
	case "shuffle_reduce":
		return shuffleReduce(ctx, s, recs, o)
	case "hash_split":
		return hashSplit(ctx, s, recs, o.GroupKeys, o.Parts)
	}
	return nil, errs.Malformedf(specWhat, "unknown output %q", o.Kind)
}

// defaultParts is the number of parts of a hash all-to-all without
// Partitions: the number of input blocks when the stage reads them from
// its source (read tasks or stored blocks), else Config.Parallelism.
func (a *allToAll) defaultParts() int {
	if n := a.mapCount(); n > 0 {
		return n
	}
	return a.r.cfg.Parallelism
}

// mapCount is the number of the stage's map tasks when known before they
// run (its source's read tasks or stored blocks; at least 1), else 0.
func (a *allToAll) mapCount() int {
	switch s := a.src.(type) {
	case *listUnits:
		return max(1, len(s.us))
	case *streamUnits:
		if l, ok := s.in.(*blockList); ok {
			return max(1, len(l.bs))
		}
	}
	return 0
}

// hashShuffle runs the map side of an aggregate or a random shuffle and
// returns the stream of its reduce tasks.
func (a *allToAll) hashShuffle(ctx context.Context) (blockStream, error) {
	parts := a.op.parts
	adaptive := parts == 0 && a.op.name == "aggregate"
	if parts == 0 {
		parts = a.defaultParts()
	}
	if adaptive {
		parts = min(parts, a.r.nodeCPUs())
	}
	if a.op.name == "random_shuffle" && keepsRows(a.ops) { // parts still too large are cut again below, for one more pass
		parts = a.fitParts(parts, a.inputEstimate())
	}
	var mapOut, reduceOut outSpec
	switch a.op.name {
	case "aggregate":
		mapOut = outSpec{Kind: "agg_map", GroupKeys: a.op.groupKeys, Aggs: a.op.aggs}
		reduceOut = outSpec{Kind: "agg_reduce", GroupKeys: a.op.groupKeys, Aggs: a.op.aggs}
	case "random_shuffle":
		mapOut = outSpec{Kind: "shuffle_map", Seed: a.op.seed}
		reduceOut = outSpec{Kind: "shuffle_reduce", Seed: a.op.seed}
	default:
		return nil, fmt.Errorf("data: %s is not a hash all-to-all", a.op.name)
	}
	mapOut.Parts = parts
	st := a.sub(a.op.name + "_map")
	limit := a.partLimit(parts) // what a reduce task should hold, for the parts as planned
	var first []block           // the first map tasks' pieces, when they ran first
	var ratio float64           // and its output's bytes per byte expected
	maps := a.mapCount()
	var err error
	if adaptive {
		if parts, first, ratio, err = a.refineParts(ctx, st, parts, limit, mapOut); err != nil {
			return nil, err
		}
		mapOut.Parts = parts
	}
	ms := a.mapStream(st, mapOut)
	ms.ratio = ratio // the map tasks need not run one at a time again
	var units, cut []unit
	if adaptive && !a.r.cfg.NoOverlap {
		split := outSpec{Kind: "agg_split", GroupKeys: a.op.groupKeys, Aggs: a.op.aggs}
		if units, cut, err = a.mapAndCut(ctx, ms, first, parts, maps, limit, split); err != nil {
			return nil, err
		}
	} else {
		pieces, err := drain(ctx, ms, a.r)
		if err != nil {
			releaseBlocks(first)
			return nil, err
		}
		units = byPart(append(first, pieces...), parts)
	}
	switch {
	case adaptive:
		units, err = a.splitLarge(ctx, units, limit, limit)
	case a.op.name == "aggregate": // NumPartitions(n): only a part that would not fit
		units, err = a.splitLarge(ctx, units, a.cutOver(), a.reduceLimit())
	}
	if err != nil {
		(&listUnits{us: cut}).close()
		return nil, err
	}
	if a.op.name == "random_shuffle" {
		if units, err = a.shuffleLarge(ctx, units); err != nil {
			return nil, err
		}
	}
	units = append(units, cut...)
	return &taskStream{r: a.r, st: a.sub(a.op.name + "_reduce"), src: &listUnits{us: units}, out: reduceOut, opts: a.opts}, nil
}

// keepsRows says whether ops make one row of each row, so that the
// input's size foretells what reaches an all-to-all's parts. An op that
// may drop rows (a filter, a function of a batch) may leave a little of
// a large input: raising the parts for its input's size would make many
// nearly empty parts, so the parts stay as asked and only what is too
// large after the map side is cut.
func keepsRows(ops []opSpec) bool {
	for _, o := range ops {
		switch o.Kind {
		case "map", "add_column", "select", "drop", "rename", "with_column", "project":
		default:
			return false
		}
	}
	return true
}

// inputEstimate is the bytes the stage's map tasks are expected to take:
// its read tasks' estimates or its stored blocks' sizes, 0 when the
// source cannot tell before they run.
func (a *allToAll) inputEstimate() int64 {
	var n int64
	switch s := a.src.(type) {
	case *listUnits:
		for _, u := range s.us {
			n += u.estimate
		}
	case *streamUnits:
		if l, ok := s.in.(*blockList); ok {
			for _, b := range l.bs {
				n += b.bytes
			}
		}
	}
	return n
}

// partLimit is the partials' bytes one reduce task of an aggregate in
// parts parts should hold: the run's budget shared by two tasks per
// part, at most a block and at least 1 MiB.
func (a *allToAll) partLimit(parts int) int64 {
	return max(1<<20, min(a.r.cfg.TargetMaxBlockSize, a.r.budget/int64(2*parts)))
}

// refineParts plans the parts of an aggregate whose map tasks read their
// input (a re-runnable task: a read, no stored block, no broadcast join)
// and whose count is known. The first map tasks, the run's first wave
// (one per free CPU), run with parts parts before the others; their
// pieces, scaled by the map tasks in all, project each part's total.
// When a part would be more than limit (one reduce task's share), the
// parts become as many as the projected totals need, and those first
// map tasks run again with the others: every group then reaches its
// reduce task through one cut, on the map side, instead of a second cut
// of the part by split tasks. Otherwise the first tasks' pieces are kept
// (first). It returns their output ratio too (taskStream's), so that
// the stream of the others need not learn it again. Any other stage
// keeps parts, and runs no task here.
func (a *allToAll) refineParts(ctx context.Context, st *subStats, parts int, limit int64, mapOut outSpec) (int, []block, float64, error) {
	l, ok := a.src.(*listUnits)
	if !ok || len(l.us) < 2 || a.broadcast != nil || a.r.cfg.NoOverlap {
		return parts, nil, 0, nil
	}
	for _, u := range l.us {
		if len(u.inputs) > 0 {
			return parts, nil, 0, nil
		}
	}
	maps, wave := len(l.us), min(a.r.firstWave(), len(l.us))
	one := &taskStream{r: a.r, st: st, src: &listUnits{us: l.us[:wave]}, ops: a.ops, out: mapOut, opts: a.opts}
	pieces, err := drain(ctx, one, a.r)
	if err != nil {
		return 0, nil, 0, err
	}
	var total, largest int64
	for _, b := range pieces {
		total += b.bytes
		largest = max(largest, b.bytes)
	}
	if largest*int64(maps) <= limit {
		l.us = l.us[wave:]
		return parts, pieces, one.ratio, nil
	}
	releaseBlocks(pieces)
	projected := float64(total) * float64(maps) / float64(wave) * subPartMargin
	return int(min(maxSubParts, max(int64(parts), int64(projected)/limit+1))), nil, one.ratio, nil
}

// maxSubParts bounds the sub-parts one oversized part is cut into.
const maxSubParts = 4096

// splitLarge cuts again each part of an aggregate whose partial
// aggregates are more than one reduce task should hold: a run's budget
// shared by two tasks per part, and at most a block. Split tasks take
// the part's pieces, up to that size each, combine them and cut them by
// a second hash of the group columns into sub-parts of about that size;
// a reduce task per sub-part follows. An aggregation into few groups (the
// usual case) has small parts and skips this; one whose every row is a
// group pays one more pass over its partials, instead of a reduce task
// whose input does not fit the store. Parts of more than over bytes are
// cut, into sub-parts of about limit; over is limit when the parts are
// atoll's choice, and cutOver when NumPartitions fixed them (only what
// would not fit is cut).
func (a *allToAll) splitLarge(ctx context.Context, units []unit, over, limit int64) ([]unit, error) {
	return a.cutParts(ctx, units, over, limit, "parts", func(_ context.Context, _ int, _ unit, k int) (outSpec, bool, error) {
		return outSpec{Kind: "agg_split", Parts: k, GroupKeys: a.op.groupKeys, Aggs: a.op.aggs}, true, nil
	})
}

// shuffleLarge cuts again each part of a random shuffle that is more than
// cutOver: split tasks permute the part's pieces (up to
// reduceLimit each) and cut them into sub-parts of about that size, as
// the map side cut the input; a reduce task permutes each sub-part. The
// rows of the part end as randomly ordered as the map side left them,
// for one more pass over that part.
func (a *allToAll) shuffleLarge(ctx context.Context, units []unit) ([]unit, error) {
	limit := a.reduceLimit()
	return a.cutParts(ctx, units, a.cutOver(), limit, "parts", func(_ context.Context, part int, _ unit, k int) (outSpec, bool, error) {
		return outSpec{Kind: "shuffle_map", Parts: k, Seed: a.op.seed ^ (uint64(part+1) * 0xbf58476d1ce4e5b9)}, true, nil
	})
}

// cutParts replaces each unit of more than over bytes by the reduce units
// of split tasks over its pieces (up to limit bytes each) into k
// sub-parts of about limit bytes. split gives those tasks' output for
// part i (u) and k; it may first run tasks of its own over u's pieces
// (without taking them), and ok false leaves the part whole. Stats notes
// how many parts (noun: "parts", "ranges") were cut.
func (a *allToAll) cutParts(ctx context.Context, units []unit, over, limit int64, noun string,
	split func(ctx context.Context, i int, u unit, k int) (out outSpec, ok bool, err error)) ([]unit, error) {
	out := make([]unit, 0, len(units))
	cut, subs, largest := 0, 0, int64(0)
	for i, u := range units {
		if u.estimate <= over {
			out = append(out, u)
			continue
		}
		k := int(min(maxSubParts, (u.estimate+limit-1)/limit))
		spec, ok, err := split(ctx, i, u, k)
		if err == nil && !ok {
			out = append(out, u)
			continue
		}
		var pieces []block
		if err == nil {
			ts := &taskStream{r: a.r, st: a.splitStats(), src: &listUnits{us: groupInputs(u.inputs, limit)}, out: spec, opts: a.opts}
			pieces, err = drain(ctx, ts, a.r)
		} else {
			releaseBlocks(u.inputs)
		}
		if err != nil {
			(&listUnits{us: append(out, units[i+1:]...)}).close()
			return nil, err
		}
		cut, subs, largest = cut+1, subs+k, max(largest, u.estimate)
		out = append(out, byPart(pieces, k)...)
	}
	if cut > 0 {
		a.stats.addNote(a.op.title(), fmt.Sprintf("%d of %d %s cut again, into %d (the largest %.1f MB, at most %.1f MB a task)",
			cut, len(units), noun, subs, float64(largest)/1e6, float64(limit)/1e6))
	}
	return out, nil
}

// splitStats is the stats of the stage's split tasks, made with the
// first.
func (a *allToAll) splitStats() *subStats {
	if a.splitSt == nil {
		a.splitSt = a.sub(a.op.name + "_split")
	}
	return a.splitSt
}

// reduceLimit is the most input bytes one task on a shuffle's reduce
// side should take when a part is cut: a quarter of the run's budget (a
// task holds its input and its output, and two tasks may run at once).
// A part up to twice that runs whole; one found larger only after the
// map side runs whole up to cutOver.
func (a *allToAll) reduceLimit() int64 { return max(1, a.r.budget/4) }

// cutOver is the size past which a part is cut again after the map side
// by tasks that read it twice or once more (a sort's range, a shuffle's
// or a fixed grouping's part): twice reduceLimit, and at least a quarter
// of the store. A reduce task holds its input and its output, so a part
// up to a quarter of the store still runs whole, beside others; cutting
// it would cost more passes than it saves.
func (a *allToAll) cutOver() int64 { return max(2*a.reduceLimit(), a.r.capacity/4) }

// chunkPart cuts a part's pieces into chunks of at most limit bytes (a
// larger piece alone), in order, when they are more than twice that.
func chunkPart(u unit, limit int64) []unit {
	if u.estimate <= 2*limit {
		return []unit{u}
	}
	return groupInputs(u.inputs, limit)
}

// fitParts is parts, raised where total bytes in parts even parts would
// make a part more than twice reduceLimit: a sort's range or a shuffle's
// part is sorted or permuted whole by one task, which must fit the
// store. The stage's stats say so when it raises them.
func (a *allToAll) fitParts(parts int, total int64) int {
	limit := a.reduceLimit()
	if total <= 2*limit*int64(parts) {
		return parts
	}
	need := int(min(maxSubParts, (total+limit-1)/limit))
	a.stats.addNote(a.op.title(), fmt.Sprintf("%d parts, not %d: %.1f MB of rows, at most %.1f MB a part (a quarter of the run's memory budget)",
		need, parts, float64(total)/1e6, float64(limit)/1e6))
	return need
}

// groupInputs packs blocks, in order, into units of at most limit bytes
// each (a larger block is a unit of its own).
func groupInputs(bs []block, limit int64) []unit {
	var us []unit
	var cur unit
	for _, b := range bs {
		if len(cur.inputs) > 0 && cur.estimate+b.bytes > limit {
			us = append(us, cur)
			cur = unit{}
		}
		cur.inputs = append(cur.inputs, b)
		cur.estimate += b.bytes
	}
	if len(cur.inputs) > 0 {
		us = append(us, cur)
	}
	return us
}
