package data

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/atoll-runtime/atoll"
	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/errs"
)

// Actor pools (Ray's compute=ActorPoolStrategy(min_size, max_size)): the
// operations of an actor stage run in long-lived actors instead of one
// task per block, so that a BatchClass's setup (loading a model, opening
// a connection) runs once per actor, not once per batch. Each actor is a
// worker process of its own; the driver sends it one block at a time.

// BatchClass is a stateful batch function registered with
// RegisterBatchClass, for MapBatches on an actor pool: setup makes the
// state once per actor, then fn maps every batch the actor gets with it.
// fn follows BatchFunc's rules about its argument and result.
type BatchClass struct {
	name  string
	setup func(context.Context) (any, error)
	fn    func(context.Context, any, arrow.RecordBatch) (arrow.RecordBatch, error)
}

// Name returns the name the class was registered under.
func (c *BatchClass) Name() string { return c.name }

// RegisterBatchClass registers a stateful batch function under name for
// MapBatches with ActorPool: setup runs once in each actor of the pool
// (and again if the actor restarts), fn runs for every batch with the
// state setup returned. Calls on one actor run one at a time, so fn may
// use the state without locking. Nothing runs when an actor stops: the
// actor's process ends.
func RegisterBatchClass[S any](name string, setup func(context.Context) (S, error), fn func(context.Context, S, arrow.RecordBatch) (arrow.RecordBatch, error)) *BatchClass {
	c := &BatchClass{name: name,
		setup: func(ctx context.Context) (any, error) { return setup(ctx) },
		fn: func(ctx context.Context, s any, rec arrow.RecordBatch) (arrow.RecordBatch, error) {
			return fn(ctx, s.(S), rec)
		}}
	batchClasses.MustAdd(name, c)
	return c
}

// BatchMapper is what MapBatches applies: a *BatchFunc (tasks, or an
// actor pool) or a *BatchClass (an actor pool only).
type BatchMapper interface {
	batchOp() (op opSpec, stateful bool)
}

func (f *BatchFunc) batchOp() (opSpec, bool) {
	if f == nil {
		return opSpec{}, false
	}
	return opSpec{Kind: "map_batches", Fn: f.name}, false
}

func (c *BatchClass) batchOp() (opSpec, bool) {
	if c == nil {
		return opSpec{}, true
	}
	return opSpec{Kind: "map_batches_class", Fn: c.name}, true
}

// poolSize is an actor stage's pool: at least min actors, at most max.
type poolSize struct{ min, max int }

// ActorPool runs the operation on a pool of actors (Ray's
// ActorPoolStrategy): min actors start with the stage, more start while
// blocks wait for an idle actor, up to max; each actor maps one block
// at a time. The actors hold the operation's resources (WithResources)
// for their whole life, and none by default (atoll's actors hold nothing
// unless told): give them a CPU to keep the pool from overcommitting the
// node. A pool whose actors hold CPUs grows past min only while the
// driver's node keeps a CPU free for the stages that feed it. Consecutive operations on pools of the same size and resources
// run in the same actors. An actor that dies has its block retried on
// another (it restarts, its setup runs again, up to 3 times); the
// actors are killed when the stage ends or the run stops. 1 <= min <=
// max.
func ActorPool(min, max int) OpOption {
	return func(o *logicalOp) {
		o.compute = "actors"
		o.pool = poolSize{min: min, max: max}
	}
}

// checkPool validates an operation's pool (ActorPool's arguments).
func (o *logicalOp) checkPool() error {
	if o.compute == "actors" && (o.pool.min < 1 || o.pool.max < o.pool.min) {
		return fmt.Errorf("%w: data: ActorPool(%d, %d): want 1 <= min <= max", atoll.ErrInvalidArgument, o.pool.min, o.pool.max)
	}
	return nil
}

// MapBatches applies fn to batches of rows (BatchSize): a *BatchFunc in
// tasks (or on an ActorPool), a *BatchClass on an ActorPool.
func (d *Dataset) MapBatches(fn BatchMapper, opts ...OpOption) *Dataset {
	if fn == nil {
		return d.withErr(fmt.Errorf("%w: data: MapBatches(nil)", atoll.ErrInvalidArgument))
	}
	op, stateful := fn.batchOp()
	if op.Fn == "" {
		return d.withErr(fmt.Errorf("%w: data: MapBatches(nil)", atoll.ErrInvalidArgument))
	}
	nd := d.mapOp("map_batches", op, opts)
	if last := nd.ops[len(nd.ops)-1]; nd.err == nil && stateful && last.compute != "actors" {
		return d.withErr(fmt.Errorf("%w: data: MapBatches of the BatchClass %q needs ActorPool(min, max)", atoll.ErrInvalidArgument, op.Fn))
	}
	return nd
}

// poolStates carries an actor's states (by class name) to the ops a call
// runs.
type poolStates struct{}

// applyClass runs a map_batches_class op with the actor's state.
func applyClass(ctx context.Context, op opSpec, recs []arrow.RecordBatch) ([]arrow.RecordBatch, error) {
	c, err := errs.Lookup(batchClasses, op.Fn)
	if err != nil {
		return nil, err
	}
	states, _ := ctx.Value(poolStates{}).(map[string]any)
	s, ok := states[op.Fn]
	if !ok {
		return nil, fmt.Errorf("%w: data: map_batches %s: a BatchClass runs on an actor pool only", atoll.ErrInvalidArgument, op.Fn)
	}
	var out []arrow.RecordBatch
	for _, b := range rebatch(recs, op.BatchSize) {
		var r arrow.RecordBatch
		err := guard(opSpec{Kind: "map_batches", Fn: op.Fn}, func() (err error) {
			r, err = c.fn(ctx, s, b)
			return err
		})
		if r != b { // it may return its argument (BatchFunc's rules)
			b.Release()
		}
		if err != nil {
			releaseAll(out)
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

// poolActor is one actor of a pool: the states of the stage's classes,
// or why it has none.
type poolActor struct {
	states map[string]any
	// err is why the actor's setup failed: a class this binary does not
	// know (NotRegisteredError) or a setup that returned an error or
	// panicked (FunctionError). Every call returns it, so the run fails
	// with it typed; as the constructor's error it would reach the driver
	// as an ActorDiedError's message only.
	err error
}

var (
	poolActorType = atoll.NewActorType1("atoll/data.pool", func(ctx context.Context, pool *atollpb.DataPool) (*poolActor, error) {
		if n := len(pool.GetClasses()); n > maxNames {
			return nil, errs.Malformedf("dataset actor pool", "%d classes", n)
		}
		a := &poolActor{states: map[string]any{}}
		for _, name := range pool.GetClasses() {
			c, err := errs.Lookup(batchClasses, name)
			if err != nil {
				a.err = err
				return a, nil
			}
			var s any
			if err := guard(opSpec{Kind: "setup", Fn: name}, func() (err error) {
				s, err = c.setup(ctx)
				return err
			}); err != nil {
				a.err = err
				return a, nil
			}
			a.states[name] = s
		}
		return a, nil
	})
	// poolRun runs a task spec on the actor: what execTask does, with the
	// actor's states.
	poolRun = atoll.NewMultiMethodN(poolActorType, "run", func(a *poolActor, ctx context.Context, args []atoll.Raw) ([]atoll.Raw, error) {
		if a.err != nil {
			return nil, a.err
		}
		return execSpec(context.WithValue(ctx, poolStates{}, a.states), args)
	})
)

const (
	// poolMaxRestarts is how many times atoll restarts a pool's actor.
	poolMaxRestarts = 3
	// poolMaxAttempts is how many times a block is sent to actors that
	// die before the run fails.
	poolMaxAttempts = 4
)

// poolStats is what a pool did, for Stats.
type poolStats struct {
	size              poolSize
	started, peak     int
	retried, replaced int
}

func (p *poolStats) format(b *strings.Builder) {
	fmt.Fprintf(b, "* Actors: %d started (pool of %d to %d, at most %d at once)", p.started, p.size.min, p.size.max, p.peak)
	if p.retried > 0 {
		fmt.Fprintf(b, ", %d blocks retried after their actor died", p.retried)
	}
	if p.replaced > 0 {
		fmt.Fprintf(b, ", %d actors dead for good", p.replaced)
	}
	b.WriteString("\n")
}

// poolMember is an actor of a running pool.
type poolMember struct {
	h      atoll.ActorHandle[*poolActor]
	busy   *poolCall
	deaths int
}

// poolCall is one block sent (or to send) to the pool.
type poolCall struct {
	u        unit
	m        *poolMember // the actor running it, nil when waiting
	last     *poolMember // the actor that died running it
	refs     []atoll.ObjectRef[atoll.Raw]
	charge   int64 // expected output, charged while it runs
	attempts int
	out      []block
	finished bool
}

// poolStream runs an actor stage: its units go to the pool's actors, and
// its blocks come out in input order.
type poolStream struct {
	r       *run
	st      *subStats
	src     unitSource
	ops     []opSpec
	classes []string
	size    poolSize
	opts    []atoll.ActorOption // actor creation

	begun   bool
	actors  []*poolMember
	waiting []*poolCall // to send, retries first
	calls   []*poolCall // in input order, until their blocks are yielded
	ready   []block
	done    bool
	ratio   float64
	stopped bool
	roomAt  time.Time // roomToGrow's last look, and what it saw
	room    bool
}

func newPoolStream(r *run, st *subStats, src unitSource, ops []opSpec, size poolSize, opts []atoll.ActorOption) *poolStream {
	var classes []string
	for _, o := range ops {
		if o.Kind == "map_batches_class" {
			classes = append(classes, o.Fn)
		}
	}
	st.mu.Lock()
	st.pool = &poolStats{size: size}
	st.mu.Unlock()
	opts = append(append([]atoll.ActorOption(nil), opts...), atoll.MaxRestarts(poolMaxRestarts), atoll.MaxTaskRetries(0))
	return &poolStream{r: r, st: st, src: src, ops: ops, classes: classes, size: size, opts: opts}
}

func (p *poolStream) next(ctx context.Context) (block, bool, error) {
	for {
		if len(p.ready) > 0 {
			b := p.ready[0]
			p.ready = p.ready[1:]
			p.r.charge(-b.bytes)
			return b, true, nil
		}
		if len(p.calls) > 0 && p.calls[0].finished {
			p.ready = p.calls[0].out
			p.calls = p.calls[1:]
			continue
		}
		if err := p.fill(ctx); err != nil {
			return block{}, false, err
		}
		if len(p.calls) == 0 {
			p.stop()
			return block{}, false, nil
		}
		if err := p.wait(ctx); err != nil {
			return block{}, false, err
		}
	}
}

func (p *poolStream) expected(u unit) int64 {
	if p.ratio == 0 {
		return u.estimate
	}
	return int64(float64(u.estimate)*p.ratio) + 1
}

func (p *poolStream) idle(not *poolMember) *poolMember {
	var other *poolMember
	for _, m := range p.actors {
		if m.busy == nil {
			if m != not {
				return m
			}
			other = m
		}
	}
	if other != nil && len(p.actors) < p.size.max {
		return nil // grow rather than retry on the actor that died
	}
	return other
}

func (p *poolStream) inFlight() int {
	n := 0
	for _, m := range p.actors {
		if m.busy != nil {
			n++
		}
	}
	return n
}

// grow starts an actor (its setup runs when it starts; calls sent before
// wait for it).
func (p *poolStream) grow(ctx context.Context) (*poolMember, error) {
	h, err := poolActorType.New(ctx, atoll.Value(&atollpb.DataPool{Classes: p.classes}), p.opts...)
	if err != nil {
		return nil, err
	}
	m := &poolMember{h: h}
	p.actors = append(p.actors, m)
	p.r.holdCPU(p.st.taskCPU)
	p.st.mu.Lock()
	p.st.pool.started++
	p.st.pool.peak = max(p.st.pool.peak, len(p.actors))
	p.st.mu.Unlock()
	return m, nil
}

// fill sends waiting blocks to idle actors, taking units from the source
// while an actor could take them and the budget allows (one call at a
// time until one finished, as a task stream does).
func (p *poolStream) fill(ctx context.Context) error {
	if !p.begun {
		p.begun = true
		for range p.size.min {
			if _, err := p.grow(ctx); err != nil {
				return err
			}
		}
	}
	for {
		if len(p.waiting) == 0 {
			if p.done || (p.idle(nil) == nil && len(p.actors) >= p.size.max) {
				return nil
			}
			u, ok, err := p.src.nextUnit(ctx)
			if err != nil {
				return err
			}
			if !ok {
				p.done = true
				return nil
			}
			for _, b := range u.inputs {
				p.r.charge(b.bytes)
			}
			c := &poolCall{u: u}
			p.calls = append(p.calls, c)
			p.waiting = append(p.waiting, c)
		}
		c := p.waiting[0]
		if p.inFlight() > 0 && (p.ratio == 0 || !p.r.fits(p.expected(c.u))) {
			return nil
		}
		m := p.idle(c.last)
		if m == nil {
			if len(p.actors) >= p.size.max || len(p.actors) > 0 && (!p.r.cpuFits(p.st.taskCPU) || !p.roomToGrow(ctx)) {
				return nil
			}
			var err error
			if m, err = p.grow(ctx); err != nil {
				return err
			}
		}
		p.waiting = p.waiting[1:]
		p.send(ctx, m, c)
	}
}

// roomToGrow says whether another actor holding CPU leaves one of the
// node's CPUs free: actors hold their CPUs for the whole stage, and a
// pool that took the last one would starve the tasks of the stages that
// feed it (and itself). Asked at most every 100 ms; actors that hold no
// CPU always have room.
func (p *poolStream) roomToGrow(ctx context.Context) bool {
	if p.st.taskCPU <= 0 {
		return true
	}
	if now := time.Now(); now.Sub(p.roomAt) >= 100*time.Millisecond {
		p.roomAt, p.room = now, false
		if s, err := nodeStatus(ctx); err == nil {
			p.room = s.Available["CPU"]-p.st.taskCPU >= 1
		}
	}
	return p.room
}

func (p *poolStream) send(ctx context.Context, m *poolMember, c *poolCall) {
	tgt := p.r.cfg.TargetMaxBlockSize
	spec := taskSpec{Ops: p.ops, Out: outSpec{Kind: "blocks", TargetMaxBlockSize: tgt}}
	spec.Out.MaxBlocks = int(min(256, max(8, 1+(2*max(p.expected(c.u), inputBytes(c.u))+tgt-1)/tgt)))
	args := []atoll.Arg[atoll.Raw]{atoll.Value(atoll.Raw{Codec: atollpb.Codec_CODEC_PROTO, Data: encodeTask(&spec)})}
	for _, b := range c.u.inputs {
		args = append(args, b.ref) // kept until the call succeeds: a retry sends them again
	}
	c.refs = poolRun.Remote(ctx, m.h, spec.Out.numReturns(), args)
	c.m, m.busy = m, c
	c.charge = p.expected(c.u)
	p.r.charge(c.charge)
	if c.attempts == 0 {
		p.st.submitted()
	}
	c.attempts++
}

// wait waits for a call to finish and takes its result.
func (p *poolStream) wait(ctx context.Context) error {
	var refs []atoll.Ref
	var calls []*poolCall
	for _, m := range p.actors {
		if m.busy != nil {
			refs = append(refs, m.busy.refs[0])
			calls = append(calls, m.busy)
		}
	}
	if len(refs) == 0 {
		return fmt.Errorf("data: actor pool: blocks wait and no actor runs one") // cannot happen: fill sends when none runs
	}
	ready, _, err := atoll.Wait(ctx, refs, atoll.FetchLocal(false))
	if err != nil {
		return err
	}
	for i, r := range refs {
		if len(ready) > 0 && r == ready[0] {
			return p.finish(ctx, calls[i])
		}
	}
	return nil
}

// actorDied says whether a call failed because its actor (or the
// actor's worker or node) died: the block may go to another actor. A
// constructor that failed (a malformed pool spec) fails the run: every
// actor would fail it the same way. (A failed setup fails the calls, not
// the constructor: see poolActor.err.)
func actorDied(err error) bool {
	var ad *atoll.ActorDiedError
	if errors.As(err, &ad) && strings.HasPrefix(ad.Message, "constructor failed") {
		return false
	}
	return errors.Is(err, atoll.ErrActorDied) || errors.Is(err, atoll.ErrWorkerCrashed) || errors.Is(err, atoll.ErrNodeDied)
}

func (p *poolStream) finish(ctx context.Context, c *poolCall) error {
	m := c.m
	m.busy, c.m = nil, nil
	p.r.charge(-c.charge)
	raw, err := atoll.Get(ctx, c.refs[0])
	if err != nil {
		releaseRefs(c.refs)
		c.refs = nil
		if !actorDied(err) || c.attempts >= poolMaxAttempts || ctx.Err() != nil {
			return err
		}
		c.last = m
		p.waiting = append([]*poolCall{c}, p.waiting...)
		m.deaths++
		p.st.mu.Lock()
		p.st.pool.retried++
		if m.deaths > poolMaxRestarts {
			p.st.pool.replaced++
		}
		p.st.mu.Unlock()
		if m.deaths > poolMaxRestarts {
			p.remove(m) // its restarts ran out: it is dead for good
		}
		return nil
	}
	meta, err := decodeMeta(raw.Data, len(c.refs)-1)
	if err != nil {
		releaseRefs(c.refs)
		return err
	}
	c.refs[0].Release()
	schema, err := decodeSchema(meta.Schema)
	if err != nil {
		releaseRefs(c.refs[1:])
		return err
	}
	var rows, outBytes int64
	for i := range meta.Rows {
		b := block{ref: c.refs[1+i], rows: meta.Rows[i], bytes: meta.Bytes[i], schema: schema}
		rows += b.rows
		outBytes += b.bytes
		p.r.charge(b.bytes)
		c.out = append(c.out, b)
	}
	releaseRefs(c.refs[1+len(meta.Rows):])
	c.refs = nil
	for _, b := range c.u.inputs {
		b.release()
		p.r.charge(-b.bytes)
	}
	c.u.inputs = nil
	c.finished = true
	p.ratio = max(p.ratio, float64(outBytes)/float64(max(c.u.estimate, 1)), 1e-6)
	p.st.task(time.Duration(meta.WallNs), time.Duration(meta.CpuNs), rows)
	return nil
}

func (p *poolStream) remove(m *poolMember) {
	for i, x := range p.actors {
		if x == m {
			p.actors = append(p.actors[:i], p.actors[i+1:]...)
			p.r.holdCPU(-p.st.taskCPU)
			break
		}
	}
	_ = atoll.Kill(context.Background(), m.h)
}

// stop kills the pool's actors.
func (p *poolStream) stop() {
	if p.stopped {
		return
	}
	p.stopped = true
	for _, m := range p.actors {
		_ = atoll.Kill(context.Background(), m.h) // fails only when atoll is down: the actors are gone then
		p.r.holdCPU(-p.st.taskCPU)
	}
	p.actors = nil
}

func (p *poolStream) close() {
	p.stop()
	for _, c := range p.calls {
		releaseRefs(c.refs)
		if c.m != nil {
			p.r.charge(-c.charge)
		}
		for _, b := range c.u.inputs {
			b.release()
			p.r.charge(-b.bytes)
		}
		for _, b := range c.out {
			b.release()
			p.r.charge(-b.bytes)
		}
	}
	p.calls, p.waiting = nil, nil
	for _, b := range p.ready {
		b.release()
		p.r.charge(-b.bytes)
	}
	p.ready = nil
	if c, ok := p.src.(interface{ close() }); ok {
		c.close()
	}
}
