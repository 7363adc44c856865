package data

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/atoll-runtime/atoll"
	"github.com/atoll-runtime/atoll/atollpb"
)

// block is one block as the driver knows it: its ref and metadata.
type block struct {
	ref    atoll.ObjectRef[atoll.Raw]
	rows   int64
	bytes  int64
	schema *arrow.Schema
	// borrowed blocks belong to a dataset (FromArrow, Materialize): a
	// run passes them to tasks but never releases them.
	borrowed bool
}

func (b block) release() {
	if !b.borrowed && !b.ref.IsZero() {
		b.ref.Release()
	}
}

// blockStream yields a stage's output blocks in order.
type blockStream interface {
	next(ctx context.Context) (block, bool, error)
	// close releases what the stream holds (a consumer that stops early).
	close()
}

// unit is the input of one task: a read, or blocks.
type unit struct {
	read   *readSpec
	zip    *zipSpec  // inputs are a left block then the right blocks it spans
	join   *joinSpec // a shuffled join's task: inputs are left pieces; the right's are lazy
	ops    []opSpec  // run before the stream's ops (a Split's slice)
	inputs []block
	// lazy: blocks the task reads itself when it needs them, passed as
	// one argument of their refs after the inputs (a shuffled join's
	// right pieces: joinSpec.LazyRight); the unit does not own them
	lazy     []block
	estimate int64 // bytes the task is expected to produce
	parts    int   // the task's output parts, where not the stream's (a cut's)
}

type unitSource interface {
	nextUnit(ctx context.Context) (unit, bool, error)
}

// listUnits is a fixed list of units.
type listUnits struct{ us []unit }

// close releases the inputs of the units not taken: a stream owns its
// units' inputs (it releases them once their task is submitted), and one
// closed early, or never started, leaves them here.
func (l *listUnits) close() {
	for _, u := range l.us {
		for _, b := range u.inputs {
			b.release()
		}
	}
	l.us = nil
}

func (l *listUnits) nextUnit(context.Context) (unit, bool, error) {
	if len(l.us) == 0 {
		return unit{}, false, nil
	}
	u := l.us[0]
	l.us = l.us[1:]
	return u, true, nil
}

// streamUnits turns each block of a stream into a unit.
type streamUnits struct{ in blockStream }

func (s *streamUnits) nextUnit(ctx context.Context) (unit, bool, error) {
	b, ok, err := s.in.next(ctx)
	if !ok || err != nil {
		return unit{}, ok, err
	}
	return unit{inputs: []block{b}, estimate: b.bytes}, true, nil
}

// queueUnits is a list its owner pushes units to as it makes them: it
// runs dry without ending until closed (a stream over it ends only then).
type queueUnits struct {
	listUnits
	closed bool
}

func (q *queueUnits) push(u unit) { q.us = append(q.us, u) }

// close releases the inputs of the units not taken.
func (q *queueUnits) close() {
	q.listUnits.close()
	q.closed = true
}

// run is one execution of a dataset: its memory budget and its stats.
type run struct {
	cfg    Config
	budget int64
	// capacity is the object store's bytes (0: not known, a run inside a
	// task)
	capacity int64

	mu      sync.Mutex
	charged int64 // bytes of tasks in flight and of blocks not yet consumed
	peak    int64
	stages  []*stageStats
	// cpuCap is Config.CPUShare of the node's CPUs (0: none); cpuHeld the
	// CPU of the run's tasks in flight and actors (cpu.go).
	cpuCap, cpuHeld float64
	// cpus is this node's CPUs (nodeCPUs), wave the run's first wave
	// (firstWave); 0 until initCPU sets them (cpu.go)
	cpus, wave int
	mon        *monitor
}

// addStage records a stage's stats (the progress monitor reads the list
// from its own goroutine).
func (r *run) addStage(st *stageStats) {
	r.mu.Lock()
	r.stages = append(r.stages, st)
	r.mu.Unlock()
}

// stageList returns the stages recorded so far.
func (r *run) stageList() []*stageStats {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*stageStats(nil), r.stages...)
}

func (r *run) charge(n int64) {
	r.mu.Lock()
	r.charged += n
	r.peak = max(r.peak, r.charged)
	r.mu.Unlock()
}

func (r *run) fits(n int64) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.charged+n <= r.budget
}

// pendingTask is a submitted task.
type pendingTask struct {
	refs     []atoll.ObjectRef[atoll.Raw] // meta, then outputs
	inputs   []block
	charge   int64
	estimate int64
}

// taskStream submits one task per unit, at most the run's budget in
// flight (at least one task), and yields their output blocks in order.
type taskStream struct {
	r       *run
	st      *subStats
	src     unitSource
	ops     []opSpec
	out     outSpec
	opts    []atoll.TaskOption
	peeked  *unit
	done    bool
	pending []*pendingTask
	ready   []block
	onMeta  func(*taskMeta)
	// writeDir: a write op (write_parquet, write_csv, write_json) writes file
	// part-N.<ext> there, N the task's sequence number.
	writeDir string
	seq      int
	// ratio is the largest output bytes / estimate seen in this stream's
	// tasks (0 until one finished): a read or map that grows its rows
	// (a decompressing read, a column added) is charged what it really
	// produces. Until the first task finishes, at most the run's first
	// wave runs (one per CPU, each with room for four times its estimate).
	ratio float64
	// prepare runs before the first task is submitted (a broadcast
	// join's right side, run to the end: shared); shared blocks go to
	// every task after its inputs, and are released with the stream
	prepare  func(ctx context.Context) error
	prepared bool
	shared   []block
}

// expected is the bytes a task of u is expected to produce.
func (t *taskStream) expected(u unit) int64 {
	if t.ratio == 0 {
		return u.estimate
	}
	return int64(float64(u.estimate)*t.ratio) + 1
}

func (t *taskStream) next(ctx context.Context) (block, bool, error) {
	for {
		if len(t.ready) > 0 {
			b := t.ready[0]
			t.ready = t.ready[1:]
			t.r.charge(-b.bytes)
			return b, true, nil
		}
		if err := t.fill(ctx); err != nil {
			return block{}, false, err
		}
		if len(t.pending) == 0 {
			return block{}, false, nil
		}
		if err := t.collect(ctx); err != nil {
			return block{}, false, err
		}
	}
}

// cost is what a task of u charges the budget while it runs: its input
// and its expected output.
func cost(u unit) int64 {
	var in int64
	for _, b := range u.inputs {
		in += b.bytes
	}
	for _, b := range u.lazy {
		in += b.bytes
	}
	return in + u.estimate
}

func (t *taskStream) fill(ctx context.Context) error {
	if !t.prepared {
		t.prepared = true
		if t.prepare != nil {
			if err := t.prepare(ctx); err != nil {
				return err
			}
		}
	}
	for !t.done {
		if t.peeked == nil {
			u, ok, err := t.src.nextUnit(ctx)
			if err != nil {
				return err
			}
			if !ok {
				if q, open := t.src.(*queueUnits); open && !q.closed {
					return nil // more units may come
				}
				t.done = true
				return nil
			}
			t.peeked = &u
			// the input is the task's now: charge it as the task's
			t.r.charge(inputBytes(u))
		}
		if len(t.pending) > 0 && (!t.mayAdd(*t.peeked) || !t.r.cpuFits(t.st.taskCPU)) {
			return nil
		}
		t.submit(ctx, *t.peeked)
		t.peeked = nil
	}
	return nil
}

func inputBytes(u unit) int64 { return cost(u) - u.estimate }

// mayAdd says whether a task of u may start beside those in flight, by
// the budget: what it is expected to make must fit, and before any task
// has finished (ratio unknown) only a first wave of tasks runs, each
// with room for firstWaveGrowth times its estimate.
func (t *taskStream) mayAdd(u unit) bool {
	if t.ratio == 0 {
		return len(t.pending) < t.r.firstWave() && t.r.fits(firstWaveGrowth*max(u.estimate, 1))
	}
	return t.r.fits(t.expected(u))
}

// maxTaskBlocks is the most blocks one task's output is cut into.
const maxTaskBlocks = 256

func (t *taskStream) submit(ctx context.Context, u unit) {
	var lazy atoll.Raw
	if len(u.lazy) > 0 {
		js := *u.join
		var err error
		if lazy, err = lazyArg(u.lazy); err == nil {
			js.LazyRight = true
		} else {
			// a ref that cannot be encoded: the blocks go as arguments,
			// and the task's own fetch reports what is wrong with them
			u.inputs = append(slices.Clone(u.inputs), u.lazy...)
		}
		u.join = &js
	}
	spec := taskSpec{Read: u.read, Zip: u.zip, Ops: t.ops, Out: t.out, Join: u.join, Shared: len(t.shared)}
	spec.Out.TaskIndex = t.seq
	if u.parts > 0 {
		spec.Out.Parts = u.parts
	}
	if u.ops != nil {
		spec.Ops = append(append([]opSpec(nil), u.ops...), t.ops...)
	}
	if !t.out.partitioned() && !t.out.metaOnly() {
		tgt := t.r.cfg.TargetMaxBlockSize
		spec.Out.TargetMaxBlockSize = tgt
		blocks := 1 + (2*max(t.expected(u), inputBytes(u))+tgt-1)/tgt
		if t.ratio == 0 {
			// the stream's first task: what a task makes per byte is not
			// known yet (a function may multiply its rows), so it may cut
			// its output into as many blocks as any task
			blocks = maxTaskBlocks
		}
		spec.Out.MaxBlocks = int(min(maxTaskBlocks, max(8, blocks)))
	}
	if t.writeDir != "" {
		spec.Ops = append([]opSpec(nil), t.ops...)
		for i := range spec.Ops {
			if ext := writeExt(spec.Ops[i].Kind); ext != "" {
				spec.Ops[i].Path = fmt.Sprintf("%s/part-%05d%s", t.writeDir, t.seq, ext)
			}
		}
	}
	t.seq++
	args := []atoll.Arg[atoll.Raw]{atoll.Value(atoll.Raw{Codec: atollpb.Codec_CODEC_PROTO, Data: encodeTask(&spec)})}
	for _, b := range u.inputs {
		args = append(args, b.ref)
	}
	if lazy.Data != nil {
		args = append(args, atoll.Value(lazy))
	}
	for _, b := range t.shared {
		args = append(args, b.ref)
	}
	refs := execTask.Remote(ctx, spec.Out.numReturns(), args, t.opts...)
	// the task holds its arguments: the driver's refs can go
	for _, b := range u.inputs {
		b.release()
	}
	exp := t.expected(u)
	t.r.charge(exp) // inputs were charged when taken
	t.r.holdCPU(t.st.taskCPU)
	t.st.submitted()
	t.pending = append(t.pending, &pendingTask{refs: refs, inputs: u.inputs, charge: inputBytes(u) + exp, estimate: u.estimate})
}

// poll collects, without waiting, the oldest tasks that have finished,
// and returns every block ready (the consumer's now, as from next).
func (t *taskStream) poll(ctx context.Context) ([]block, error) {
	for len(t.pending) > 0 {
		now, cancel := context.WithDeadline(ctx, time.Time{}) // a poll
		ready, _, err := atoll.Wait(now, t.pending[0].refs[:1], atoll.FetchLocal(false))
		cancel()
		if err != nil {
			return nil, err
		}
		if len(ready) == 0 {
			break
		}
		if err := t.collect(ctx); err != nil {
			return nil, err
		}
	}
	out := t.ready
	t.ready = nil
	for _, b := range out {
		t.r.charge(-b.bytes)
	}
	return out, nil
}

// collect waits for the oldest task and queues its blocks.
func (t *taskStream) collect(ctx context.Context) error {
	p := t.pending[0]
	t.pending = t.pending[1:]
	t.r.charge(-p.charge)
	t.r.holdCPU(-t.st.taskCPU)
	raw, err := atoll.Get(ctx, p.refs[0])
	if err != nil {
		releaseRefs(p.refs)
		return err
	}
	m, err := decodeMeta(raw.Data, len(p.refs)-1)
	if err != nil {
		releaseRefs(p.refs)
		return err
	}
	p.refs[0].Release()
	schema, err := decodeSchema(m.Schema)
	if err != nil {
		releaseRefs(p.refs[1:])
		return err
	}
	var rows int64
	for i := range m.Rows {
		b := block{ref: p.refs[1+i], rows: m.Rows[i], bytes: m.Bytes[i], schema: schema}
		rows += b.rows
		t.r.charge(b.bytes)
		t.ready = append(t.ready, b)
	}
	for _, r := range p.refs[1+len(m.Rows):] {
		r.Release()
	}
	var outBytes int64
	for _, n := range m.Bytes {
		outBytes += n
	}
	t.ratio = max(t.ratio, float64(outBytes)/float64(max(p.estimate, 1)), 1e-6)
	t.st.task(time.Duration(m.WallNs), time.Duration(m.CpuNs), rows)
	t.st.retried(int(m.Attempt))
	t.st.addRead(m.ReadBytes)
	if t.onMeta != nil {
		t.onMeta(m)
	}
	return nil
}

func releaseRefs(refs []atoll.ObjectRef[atoll.Raw]) {
	for _, r := range refs {
		if !r.IsZero() {
			r.Release()
		}
	}
}

func (t *taskStream) close() {
	for _, p := range t.pending {
		releaseRefs(p.refs)
		t.r.charge(-p.charge)
		t.r.holdCPU(-t.st.taskCPU)
	}
	t.pending = nil
	for _, b := range t.ready {
		b.release()
		t.r.charge(-b.bytes)
	}
	t.ready = nil
	if t.peeked != nil {
		for _, b := range t.peeked.inputs {
			b.release()
			t.r.charge(-b.bytes)
		}
		t.peeked = nil
	}
	if c, ok := t.src.(interface{ close() }); ok {
		c.close()
	}
	for _, b := range t.shared {
		b.release()
		t.r.charge(-b.bytes)
	}
	t.shared = nil
}

func (s *streamUnits) close() { s.in.close() }

// blockList yields fixed blocks (a dataset's own, or a materialized
// phase's), passing them through without tasks.
type blockList struct {
	r  *run
	bs []block
}

func (l *blockList) next(context.Context) (block, bool, error) {
	if len(l.bs) == 0 {
		return block{}, false, nil
	}
	b := l.bs[0]
	l.bs = l.bs[1:]
	return b, true, nil
}

func (l *blockList) close() {
	for _, b := range l.bs {
		b.release()
	}
	l.bs = nil
}

// failedStream yields its error (a stream that cannot start).
type failedStream struct{ err error }

func (f *failedStream) next(context.Context) (block, bool, error) { return block{}, false, f.err }

func (f *failedStream) close() {}

// limitStream passes blocks until n rows, cutting the last with a task.
type limitStream struct {
	r    *run
	st   *subStats
	in   blockStream
	left int64
	opts []atoll.TaskOption
}

func (l *limitStream) next(ctx context.Context) (block, bool, error) {
	if l.left <= 0 {
		l.in.close()
		return block{}, false, nil
	}
	b, ok, err := l.in.next(ctx)
	if !ok || err != nil {
		return b, ok, err
	}
	if b.rows <= l.left {
		l.left -= b.rows
		return b, true, nil
	}
	ts := &taskStream{r: l.r, st: l.st, src: &listUnits{us: []unit{{inputs: []block{b}}}},
		ops: []opSpec{{Kind: "limit", Limit: l.left}}, out: outSpec{Kind: "blocks"}, opts: l.opts}
	l.left = 0
	out, ok, err := ts.next(ctx)
	if err != nil || !ok {
		return out, ok, err
	}
	return out, true, nil
}

func (l *limitStream) close() { l.in.close() }
