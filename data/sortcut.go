package data

import (
	"context"
	"fmt"
)

// A sort's range whose pieces came out larger than one merge task should
// take: the ranges were chosen before the split, from the input's size
// when it was known, and a filter, a function or a wrong estimate can
// leave a range more than the store holds. Such a range is cut again,
// like a grouping's part, by a second sample and split of its own pieces.

// cutRanges replaces each range of more than cutOver by k sub-ranges of
// about reduceLimit: sample tasks over its pieces (up to
// reduceLimit each) give bounds inside the range, and split tasks cut the
// pieces by them. The sub-ranges' merges, in order, sort the range as
// its one merge would. It costs the range two more reads and one more
// write; a range that fits is left as it is.
func (a *allToAll) cutRanges(ctx context.Context, units []unit) ([]unit, error) {
	limit := a.reduceLimit()
	out := make([]unit, 0, len(units))
	cut, subs, largest := 0, 0, int64(0)
	for i, u := range units {
		if u.estimate <= a.cutOver() {
			out = append(out, u)
			continue
		}
		k := int(min(maxSubParts, (u.estimate+limit-1)/limit))
		parts, err := a.cutRange(ctx, u, k, limit)
		if err != nil {
			(&listUnits{us: append(out, units[i+1:]...)}).close()
			return nil, err
		}
		cut, subs, largest = cut+1, subs+len(parts), max(largest, u.estimate)
		out = append(out, parts...)
	}
	if cut > 0 {
		a.stats.addNote(a.op.title(), fmt.Sprintf("%d of %d ranges cut again, into %d (the largest %.1f MB, at most %.1f MB a task)",
			cut, len(units), subs, float64(largest)/1e6, float64(limit)/1e6))
	}
	return out, nil
}

// cutRange cuts one range's pieces (u's inputs, which it takes) into at
// most k sub-ranges.
func (a *allToAll) cutRange(ctx context.Context, u unit, k int, limit int64) ([]unit, error) {
	var samples [][]byte
	ss := &taskStream{r: a.r, st: a.splitStats(), src: &listUnits{us: groupInputs(borrowedCopy(u.inputs), limit)},
		out: outSpec{Kind: "key_sample", Keys: a.op.keys, Samples: 64}, opts: a.opts}
	ss.onMeta = func(m *taskMeta) { samples = append(samples, m.Samples) }
	if _, err := drain(ctx, ss, a.r); err != nil {
		releaseBlocks(u.inputs)
		return nil, err
	}
	bounds, err := chooseBounds(ctx, samples, k, a.op.keys)
	if err != nil || bounds == nil { // bounds nil: no row to cut by (not expected of a range this large)
		if err != nil {
			releaseBlocks(u.inputs)
		}
		return []unit{u}, err
	}
	ts := &taskStream{r: a.r, st: a.splitStats(), src: &listUnits{us: groupInputs(u.inputs, limit)},
		out: outSpec{Kind: "split", Parts: k, Keys: a.op.keys, Bounds: bounds}, opts: a.opts}
	pieces, err := drain(ctx, ts, a.r)
	if err != nil {
		return nil, err
	}
	return byPart(pieces, k), nil
}
