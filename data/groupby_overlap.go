package data

import (
	"context"
)

// A GroupBy's oversized parts are cut while its map tasks still run. A
// part whose partial aggregates are more than one reduce task should
// hold (partLimit) is combined and cut again by a second hash into
// sub-parts before its reduce (splitLarge). The cut needs no other
// part's pieces and no later map task's: as soon as a part holds a
// limit's worth of pieces, a split task takes them, beside the maps
// still running, and cuts them into as many sub-parts as the part's
// projected total needs (its bytes so far, scaled by the map tasks
// left). The reduce side thus starts while the map side runs, on the
// same work the cut would do after the last map (no byte moves more),
// and what waits in the store for the last map is the cut pieces, each
// split task having combined the groups its pieces share. Where the map
// tasks' number is not known (a stream from an earlier stage), parts are
// cut after the last map, as before.

// subPartMargin: a part's sub-parts are sized for its projected total
// times this, so that a projection a little short still leaves each
// sub-part within the limit.
const subPartMargin = 1.25

// cutter cuts one aggregate's oversized parts as its map tasks finish.
type cutter struct {
	parts int
	maps  int   // the map tasks in all (0: not known)
	limit int64 // a part's bytes past which it is cut
	taken int   // map pieces taken (parts per map task, in part order)
	// per part: its map pieces not yet cut and their bytes, every map
	// byte it took, and its sub-parts (0: not cut)
	pieces [][]block
	held   []int64
	seen   []int64
	k      []int
	// subs[p][j]: the pieces of sub-part j of part p
	subs [][][]block
	// inFlight is the part of each split task in flight, in submission
	// order (the order its stream returns their pieces); got counts the
	// pieces of the oldest returned so far
	inFlight []int
	got      int
	queue    *queueUnits
}

func newCutter(parts, maps int, limit int64) *cutter {
	return &cutter{parts: parts, maps: maps, limit: limit, pieces: make([][]block, parts), held: make([]int64, parts),
		seen: make([]int64, parts), k: make([]int, parts), subs: make([][][]block, parts), queue: &queueUnits{}}
}

// addPiece takes the next map piece; it queues a cut of its part when the
// part holds a limit's worth and its sub-parts can be sized.
func (c *cutter) addPiece(b block) {
	p := c.taken % c.parts
	c.taken++
	c.pieces[p] = append(c.pieces[p], b)
	c.held[p] += b.bytes
	c.seen[p] += b.bytes
	if c.held[p] < c.limit || c.maps == 0 {
		return
	}
	if c.k[p] == 0 {
		mapped := (c.taken-1)/c.parts + 1 // the map tasks part p has a piece of
		projected := float64(c.seen[p]) * float64(c.maps) / float64(mapped) * subPartMargin
		c.k[p] = int(min(maxSubParts, max(2, (int64(projected)+c.limit-1)/c.limit)))
		c.subs[p] = make([][]block, c.k[p])
	}
	c.cut(p)
}

// cut queues a split task of part p's pieces.
func (c *cutter) cut(p int) {
	c.queue.push(unit{inputs: c.pieces[p], estimate: c.held[p], parts: c.k[p]})
	c.inFlight = append(c.inFlight, p)
	c.pieces[p], c.held[p] = nil, 0
}

// mapsDone queues the cuts of the pieces the cut parts have left.
func (c *cutter) mapsDone() {
	for p := range c.parts {
		if c.k[p] > 0 && len(c.pieces[p]) > 0 {
			c.cut(p)
		}
	}
	c.queue.closed = true
}

// addCut takes the next piece a split task returned.
func (c *cutter) addCut(b block) {
	p := c.inFlight[0]
	c.subs[p][c.got] = append(c.subs[p][c.got], b)
	if c.got++; c.got == c.k[p] {
		c.inFlight, c.got = c.inFlight[1:], 0
	}
}

// units hands over a reduce unit per part not cut (whole), and one per
// sub-part of the parts cut (cut).
func (c *cutter) units() (whole, cut []unit) {
	for p := range c.parts {
		if c.k[p] == 0 {
			whole = append(whole, unit{inputs: c.pieces[p], estimate: c.held[p]})
			continue
		}
		for _, s := range c.subs[p] {
			u := unit{inputs: s}
			for _, b := range s {
				u.estimate += b.bytes
			}
			cut = append(cut, u)
		}
	}
	c.pieces, c.subs = make([][]block, c.parts), make([][][]block, c.parts)
	return whole, cut
}

// release drops every piece the cutter holds (a run that failed).
func (c *cutter) release() {
	whole, cut := c.units()
	(&listUnits{us: append(whole, cut...)}).close()
	c.queue.close()
}

// mapAndCut runs an aggregate's map stream ms (parts pieces per task,
// maps tasks in all, 0: not known; first holds the first map task's
// pieces when it ran already, alone) and cuts each part past limit as its
// pieces come, through split tasks of spec split (its Parts set per
// part). It returns, once every map and split task has finished, a
// reduce unit per part not cut (for splitLarge to weigh) and one per
// sub-part of the parts cut.
func (a *allToAll) mapAndCut(ctx context.Context, ms *taskStream, first []block, parts, maps int, limit int64, split outSpec) (whole, cut []unit, err error) {
	c := newCutter(parts, maps, limit)
	// the split tasks' stats appear with the first cut
	ss := &taskStream{r: a.r, src: c.queue, out: split, opts: a.opts}
	add := func(b block) {
		c.addPiece(b)
		if ss.st == nil && len(c.queue.us) > 0 {
			ss.st = a.splitStats()
		}
	}
	for _, b := range first {
		add(b)
	}
	fail := func(err error) ([]unit, []unit, error) {
		ms.close()
		ss.close()
		c.release()
		return nil, nil, err
	}
	for {
		b, ok, err := ms.next(ctx)
		if err != nil {
			return fail(err)
		}
		if !ok {
			break
		}
		add(b)
		if err := ss.fill(ctx); err != nil {
			return fail(err)
		}
		done, err := ss.poll(ctx)
		if err != nil {
			return fail(err)
		}
		for _, b := range done {
			c.addCut(b)
		}
	}
	c.mapsDone()
	for {
		b, ok, err := ss.next(ctx)
		if err != nil {
			return fail(err)
		}
		if !ok {
			break
		}
		c.addCut(b)
	}
	whole, cut = c.units()
	return whole, cut, nil
}
