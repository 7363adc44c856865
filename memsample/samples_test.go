package memsample

import (
	"slices"
	"testing"
	"time"
)

func reading(id string, role Role, used uint64) Reading {
	return Reading{NodeID: id, Role: role, Used: used, Capacity: 1 << 30, Spilled: used / 2}
}

// Nodes get columns heads, workers, drivers, each in order of first
// appearance; a node absent from a tick has no cell there; the total is
// the sum over the nodes present.
func TestTableColumns(t *testing.T) {
	tb := newTable(100, 10)
	tb.add(0, []Reading{reading("d1", RoleDriver, 5), reading("w2", RoleWorker, 20)})
	tb.add(time.Second, []Reading{reading("d1", RoleDriver, 6), reading("w2", RoleWorker, 21), reading("h", RoleHead, 100), reading("w1", RoleWorker, 1)})
	tb.add(2*time.Second, []Reading{reading("h", RoleHead, 101), reading("w1", RoleWorker, 2)}) // d1 and w2 gone
	s := tb.samples(time.Unix(100, 0), time.Second, 3)
	var order []string
	for _, n := range s.Nodes {
		order = append(order, n.NodeID)
	}
	if want := []string{"h", "w2", "w1", "d1"}; !slices.Equal(order, want) {
		t.Fatalf("column order %v, want %v", order, want)
	}
	if want := []uint64{25, 128, 103}; !slices.Equal(s.Total, want) {
		t.Errorf("totals %v, want %v", s.Total, want)
	}
	if want := []time.Duration{0, time.Second, 2 * time.Second}; !slices.Equal(s.Times, want) {
		t.Errorf("times %v, want %v", s.Times, want)
	}
	h, w2 := s.Nodes[0], s.Nodes[1]
	if !slices.Equal(h.Present, []bool{false, true, true}) || !slices.Equal(h.Used, []uint64{0, 100, 101}) {
		t.Errorf("head: %+v", h)
	}
	if !slices.Equal(w2.Present, []bool{true, true, false}) || !slices.Equal(w2.Spilled, []uint64{10, 10, 0}) || w2.Capacity[0] != 1<<30 {
		t.Errorf("worker w2: %+v", w2)
	}
	if p := s.Peak(); p.Bytes != 128 || p.At != time.Second {
		t.Errorf("peak %+v", p)
	}
	if p := h.Peak(s.Times); p.Bytes != 101 || p.At != 2*time.Second {
		t.Errorf("head's peak %+v", p)
	}
	if s.Stride != 1 || s.ReadErrors != 3 || s.Interval != time.Second || !s.Start.Equal(time.Unix(100, 0)) {
		t.Errorf("samples %+v", s)
	}
	if got := h.Label(); got != "h (head)" {
		t.Errorf("label %q", got)
	}
	long := Series{NodeID: "1a2b3c4d5e6f", Role: RoleWorker}
	if got := long.Label(); got != "1a2b3c4d (worker)" {
		t.Errorf("label %q", got)
	}
}

// A node given twice in one tick counts once; nodes past maxNodes get no
// column but count in the total.
func TestTableBounds(t *testing.T) {
	tb := newTable(100, 2)
	tb.add(0, []Reading{reading("a", RoleHead, 1), reading("a", RoleHead, 2), reading("b", RoleWorker, 10), reading("c", RoleWorker, 100)})
	tb.add(time.Second, []Reading{reading("c", RoleWorker, 100), reading("d", RoleWorker, 1000)})
	s := tb.samples(time.Time{}, time.Second, 0)
	if len(s.Nodes) != 2 || s.UntrackedNodes != 2 {
		t.Fatalf("%d columns, %d untracked; want 2, 2", len(s.Nodes), s.UntrackedNodes)
	}
	if want := []uint64{112, 1100}; !slices.Equal(s.Total, want) {
		t.Errorf("totals %v, want %v", s.Total, want)
	}
	if s.Nodes[0].Used[0] != 2 {
		t.Errorf("a node given twice: %d, want the last reading", s.Nodes[0].Used[0])
	}
}

// Past maxRows, samples merge pairwise: the table stays bounded, times
// stay ascending from 0, and the maxima (peaks) survive.
func TestTableDecimation(t *testing.T) {
	const maxRows, ticks = 8, 1000
	tb := newTable(maxRows, 10)
	for i := range ticks {
		used := uint64(i % 7)
		if i == 437 {
			used = 1 << 40
		}
		readings := []Reading{reading("a", RoleHead, used)}
		if i >= 900 { // joins late
			readings = append(readings, reading("b", RoleWorker, 3))
		}
		tb.add(time.Duration(i)*time.Millisecond, readings)
		if len(tb.rows) > maxRows {
			t.Fatalf("tick %d: %d rows, bound %d", i, len(tb.rows), maxRows)
		}
	}
	s := tb.samples(time.Time{}, time.Millisecond, 0)
	if s.Stride != 128 {
		t.Errorf("stride %d, want 128 (1000 ticks in at most 8 rows)", s.Stride)
	}
	if s.Times[0] != 0 || !slices.IsSorted(s.Times) {
		t.Errorf("times %v", s.Times)
	}
	for i, at := range s.Times {
		if at != time.Duration(i*s.Stride)*time.Millisecond {
			t.Errorf("sample %d at %v, want the time of its first tick %v", i, at, time.Duration(i*s.Stride)*time.Millisecond)
		}
	}
	if p := s.Peak(); p.Bytes != 1<<40 || p.At != 384*time.Millisecond {
		t.Errorf("peak %+v, want the spike at tick 437", p)
	}
	if p := s.Nodes[0].Peak(s.Times); p.Bytes != 1<<40 || p.At != 384*time.Millisecond {
		t.Errorf("node peak %+v, want 1TiB in the sample starting at 384ms", p)
	}
	b := s.Nodes[1]
	if b.Present[0] || !b.Present[len(b.Present)-1] {
		t.Errorf("late node present %v", b.Present)
	}
	// Many nodes lower the bound: at most maxCells cells.
	wide := newTable(1<<20, 1<<20)
	wide.cols = make([]column, 1<<16)
	if l := wide.limit(); l != maxCells/(1<<16) {
		t.Errorf("limit with 65536 nodes: %d", l)
	}
	wide.cols = make([]column, 1<<20)
	if l := wide.limit(); l != minRows {
		t.Errorf("limit with 1Mi nodes: %d, want %d", l, minRows)
	}
}
