package memsample

import (
	"cmp"
	"slices"
	"time"
)

// Role is a node's role in its cluster.
type Role string

// The roles of nodes.
const (
	RoleHead   Role = "head"   // runs the control plane (also a driver's embedded single node)
	RoleWorker Role = "worker" // a node that joined the cluster to run tasks
	RoleDriver Role = "driver" // a driver's own node: holds the objects it puts
)

// rank orders the columns of a table: heads, workers, drivers.
func (r Role) rank() int {
	switch r {
	case RoleHead:
		return 0
	case RoleWorker:
		return 1
	case RoleDriver:
		return 2
	}
	return 3
}

// Reading is one node's object store at one moment, as a Source reads it.
type Reading struct {
	// NodeID is the node's id (hex).
	NodeID   string
	Role     Role
	Hostname string
	// Used is the bytes allocated to objects in the store, Capacity the
	// store's hard limit, Spilled the bytes of live objects on disk now.
	Used, Capacity, Spilled uint64
}

// Samples is what a Sampler recorded: the times of its samples, the
// cluster total of each, and each node's series.
type Samples struct {
	// Start is when the first sample was taken.
	Start time.Time
	// Interval is the sampler's interval; Stride the ticks each sample
	// stands for (1 unless the sampler reached its bound and merged
	// samples: see the package doc).
	Interval time.Duration
	Stride   int
	// Times are the samples' offsets from Start, ascending.
	Times []time.Duration
	// Total is the cluster total of each sample: the sum of the used
	// bytes of the nodes in it (the maximum over its ticks for a merged
	// sample).
	Total []uint64
	// Nodes are the nodes seen, one Series each, heads first, then
	// workers, then drivers, each group in the order they first
	// appeared.
	Nodes []Series
	// ReadErrors counts the ticks whose read failed (no sample was
	// taken); UntrackedNodes the nodes that got no column because
	// MaxNodes nodes had one already (their bytes are in Total; counted
	// up to MaxNodes).
	ReadErrors     uint64
	UntrackedNodes int
}

// Series is one node's store over the samples: element i of each slice
// belongs to sample i (Samples.Times[i]), and counts only where
// Present[i] (the node was live and reporting then).
type Series struct {
	NodeID   string
	Role     Role
	Hostname string
	Used     []uint64
	Capacity []uint64
	Spilled  []uint64
	Present  []bool
}

// Label names a node in tables and legends: its short id (8 hex digits)
// and role, e.g. "1a2b3c4d (head)".
func (s *Series) Label() string {
	id := s.NodeID
	if len(id) > 8 {
		id = id[:8]
	}
	return id + " (" + string(s.Role) + ")"
}

// Peak is the largest value of a series and the offset of its first
// sample with that value.
type Peak struct {
	Bytes uint64
	At    time.Duration
}

// Peak is the largest cluster total.
func (s *Samples) Peak() Peak {
	var p Peak
	for i, v := range s.Total {
		if v > p.Bytes {
			p = Peak{v, s.Times[i]}
		}
	}
	return p
}

// Peak is the largest store use of the node in times (the Samples'
// Times).
func (s *Series) Peak(times []time.Duration) Peak {
	var p Peak
	for i, v := range s.Used {
		if s.Present[i] && v > p.Bytes {
			p = Peak{v, times[i]}
		}
	}
	return p
}

// Defaults and bounds of a Sampler (see Options).
const (
	DefaultMaxSamples = 1 << 20
	// maxCells bounds the node cells the samples hold (32 bytes each).
	maxCells = 1 << 22
	// minRows is the fewest samples kept, however many nodes there are.
	minRows = 64
)

// cell is one node's reading in one sample.
type cell struct {
	used, capacity, spilled uint64
	present                 bool
}

// row is one sample: cells by column index (a column past the end: the
// node was absent).
type row struct {
	at    time.Duration
	ticks int
	total uint64
	cells []cell
}

type column struct {
	id       string
	role     Role
	hostname string
}

// table is the recorded samples: rows in time order, a column per node
// seen. Not safe for concurrent use (the Sampler guards it).
type table struct {
	maxRows  int
	maxNodes int
	stride   int
	cols     []column
	index    map[string]int
	rows     []row
	// untracked are the nodes that got no column (at most maxNodes of
	// them are remembered).
	untracked map[string]struct{}
}

func newTable(maxRows, maxNodes int) *table {
	return &table{maxRows: maxRows, maxNodes: maxNodes, stride: 1, index: map[string]int{}, untracked: map[string]struct{}{}}
}

// add records the readings of one tick at offset at: a new sample, or,
// while the last sample stands for fewer ticks than the stride, merged
// into it. Readings of a node given twice count once (the last). It
// returns the tick's cluster total and number of nodes.
func (t *table) add(at time.Duration, readings []Reading) (total uint64, nodes int) {
	cells := make([]cell, len(t.cols))
	lastOf := make(map[string]int, len(readings))
	for i, r := range readings {
		lastOf[r.NodeID] = i
	}
	for i, r := range readings {
		if lastOf[r.NodeID] != i {
			continue
		}
		total += r.Used
		c, ok := t.column(r)
		if !ok {
			continue
		}
		if c >= len(cells) {
			cells = append(cells, make([]cell, c+1-len(cells))...)
		}
		cells[c] = cell{used: r.Used, capacity: r.Capacity, spilled: r.Spilled, present: true}
	}
	for len(cells) > 0 && !cells[len(cells)-1].present {
		cells = cells[:len(cells)-1]
	}
	if n := len(t.rows); n > 0 && t.rows[n-1].ticks < t.stride {
		t.rows[n-1].merge(row{at: at, ticks: 1, total: total, cells: cells})
		return total, len(lastOf)
	}
	t.rows = append(t.rows, row{at: at, ticks: 1, total: total, cells: slices.Clip(cells)})
	for len(t.rows) > t.limit() {
		t.halve()
	}
	return total, len(lastOf)
}

// column returns the column of r's node, adding one for a new node
// unless maxNodes have one.
func (t *table) column(r Reading) (int, bool) {
	if c, ok := t.index[r.NodeID]; ok {
		if r.Hostname != "" {
			t.cols[c].hostname = r.Hostname
		}
		return c, true
	}
	if len(t.cols) >= t.maxNodes {
		if len(t.untracked) < t.maxNodes {
			t.untracked[r.NodeID] = struct{}{}
		}
		return 0, false
	}
	t.index[r.NodeID] = len(t.cols)
	t.cols = append(t.cols, column{id: r.NodeID, role: r.Role, hostname: r.Hostname})
	return len(t.cols) - 1, true
}

// limit is the most rows kept: maxRows, fewer when the columns would
// make them more than maxCells cells.
func (t *table) limit() int {
	l := t.maxRows
	if len(t.cols) > 0 {
		l = min(l, max(minRows, maxCells/len(t.cols)))
	}
	return max(l, 2)
}

// halve merges the rows pairwise and doubles the stride; an odd last row
// stays on its own and takes the next ticks.
func (t *table) halve() {
	n := len(t.rows)
	for i := 0; i < n/2; i++ {
		r := t.rows[2*i]
		r.merge(t.rows[2*i+1])
		t.rows[i] = r
	}
	if n%2 == 1 {
		t.rows[n/2] = t.rows[n-1]
	}
	clear(t.rows[(n+1)/2:])
	t.rows = t.rows[:(n+1)/2]
	t.stride *= 2
}

// merge folds o (a later sample) into r: r keeps its time and takes the
// maximum of each value.
func (r *row) merge(o row) {
	r.ticks += o.ticks
	r.total = max(r.total, o.total)
	if len(o.cells) > len(r.cells) {
		r.cells = append(r.cells, make([]cell, len(o.cells)-len(r.cells))...)
	}
	for i, c := range o.cells {
		if !c.present {
			continue
		}
		m := &r.cells[i]
		m.used, m.capacity, m.spilled = max(m.used, c.used), max(m.capacity, c.capacity), max(m.spilled, c.spilled)
		m.present = true
	}
}

// samples copies the table out.
func (t *table) samples(start time.Time, interval time.Duration, readErrors uint64) *Samples {
	s := &Samples{Start: start, Interval: interval, Stride: t.stride, ReadErrors: readErrors, UntrackedNodes: len(t.untracked),
		Times: make([]time.Duration, len(t.rows)), Total: make([]uint64, len(t.rows))}
	for i, r := range t.rows {
		s.Times[i], s.Total[i] = r.at, r.total
	}
	order := make([]int, len(t.cols))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(t.cols[a].role.rank(), t.cols[b].role.rank()) })
	n := len(t.rows)
	for _, c := range order {
		col := t.cols[c]
		se := Series{NodeID: col.id, Role: col.role, Hostname: col.hostname,
			Used: make([]uint64, n), Capacity: make([]uint64, n), Spilled: make([]uint64, n), Present: make([]bool, n)}
		for i, r := range t.rows {
			if c < len(r.cells) && r.cells[c].present {
				x := r.cells[c]
				se.Used[i], se.Capacity[i], se.Spilled[i], se.Present[i] = x.used, x.capacity, x.spilled, true
			}
		}
		s.Nodes = append(s.Nodes, se)
	}
	return s
}
