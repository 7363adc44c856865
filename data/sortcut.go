package data

import "context"

// A sort's range whose pieces came out larger than one merge task should
// take: the ranges were chosen before the split, from the input's size
// when it was known, and a filter, a function or a wrong estimate can
// leave a range more than the store holds. Such a range is cut again,
// like a grouping's part, by a second sample and split of its own pieces.

// cutRanges replaces each range of more than cutOver by k sub-ranges of
// about reduceLimit: sample tasks over its pieces (up to reduceLimit
// each) give bounds inside the range, and split tasks cut the pieces by
// them (cutParts). The sub-ranges' merges, in order, sort the range as
// its one merge would. It costs the range two more reads and one more
// write; a range that fits is left as it is.
func (a *allToAll) cutRanges(ctx context.Context, units []unit) ([]unit, error) {
	limit := a.reduceLimit()
	return a.cutParts(ctx, units, a.cutOver(), limit, "ranges", func(ctx context.Context, _ int, u unit, k int) (outSpec, bool, error) {
		var samples [][]byte
		ss := &taskStream{r: a.r, st: a.splitStats(), src: &listUnits{us: groupInputs(borrowedCopy(u.inputs), limit)},
			out: outSpec{Kind: "key_sample", Keys: a.op.keys, Samples: 64}, opts: a.opts}
		ss.onMeta = func(m *taskMeta) { samples = append(samples, m.Samples) }
		if _, err := drain(ctx, ss, a.r); err != nil {
			return outSpec{}, false, err
		}
		bounds, err := chooseBounds(ctx, samples, k, a.op.keys)
		// bounds nil: no row to cut by (not expected of a range this large)
		return outSpec{Kind: "split", Parts: k, Keys: a.op.keys, Bounds: bounds}, bounds != nil, err
	})
}
