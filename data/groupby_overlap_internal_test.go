package data

import "testing"

// TestCutterScript scripts the cutter: a part is cut once it holds a
// limit's worth, into the sub-parts its projected total needs; split
// tasks' pieces go to their part's sub-parts in order; after the last
// map the cut parts' leftovers are cut too, and a part never over the
// limit stays whole. Without the map count nothing is cut early.
func TestCutterScript(t *testing.T) {
	const mib = 1 << 20
	c := newCutter(2, 10, 4*mib) // 2 parts, 10 map tasks, 4 MiB a reduce task
	piece := func(n int64) block { return block{bytes: n * mib} }
	for range 2 { // maps 1 and 2: part 0 gets 2 MiB each, part 1 1 MiB
		c.addPiece(piece(2))
		c.addPiece(piece(1))
	}
	if len(c.queue.us) != 1 {
		t.Fatalf("after part 0 reached its limit: %d cuts queued, want 1", len(c.queue.us))
	}
	// part 0: 4 MiB over 2 of 10 maps, 20 MiB projected, 25 MiB with the margin: 7 sub-parts
	if u := c.queue.us[0]; len(u.inputs) != 2 || u.parts != 7 || c.k[0] != 7 || c.k[1] != 0 {
		t.Fatalf("the cut: %d pieces into %d sub-parts (k %v), want 2 into 7", len(u.inputs), u.parts, c.k)
	}
	for j := range 7 { // the split task returns its 7 pieces
		c.addCut(block{bytes: int64(j)})
	}
	if len(c.inFlight) != 0 || len(c.subs[0][6]) != 1 || c.subs[0][6][0].bytes != 6 {
		t.Fatalf("after the cut returned: %d in flight, sub-parts %v", len(c.inFlight), c.subs[0])
	}
	c.addPiece(piece(1)) // map 3, part 0: 1 MiB left over
	c.addPiece(piece(1))
	c.mapsDone()
	if len(c.queue.us) != 2 || c.queue.us[1].parts != 7 || len(c.queue.us[1].inputs) != 1 || !c.queue.closed {
		t.Fatalf("after the last map: %+v (closed %v), want part 0's leftover cut into 7", c.queue.us[1:], c.queue.closed)
	}
	for j := range 7 {
		c.addCut(block{bytes: int64(10 + j)})
	}
	whole, cut := c.units()
	if len(whole) != 1 || len(whole[0].inputs) != 3 || whole[0].estimate != 3*mib {
		t.Fatalf("part 1 whole: %+v, want its 3 pieces (3 MiB)", whole)
	}
	if len(cut) != 7 || len(cut[3].inputs) != 2 || cut[3].estimate != 3+13 {
		t.Fatalf("part 0's sub-parts: %+v, want 7 of 2 pieces each", cut)
	}

	// the map count unknown (a stream from an earlier stage): no cut
	c = newCutter(2, 0, 4*mib)
	for range 10 {
		c.addPiece(piece(5))
	}
	c.mapsDone()
	if whole, cut := c.units(); len(c.queue.us) != 0 || len(whole) != 2 || len(cut) != 0 {
		t.Fatalf("with no map count: %d cuts, %d whole parts, %d sub-parts", len(c.queue.us), len(whole), len(cut))
	}
}
