package data

import (
	"context"
	"fmt"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/atoll-runtime/atoll"
	"github.com/atoll-runtime/atoll/atollpb"
)

const codecBytes = atollpb.Codec_CODEC_BYTES

// readRetries is how many times a read task is retried after a file
// error that may pass (ErrTransient: a file system unreadable for a
// while): a read is tried 1 + readRetries times. Its other errors (a file
// that does not parse, an expression or function that fails on its rows)
// are final at once.
const readRetries = 3

// start plans d and returns the stream of its output blocks. Nothing is
// submitted until the stream is pulled.
func (d *Dataset) start(ctx context.Context, extra ...*logicalOp) (blockStream, *run, error) {
	s, r, _, err := d.startIn(ctx, nil, extra...)
	return s, r, err
}

// closeInputs closes what a union's or a zip's inputs started.
func closeInputs(in blockStream, units unitSource) {
	if in != nil {
		in.close()
	}
	if c, ok := units.(interface{ close() }); ok {
		c.close()
	}
}

// startIn is start within run r (the inputs of a union or a zip share
// their consumer's run: its budget and stats), or a new run if r is nil.
func (d *Dataset) startIn(ctx context.Context, r *run, extra ...*logicalOp) (blockStream, *run, *arrow.Schema, error) {
	if d.err != nil {
		return nil, nil, nil, d.err
	}
	if err := d.cfg.validate(); err != nil {
		return nil, nil, nil, err
	}
	if r == nil {
		var err error
		if r, err = newRun(ctx, d.cfg); err != nil {
			return nil, nil, nil, err
		}
	}
	r.initCPU(ctx)
	ops := append(append([]*logicalOp(nil), d.ops...), extra...)
	// joins broadcast or shuffle, by their right side's estimate
	ops, err := planJoins(ctx, r, ops)
	if err != nil {
		return nil, nil, nil, err
	}
	// the plan is checked against the source's schema before anything
	// runs, and the read leaves out what the plan does not use
	var srcSchema *arrow.Schema
	var rs readSource
	switch {
	case d.source.open != nil:
		var err error
		if rs, err = d.source.open(d.cfg); err != nil {
			return nil, nil, nil, err
		}
		srcSchema = rs.schema()
	case d.source.inputs == nil && len(d.source.blocks) > 0:
		srcSchema = d.source.blocks[0].schema
	}
	var in blockStream
	var src0 unitSource // a zip's units
	if d.source.inputs != nil {
		// a union's inputs' plans, checked (none of their tasks runs
		// before the stream is pulled), give its schema when they agree
		var err error
		if in, src0, srcSchema, err = d.source.inputs(ctx, r); err != nil {
			return nil, nil, nil, err
		}
	}
	schemas, err := checkOps(srcSchema, ops)
	if err != nil {
		closeInputs(in, src0)
		return nil, nil, nil, err
	}
	// the ops the plan checked against a known schema
	checked := map[*logicalOp]bool{}
	for i, o := range ops[1:] {
		checked[o] = schemas[i] != nil
	}
	for i, st := range plan(ops) {
		stats := &stageStats{name: st.name(), cpu: st.cpu()}
		for _, o := range append(slices.Clone(st.ops), st.allToAll) {
			if o != nil && o.join != nil {
				stats.addNote("Join", o.join.describe())
			}
		}
		r.addStage(stats)
		var src unitSource
		var sampleCols []string // a sort's sample pass's read (sortread.go)
		mapOps := st.ops
		switch {
		case i == 0 && rs != nil:
			pd := pushdownFor(ops, schemas)
			if d.cfg.NoPushdown {
				pd = pushdown{}
			}
			rus, info, err := rs.units(pd)
			if err != nil {
				return nil, nil, nil, err
			}
			if a := st.allToAll; a != nil && a.name == "sort" && !d.cfg.NoPushdown {
				sampleCols = sortSampleColumns(st.ops, schemas, a.keys, pd.columns)
			}
			stats.read = info
			us := make([]unit, len(rus))
			for j := range rus {
				us[j] = unit{read: &rus[j].spec, estimate: rus[j].estimate}
			}
			src = &listUnits{us: us}
			mapOps = mapOps[1:]
		case i == 0 && d.source.inputs != nil:
			if src = src0; src == nil {
				src = &streamUnits{in: in}
			}
			mapOps = mapOps[1:]
		case i == 0:
			in = &blockList{r: r, bs: append([]block(nil), d.source.blocks...)}
			src = &streamUnits{in: in}
			mapOps = mapOps[1:]
		default:
			src = &streamUnits{in: in}
		}
		var specs []opSpec
		var place []atoll.TaskOrActorOption
		limit := int64(-1)
		for _, o := range mapOps {
			if o.kind == kindLimit {
				if limit < 0 || o.op.Limit < limit {
					limit = o.op.Limit
				}
				continue
			}
			spec := o.op
			spec.Checked = spec.Kind == "rename" && checked[o]
			specs = append(specs, spec)
			place = callOptions(o)
		}
		if len(place) == 0 {
			place = callOptions(&logicalOp{})
		}
		opts := taskOptions(place)
		if i == 0 && rs != nil {
			// reads retry a flaky file system's errors
			opts = append(opts, atoll.RetryExceptions(ErrTransient), atoll.MaxRetries(readRetries))
		}
		if len(mapOps) > 0 && mapOps[0].strategy() == "actors" {
			// an actor stage holds map-like ops only (plan.go)
			sub := stats.newSub(st.name())
			in = newPoolStream(r, sub, src, specs, mapOps[0].pool, actorOptions(place))
			continue
		}
		if limit >= 0 {
			sub := stats.newSub("limit")
			in = &limitStream{r: r, st: sub, in: in, left: limit, opts: opts}
			continue
		}
		if st.allToAll == nil {
			if len(specs) == 0 && i == 0 && rs == nil && src0 == nil {
				// blocks already stored (or a union's), nothing to apply
				stats.newSub(st.name())
				continue
			}
			sub := stats.newSub(st.name())
			ts := &taskStream{r: r, st: sub, src: src, ops: specs, out: outSpec{Kind: "blocks"}, opts: opts}
			if bs := broadcastSides(r, mapOps); bs != nil {
				ts.prepare = func(ctx context.Context) (err error) {
					ts.shared, err = bs(ctx)
					return err
				}
			}
			for _, s := range specs {
				if writeExt(s.Kind) != "" {
					ts.writeDir = s.Path
				}
			}
			in = ts
			continue
		}
		a := newAllToAll(r, stats, src, specs, opts, st.allToAll)
		a.broadcast = broadcastSides(r, mapOps)
		a.sampleColumns = sampleCols
		in = a
	}
	r.startMonitor(ctx)
	return in, r, schemas[len(schemas)-1], nil
}

// newRun makes a run of a dataset with settings cfg: its budget is
// cfg.MemoryBudget, or cfg.BudgetFraction of the store, and its blocks at
// most cfg.TargetMaxBlockSize and a quarter of the store.
func newRun(ctx context.Context, cfg Config) (*run, error) {
	r := &run{cfg: cfg, budget: cfg.MemoryBudget}
	capacity, err := storeCapacity(ctx)
	if err != nil {
		if r.budget == 0 {
			return nil, err
		}
		return r, nil // the store cannot be asked: blocks as configured
	}
	r.capacity = int64(capacity)
	if r.budget == 0 {
		r.budget = int64(float64(capacity) * cfg.BudgetFraction)
	}
	// A block is one object, which the store must hold whole beside
	// others; several smaller ones can be spilled in turn.
	r.cfg.TargetMaxBlockSize = min(r.cfg.TargetMaxBlockSize, max(1, int64(capacity/maxBlockShare)))
	return r, nil
}

// maxBlockShare: a block is at most 1/maxBlockShare of the store.
const maxBlockShare = 4

// taskOptions returns placement options as a task's options.
func taskOptions(place []atoll.TaskOrActorOption) []atoll.TaskOption {
	opts := make([]atoll.TaskOption, len(place))
	for i, o := range place {
		opts[i] = o
	}
	return opts
}

// actorOptions returns placement options as an actor's options.
func actorOptions(place []atoll.TaskOrActorOption) []atoll.ActorOption {
	opts := make([]atoll.ActorOption, len(place))
	for i, o := range place {
		opts[i] = o
	}
	return opts
}

// callOptions returns where an op's tasks or actors run and what they
// need: spread over the nodes, with the op's resources.
func callOptions(o *logicalOp) []atoll.TaskOrActorOption {
	opts := []atoll.TaskOrActorOption{atoll.Spread()}
	if o.resources != nil {
		res := atoll.Resources{Custom: map[string]float64{}}
		for k, v := range o.resources {
			switch k {
			case "CPU":
				res.CPU = v
			case "memory":
				res.Memory = v
			default:
				res.Custom[k] = v
			}
		}
		opts = append(opts, atoll.WithTaskResources(res))
	}
	return opts
}

// allToAll runs a sort or a repartition: on the first pull it runs the
// map side (the stage's fused ops plus sampling or splitting) and, for a
// sort, the range split; then it streams the reduce tasks' blocks.
type allToAll struct {
	r       *run
	stats   *stageStats
	src     unitSource
	ops     []opSpec
	opts    []atoll.TaskOption
	op      *logicalOp
	reduce  blockStream
	started bool
	// broadcast runs the right sides of the broadcast joins among ops:
	// the map side's first stream takes them as shared blocks (mapStream)
	broadcast func(ctx context.Context) ([]block, error)
	splitSt   *subStats // an aggregate's split tasks' (splitStats)
	// sampleColumns: a sort's columns its sample pass reads, fewer than
	// its read's; nil: the same (sortread.go)
	sampleColumns []string
}

// mapStream is a stream of tasks of the stage's fused ops (src, a.ops)
// and out: the broadcast joins' right sides go with it.
func (a *allToAll) mapStream(st *subStats, out outSpec) *taskStream {
	ts := &taskStream{r: a.r, st: st, src: a.src, ops: a.ops, out: out, opts: a.opts}
	if a.broadcast != nil {
		bs := a.broadcast
		ts.prepare = func(ctx context.Context) (err error) {
			ts.shared, err = bs(ctx)
			return err
		}
	}
	return ts
}

func newAllToAll(r *run, stats *stageStats, src unitSource, ops []opSpec, opts []atoll.TaskOption, op *logicalOp) *allToAll {
	return &allToAll{r: r, stats: stats, src: src, ops: ops, opts: opts, op: op}
}

func (a *allToAll) next(ctx context.Context) (block, bool, error) {
	if !a.started {
		a.started = true
		red, err := a.mapSide(ctx)
		if err != nil {
			return block{}, false, err
		}
		a.reduce = red
	}
	return a.reduce.next(ctx)
}

func (a *allToAll) close() {
	if a.reduce != nil {
		a.reduce.close()
	}
	if c, ok := a.src.(interface{ close() }); ok {
		c.close()
	}
}

// drain collects every block of s (they stay in the store: an all-to-all
// needs all of its map outputs before any reduce).
func drain(ctx context.Context, s blockStream, r *run) ([]block, error) {
	var out []block
	for {
		b, ok, err := s.next(ctx)
		if err != nil {
			s.close()
			for _, x := range out {
				x.release()
			}
			return nil, err
		}
		if !ok {
			return out, nil
		}
		out = append(out, b)
	}
}

func (a *allToAll) sub(name string) *subStats {
	return a.stats.newSub(name)
}

func (a *allToAll) mapSide(ctx context.Context) (blockStream, error) {
	name := a.op.name
	switch name {
	case "aggregate", "random_shuffle":
		return a.hashShuffle(ctx)
	case "join":
		return a.joinShuffle(ctx)
	case "hash_partition": // a shuffled join's right side: the map side only
		parts := max(1, a.op.parts)
		ms := a.mapStream(a.sub("join_right_map"), outSpec{Kind: "hash_split", Parts: parts, GroupKeys: a.op.groupKeys})
		pieces, err := drain(ctx, ms, a.r)
		if err != nil {
			return nil, err
		}
		return &blockList{r: a.r, bs: pieces}, nil
	}
	var splitIn unitSource = a.src
	ops := a.ops
	var bounds []byte
	parts := a.op.parts
	if name == "sort" {
		if sample, split, blocks, ok := a.sortRereads(); ok {
			if parts == 0 {
				parts = max(1, blocks)
			}
			if keepsRows(a.ops) { // the reads' estimates tell the ranges' size
				var total int64
				for _, u := range split {
					total += u.estimate
				}
				parts = a.fitParts(parts, total)
			}
			return a.sortByRereading(ctx, sample, split, parts)
		}
		var samples [][]byte
		ss := a.mapStream(a.sub("sort_sample"), outSpec{Kind: "sort_sample", Keys: a.op.keys, Samples: 64})
		ss.onMeta = func(m *taskMeta) { samples = append(samples, m.Samples) }
		sampled, err := drain(ctx, ss, a.r)
		if err != nil {
			return nil, err
		}
		if parts == 0 {
			parts = max(1, len(sampled))
		}
		var total int64
		for _, b := range sampled {
			total += b.bytes
		}
		parts = a.fitParts(parts, total)
		if bounds, err = chooseBounds(ctx, samples, parts, a.op.keys); err != nil {
			return nil, err
		}
		if bounds == nil { // no rows at all
			return &blockList{r: a.r, bs: sampled}, nil
		}
		us := make([]unit, len(sampled))
		for i, b := range sampled {
			us[i] = unit{inputs: []block{b}, estimate: b.bytes}
		}
		splitIn, ops = &listUnits{us: us}, nil
	}
	mapName := map[string]string{"sort": "sort_map", "repartition": "repartition_map"}[name]
	out := outSpec{Kind: "split", Parts: parts, Keys: a.op.keys, Bounds: bounds}
	var ms *taskStream
	if name == "sort" {
		ms = &taskStream{r: a.r, st: a.sub(mapName), src: splitIn, ops: ops, out: out, opts: a.opts}
	} else {
		ms = a.mapStream(a.sub(mapName), out)
	}
	pieces, err := drain(ctx, ms, a.r)
	if err != nil {
		return nil, err
	}
	us := byPart(pieces, parts)
	if name == "sort" {
		return a.mergeSorted(ctx, us)
	}
	return &taskStream{r: a.r, st: a.sub("repartition_reduce"), src: &listUnits{us: a.chunkParts(us)}, out: outSpec{Kind: "blocks"}, opts: a.opts}, nil
}

// chunkParts is a repartition's reduce units: a part of more than twice
// reduceLimit is concatenated by several tasks, each taking the next of
// its pieces up to reduceLimit, so that the part comes as consecutive
// blocks in the same order instead of from one task whose input does
// not fit the store. The stage's stats say how many parts were cut.
func (a *allToAll) chunkParts(us []unit) []unit {
	limit := a.reduceLimit()
	out := make([]unit, 0, len(us))
	cut, tasks, largest := 0, 0, int64(0)
	for _, u := range us {
		chunks := chunkPart(u, limit)
		if len(chunks) > 1 {
			cut, tasks, largest = cut+1, tasks+len(chunks), max(largest, u.estimate)
		}
		out = append(out, chunks...)
	}
	if cut > 0 {
		a.stats.addNote(a.op.title(), fmt.Sprintf("%d of %d parts concatenated by %d tasks (the largest %.1f MB, at most %.1f MB a task)",
			cut, len(us), tasks, float64(largest)/1e6, float64(limit)/1e6))
	}
	return out
}

// byPart gathers the map side's pieces into a reduce unit per part: every
// map task returned parts pieces, in order.
func byPart(pieces []block, parts int) []unit {
	us := make([]unit, parts)
	for i, p := range pieces {
		us[i%parts].inputs = append(us[i%parts].inputs, p)
		us[i%parts].estimate += p.bytes
	}
	return us
}

// broadcastSides returns what runs the right sides of the broadcast joins
// among ops (nil: none): each runs to the end within r, its blocks stay
// in the store (charged to the run's budget), and its join learns where
// they are among the stage's shared blocks.
func broadcastSides(r *run, ops []*logicalOp) func(ctx context.Context) ([]block, error) {
	var joins []*logicalOp
	for _, o := range ops {
		if o.kind == kindMap && o.op.Kind == "join_probe" {
			joins = append(joins, o)
		}
	}
	if len(joins) == 0 {
		return nil
	}
	return func(ctx context.Context) ([]block, error) {
		var shared []block
		fail := func(err error) ([]block, error) {
			for _, b := range shared {
				b.release()
				r.charge(-b.bytes)
			}
			return nil, err
		}
		for _, o := range joins {
			rs, _, _, err := o.join.right.startIn(ctx, r)
			if err != nil {
				return fail(err)
			}
			bs, err := drain(ctx, rs, r)
			if err != nil {
				return fail(err)
			}
			js := o.op.Join
			js.SharedFrom, js.SharedTo, js.BuildKey = len(shared), len(shared)+len(bs), newBuildKey()
			for _, b := range bs {
				r.charge(b.bytes)
			}
			if len(bs) == 0 { // no right row: one empty block of its schema, for the output's columns
				if o.join.rightSchema == nil {
					return fail(fmt.Errorf("%w: data: the right side of a join has no block and no known schema", atoll.ErrInvalidArgument))
				}
				b, err := putBlock(ctx, emptyRecord(o.join.rightSchema))
				if err != nil {
					return fail(err)
				}
				b.borrowed = false
				bs = append(bs, b)
				js.SharedTo++
			}
			shared = append(shared, bs...)
		}
		return shared, nil
	}
}
