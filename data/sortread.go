package data

import (
	"context"

	"github.com/apache/arrow-go/v18/arrow"
)

// A sort's input, read twice instead of kept. A sort must see samples of
// every row's keys before it can split any row into its range, so its
// input is whole before the first split. Kept in the store, an input
// larger than the store is spilled and restored on its way to the split,
// and then the split's pieces are spilled and restored again on their
// way to the merges: every byte crosses the disk twice. When the input
// is a read that can run again (Parquet row groups or a range, with no
// registered function in the stage), the sample pass reads only what it
// samples and keeps nothing, and the split pass reads the input again:
// the pieces are the only bytes the store holds or spills.

// sortRereads is the sort's sample units and split units, and the blocks
// the input will be (the default number of ranges), when the sort reads
// its input twice: when the sample pass reads fewer columns than the
// split pass (the keys, and what the ops before the sort need to make
// them), when the input is a range with no op, or when the input is
// larger than the run's budget (so that keeping it would spill it). ok
// is false otherwise.
func (a *allToAll) sortRereads() (sample, split []unit, blocks int, ok bool) {
	l, isList := a.src.(*listUnits)
	if !isList || len(l.us) == 0 || a.broadcast != nil {
		return nil, nil, 0, false
	}
	for _, o := range a.ops {
		if calls, known := opKinds[o.Kind]; !known || calls || o.Kind == "join_probe" || o.Kind == "limit" || writeExt(o.Kind) != "" {
			return nil, nil, 0, false
		}
	}
	var total int64
	tgt := max(1, a.r.cfg.TargetMaxBlockSize)
	for _, u := range l.us {
		if u.read == nil || len(u.inputs) > 0 || u.zip != nil || u.join != nil || u.ops != nil {
			return nil, nil, 0, false
		}
		if u.read.Kind != "parquet" && u.read.Kind != "range" {
			return nil, nil, 0, false
		}
		total += u.estimate
		blocks += int(max(1, (u.estimate+tgt-1)/tgt))
	}
	// a range is generated, cheaper than kept when nothing runs on it
	cheap := a.sampleColumns != nil || (len(a.ops) == 0 && l.us[0].read.Kind == "range")
	if !cheap && total <= a.r.budget {
		return nil, nil, 0, false
	}
	split = l.us
	l.us = nil // the streams below own them now
	sample = make([]unit, len(split))
	for i, u := range split {
		r := *u.read
		if r.Kind == "parquet" && a.sampleColumns != nil {
			r.Columns = a.sampleColumns
		}
		sample[i] = unit{read: &r, estimate: u.estimate}
	}
	return sample, split, blocks, true
}

// sortSampleColumns is the columns a sort's sample pass reads: what the
// stage's ops (ops[0] the read, schemas checkOps's) need for the sort's
// keys; nil when that is every column the read reads (columns; nil:
// every one of the source's).
func sortSampleColumns(ops []*logicalOp, schemas []*arrow.Schema, keys []SortKey, columns []string) []string {
	if schemas[0] == nil {
		return nil
	}
	last := make([]string, len(keys))
	for i, k := range keys {
		last[i] = k.Column
	}
	reads := len(columns)
	if columns == nil {
		reads = schemas[0].NumFields()
	}
	if sample := columnsRead(ops, schemas, last); sample != nil && len(sample) < reads {
		return sample
	}
	return nil
}

// sortByRereading runs a sort's sample pass over sample, which keeps no
// block, then its split pass over split, reading the input again, and
// returns the stream of its merge tasks.
func (a *allToAll) sortByRereading(ctx context.Context, sample, split []unit, parts int) (blockStream, error) {
	var samples [][]byte
	ss := &taskStream{r: a.r, st: a.sub("sort_sample"), src: &listUnits{us: sample}, ops: a.ops,
		out: outSpec{Kind: "key_sample", Keys: a.op.keys, Samples: 64}, opts: a.opts}
	ss.onMeta = func(m *taskMeta) { samples = append(samples, m.Samples) }
	if _, err := drain(ctx, ss, a.r); err != nil {
		(&listUnits{us: split}).close()
		return nil, err
	}
	bounds, err := chooseBounds(ctx, samples, parts, a.op.keys)
	if err != nil {
		(&listUnits{us: split}).close()
		return nil, err
	}
	if bounds == nil { // no rows at all: the stage's (empty) blocks, as they come
		return &taskStream{r: a.r, st: a.sub("sort_map"), src: &listUnits{us: split}, ops: a.ops, out: outSpec{Kind: "blocks"}, opts: a.opts}, nil
	}
	ms := &taskStream{r: a.r, st: a.sub("sort_map"), src: &listUnits{us: split}, ops: a.ops,
		out: outSpec{Kind: "split", Parts: parts, Keys: a.op.keys, Bounds: bounds}, opts: a.opts}
	pieces, err := drain(ctx, ms, a.r)
	if err != nil {
		return nil, err
	}
	return a.mergeSorted(ctx, byPart(pieces, parts))
}

// mergeSorted is the stream of a sort's merge tasks, one per range (a
// range too large for one cut again first: cutRanges).
func (a *allToAll) mergeSorted(ctx context.Context, us []unit) (blockStream, error) {
	us, err := a.cutRanges(ctx, us)
	if err != nil {
		return nil, err
	}
	return &taskStream{r: a.r, st: a.sub("sort_reduce"), src: &listUnits{us: us}, out: outSpec{Kind: "merge_sort", Keys: a.op.keys}, opts: a.opts}, nil
}
