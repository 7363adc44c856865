package graph

import (
	"context"
	"fmt"
	"log/slog"
	"reflect"
	"runtime"
	"time"

	"github.com/atoll-runtime/atoll"
	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/codec"
	"github.com/atoll-runtime/atoll/internal/errs"
)

// Option configures Compute and Persist.
type Option func(*options)

type options struct {
	callOpts      []atoll.TaskOption
	callbacks     []Callback
	taskCallbacks []taskCallbackOpt
	noFusion      bool
	stats         func(Stats)
}

type taskCallbackOpt struct {
	name, param string
	keys        map[Key]bool // nil: every task
}

// WithCallOptions passes opts (resources, retries, Spread, ...) to every
// task submitted.
func WithCallOptions(opts ...atoll.TaskOption) Option {
	return func(o *options) { o.callOpts = append(o.callOpts, opts...) }
}

// WithCallbacks adds driver-side callbacks (see Callback).
func WithCallbacks(cbs ...Callback) Option {
	return func(o *options) { o.callbacks = append(o.callbacks, cbs...) }
}

// WithTaskCallback runs the task callback registered as name (see
// RegisterTaskCallback) around the tasks of the given keys, or of every
// task if none are given, passing it param.
func WithTaskCallback(name, param string, keys ...Key) Option {
	return func(o *options) {
		t := taskCallbackOpt{name: name, param: param}
		if len(keys) > 0 {
			t.keys = map[Key]bool{}
			for _, k := range keys {
				t.keys[k] = true
			}
		}
		o.taskCallbacks = append(o.taskCallbacks, t)
	}
}

// WithFusion turns the fusion of linear chains on (the default) or off.
func WithFusion(on bool) Option { return func(o *options) { o.noFusion = !on } }

// WithStats calls fn with the run's task counts before anything is
// submitted.
func WithStats(fn func(Stats)) Option { return func(o *options) { o.stats = fn } }

// Stats counts the tasks of one Compute or Persist. A task is a key
// computed by a function (Task, MultiReturn or Item values).
type Stats struct {
	Keys          int // keys in the graph
	TasksBefore   int // tasks in the graph
	AfterCull     int // tasks the requested keys need
	AfterFusion   int // tasks left once linear chains are fused
	Submitted     int // atoll tasks submitted
	FromCallbacks int // tasks whose result a PreSubmit callback supplied
	ObjectsPut    int // literals put in the object store
}

// Callback hooks into a run in the driver (Dask-on-Ray's ray_presubmit,
// ray_postsubmit, ray_postsubmit_all and ray_finish); the hooks around
// each task in the worker are TaskCallbacks. Embed NopCallback to
// implement only some hooks. Hooks run on the goroutine calling Compute
// or Persist, except where noted.
type Callback interface {
	// PreSubmit runs before a task is submitted; returning ok supplies
	// its result instead (a cache), and the task and the tasks only it
	// needs are not submitted. It is called for every task before any is
	// submitted, every consumer of a task before the task (a dependency
	// several tasks read comes after all of them), and not for the tasks
	// that only supplied tasks read.
	PreSubmit(key Key, task Submission) (result any, ok bool)
	// PostSubmit runs after a task was submitted, with its result's ref
	// (a MultiReturn task's first output).
	PostSubmit(key Key, ref atoll.Ref)
	// PostSubmitAll runs once every task is submitted.
	//
	// The refs passed to PostSubmit and PostSubmitAll share the run's
	// references: those of keys that were not requested are released
	// once the tasks that read them have them (at the latest when the run
	// ends), so use them during the call, not later.
	PostSubmitAll(refs map[Key]atoll.Ref)
	// Finish runs when the run is over: Compute has its results (or
	// failed), Persist has submitted everything.
	Finish(err error)
}

// Submission is a task about to be submitted.
type Submission struct {
	Expr Expr         // the key's value, with fused chains inlined
	Type reflect.Type // the type of its result
	Hash string       // content hash (see TaskInfo.Hash)
}

// NopCallback implements every Callback hook as a no-op.
type NopCallback struct{}

func (NopCallback) PreSubmit(Key, Submission) (any, bool) { return nil, false }
func (NopCallback) PostSubmit(Key, atoll.Ref)             {}
func (NopCallback) PostSubmitAll(map[Key]atoll.Ref)       {}
func (NopCallback) Finish(error)                          {}

// run is one Compute or Persist after submission: the refs of every
// submitted task, and the values callbacks supplied.
type execution struct {
	p        *plan
	o        *options
	refs     map[*node][]atoll.ObjectRef[atoll.Raw]
	supplied map[*node]any
	litRefs  map[*litSource]atoll.ObjectRef[atoll.Raw]
	// keep are the requested keys' tasks: the run holds their refs to the
	// end. Every other ref is released as soon as nothing needs it (see
	// release): the tasks that consume it hold it themselves, as in Dask,
	// which forgets intermediate results once their dependents have them.
	keep    map[*node]bool
	tracker *tracker
}

// Compute computes keys of g with atoll and returns their values in key
// order: each graph task (after culling and fusion) runs as one atoll
// task, its dependencies passed as refs. Values are copies, safe to keep.
// A task's failure comes back as its atoll error (a *atoll.TaskError
// whose TaskName is the failing key, ...).
func Compute(ctx context.Context, g Graph, keys []Key, opts ...Option) ([]any, error) {
	if len(keys) == 0 {
		return []any{}, nil
	}
	r, err := start(ctx, g, keys, opts)
	if err != nil {
		return nil, err
	}
	out := make([]any, len(keys))
	for i, k := range keys {
		if out[i], err = r.value(ctx, k); err != nil {
			break
		}
	}
	r.finish(err)
	if err != nil {
		return nil, err
	}
	return out, nil
}

// ComputeOne computes one key whose value is a T.
func ComputeOne[T any](ctx context.Context, g Graph, key Key, opts ...Option) (T, error) {
	var zero T
	vals, err := Compute(ctx, g, []Key{key}, opts...)
	if err != nil {
		return zero, err
	}
	v, ok := vals[0].(T)
	if !ok {
		return zero, fmt.Errorf("%w: key %q holds a %T, not a %v", atoll.ErrInvalidArgument, key, vals[0], reflect.TypeFor[T]())
	}
	return v, nil
}

// Persist submits what keys need and returns g with those keys replaced
// by Object expressions of their (future) results, without the keys only
// they needed: later computations on it re-run nothing. The tasks run in
// the background; cancelling ctx after Persist returns does not cancel
// them.
func Persist(ctx context.Context, g Graph, keys []Key, opts ...Option) (Graph, error) {
	if len(keys) == 0 {
		return g.Copy(), nil
	}
	r, err := start(context.WithoutCancel(ctx), g, keys, opts)
	if err != nil {
		return nil, err
	}
	out, err := r.persisted(keys)
	r.finish(err)
	return out, err
}

func start(ctx context.Context, g Graph, keys []Key, opts []Option) (*execution, error) {
	o := &options{}
	for _, opt := range opts {
		opt(o)
	}
	for _, tc := range o.taskCallbacks {
		if _, err := errs.Lookup(taskCallbacks, tc.name); err != nil {
			return nil, fmt.Errorf("%w: graph: WithTaskCallback: %w", atoll.ErrInvalidArgument, err)
		}
	}
	p, err := makePlan(g, keys, !o.noFusion, len(o.callbacks)+len(o.taskCallbacks) > 0)
	if err != nil {
		return nil, err
	}
	r := &execution{p: p, o: o, refs: map[*node][]atoll.ObjectRef[atoll.Raw]{}, supplied: map[*node]any{},
		litRefs: map[*litSource]atoll.ObjectRef[atoll.Raw]{}}
	needed := r.preSubmit()
	p.stats.FromCallbacks = len(r.supplied)
	if err := r.submit(ctx, needed); err != nil {
		r.finish(err)
		return nil, err
	}
	r.keep = map[*node]bool{}
	for _, k := range p.requested {
		if n := p.nodes[k]; n != nil {
			r.keep[n] = true
		}
	}
	for _, ref := range r.litRefs {
		ref.Release() // the tasks that read a literal hold it
	}
	var observers []progressObserver
	for _, cb := range o.callbacks {
		if po, ok := cb.(progressObserver); ok {
			observers = append(observers, po)
		}
	}
	if len(observers) > 0 {
		r.tracker = r.track(observers)
	} else {
		r.release()
	}
	s := p.stats
	slog.Debug("graph: submitted", "keys", s.Keys, "tasks", s.TasksBefore, "after_cull", s.AfterCull,
		"after_fusion", s.AfterFusion, "submitted", s.Submitted, "from_callbacks", s.FromCallbacks)
	if o.stats != nil {
		o.stats(s)
	}
	return r, nil
}

// preSubmit asks the callbacks about each task, consumers before their
// dependencies (the plan's topological order, reversed, so every consumer
// of a task is asked before it), and returns the tasks to submit: the
// requested ones and those something needed and not supplied reads,
// unless a callback supplied them.
func (r *execution) preSubmit() map[*node]bool {
	needed := map[*node]bool{}
	for _, k := range r.p.requested {
		if n := r.p.nodes[k]; n != nil {
			needed[n] = true
		}
	}
	for i := len(r.p.order) - 1; i >= 0; i-- {
		n := r.p.order[i]
		if !needed[n] {
			continue
		}
		supplied := false
		for _, cb := range r.o.callbacks {
			if v, ok := cb.PreSubmit(n.key, Submission{Expr: n.expr, Type: n.typ, Hash: n.hash}); ok {
				r.supplied[n] = v
				supplied = true
				break
			}
		}
		if supplied {
			continue
		}
		for _, d := range n.deps {
			if d.node != nil {
				needed[d.node] = true
			}
		}
	}
	return needed
}

// submit submits every needed task in one pass, dependencies first.
func (r *execution) submit(ctx context.Context, needed map[*node]bool) error {
	all := map[Key]atoll.Ref{}
	for _, n := range r.p.order {
		if !needed[n] {
			continue
		}
		if v, ok := r.supplied[n]; ok {
			ref, err := putValue(ctx, v)
			if err != nil {
				return fmt.Errorf("graph: key %q: %w", n.key, err)
			}
			r.refs[n] = []atoll.ObjectRef[atoll.Raw]{ref}
			continue
		}
		args := make([]atoll.Arg[atoll.Raw], 1, 1+len(n.deps))
		wt := &atollpb.GraphTask{Key: string(n.key), Hash: n.hash, NumReturns: uint32(n.nret), Deps: n.wdeps, Expr: n.wexpr}
		for _, tc := range r.o.taskCallbacks {
			if tc.keys == nil || tc.keys[n.key] {
				wt.Callbacks = append(wt.Callbacks, &atollpb.GraphCallback{Name: tc.name, Param: tc.param})
			}
		}
		spec, err := encodeTask(wt)
		if err != nil {
			return err
		}
		args[0] = atoll.Value(atoll.Raw{Codec: atollpb.Codec_CODEC_PROTO, Data: spec})
		for _, d := range n.deps {
			ref, err := r.sourceRef(ctx, d)
			if err != nil {
				return err
			}
			args = append(args, ref)
		}
		opts := append(r.o.callOpts[:len(r.o.callOpts):len(r.o.callOpts)], atoll.Name(string(n.key)))
		if n.nret > 0 {
			r.refs[n] = execMulti.Remote(ctx, n.nret, args, opts...)
		} else {
			r.refs[n] = []atoll.ObjectRef[atoll.Raw]{execOne.Remote(ctx, args, opts...)}
		}
		r.p.stats.Submitted++
		all[n.key] = r.refs[n][0]
		for _, cb := range r.o.callbacks {
			cb.PostSubmit(n.key, r.refs[n][0])
		}
	}
	for _, cb := range r.o.callbacks {
		cb.PostSubmitAll(all)
	}
	return nil
}

func (r *execution) sourceRef(ctx context.Context, s source) (atoll.Arg[atoll.Raw], error) {
	switch {
	case s.node != nil:
		return r.refs[s.node][s.out], nil
	case s.lit != nil:
		if ref, ok := r.litRefs[s.lit]; ok {
			return ref, nil
		}
		ref, err := atoll.Put(ctx, s.lit.raw)
		if err != nil {
			return nil, fmt.Errorf("graph: put literal key %q: %w", s.lit.key, err)
		}
		r.litRefs[s.lit] = ref
		r.p.stats.ObjectsPut++
		return ref, nil
	}
	return atoll.Retype[atoll.Raw](s.obj.ref), nil
}

func putValue(ctx context.Context, v any) (atoll.ObjectRef[atoll.Raw], error) {
	enc, err := codec.Encode(v)
	if err != nil {
		return atoll.ObjectRef[atoll.Raw]{}, err
	}
	return atoll.Put(ctx, atoll.Raw(enc))
}

func (r *execution) finish(err error) {
	r.tracker.stop()
	r.release()
	for _, cb := range r.o.callbacks {
		cb.Finish(err)
	}
}

// release drops the run's references to the results of the tasks that
// were not requested (Release is idempotent). Pending tasks hold what
// they read, so this frees only what nothing needs any more.
func (r *execution) release() {
	for n, refs := range r.refs {
		if !r.keep[n] {
			for _, ref := range refs {
				ref.Release()
			}
		}
	}
}

// progressObserver is a Callback told how many submitted tasks finished
// (ProgressBar). With one, the run watches its tasks and releases each
// intermediate result once it is done, instead of right after submission.
type progressObserver interface {
	tasksDone(n int)
}

// tracker watches a run's submitted tasks for observers.
type tracker struct {
	cancel  context.CancelFunc
	stopped chan struct{}
	final   func()
}

// progressInterval is the longest a tracker waits before it reports.
const progressInterval = 100 * time.Millisecond

// track starts a goroutine that waits on the submitted tasks, tells the
// observers how many finished and releases the results nothing requested.
// It only reads r.refs and r.keep, which do not change once submitted.
func (r *execution) track(observers []progressObserver) *tracker {
	var pending []atoll.Ref
	byID := map[string]*node{}
	for n, refs := range r.refs {
		if _, ok := r.supplied[n]; ok || len(refs) == 0 {
			continue
		}
		pending = append(pending, refs[0])
		byID[refs[0].ID()] = n
	}
	done := func(ready []atoll.Ref) {
		for _, ref := range ready {
			if n := byID[ref.ID()]; n != nil && !r.keep[n] {
				for _, out := range r.refs[n] {
					out.Release()
				}
			}
		}
		if len(ready) > 0 {
			for _, o := range observers {
				o.tasksDone(len(ready))
			}
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	t := &tracker{cancel: cancel, stopped: make(chan struct{})}
	go func() {
		defer close(t.stopped)
		for len(pending) > 0 {
			tick, stop := context.WithTimeout(ctx, progressInterval)
			ready, notReady, err := atoll.Wait(tick, pending, atoll.NumReady(len(pending)), atoll.FetchLocal(false))
			stop()
			if err != nil {
				return
			}
			pending = notReady
			done(ready)
		}
	}()
	t.final = func() {
		if len(pending) > 0 {
			poll, stop := context.WithDeadline(context.Background(), time.Time{})
			ready, _, _ := atoll.Wait(poll, pending, atoll.NumReady(len(pending)), atoll.FetchLocal(false))
			stop()
			done(ready)
		}
	}
	return t
}

// stop ends the tracker after one last count.
func (t *tracker) stop() {
	if t == nil {
		return
	}
	t.cancel()
	<-t.stopped
	t.final()
}

// value returns requested key k's value, waiting for it.
func (r *execution) value(ctx context.Context, k Key) (any, error) {
	c := r.p.c
	k, e := c.resolve(k)
	if n := r.p.nodes[k]; n != nil {
		if v, ok := r.supplied[n]; ok {
			return v, nil
		}
		refs := r.refs[n]
		if n.nret == 0 {
			v, err := getValue(ctx, refs[0], n.typ)
			if err != nil {
				return nil, fmt.Errorf("graph: computing %q: %w", k, err)
			}
			return v, nil
		}
		out := reflect.New(n.typ).Elem()
		if n.typ.Kind() == reflect.Slice {
			out.Set(reflect.MakeSlice(n.typ, n.nret, n.nret))
		}
		for i, ref := range refs {
			v, err := getValue(ctx, ref, n.typ.Elem())
			if err != nil {
				return nil, fmt.Errorf("graph: computing %q: %w", k, err)
			}
			if i < out.Len() {
				out.Index(i).Set(reflect.ValueOf(v))
			}
		}
		return out.Interface(), nil
	}
	return r.exprValue(ctx, k, e)
}

func (r *execution) exprValue(ctx context.Context, k Key, e Expr) (any, error) {
	switch x := e.(type) {
	case litExpr:
		return x.v, nil
	case objectExpr:
		v, err := getValue(ctx, atoll.Retype[atoll.Raw](x.ref), x.t)
		if err != nil {
			return nil, fmt.Errorf("graph: key %q: %w", k, err)
		}
		return v, nil
	case refExpr:
		return r.value(ctx, x.key)
	case listExpr:
		out := make([]any, len(x.items))
		for i, it := range x.items {
			v, err := r.exprValue(ctx, k, it)
			if err != nil {
				return nil, err
			}
			out[i] = v
		}
		return out, nil
	}
	return nil, fmt.Errorf("graph: internal error: key %q has no value (%T)", k, e)
}

// getValue gets ref's value as a t, copied out of the store.
func getValue(ctx context.Context, ref atoll.ObjectRef[atoll.Raw], t reflect.Type) (any, error) {
	raw, err := atoll.Get(ctx, ref)
	if err != nil {
		return nil, err
	}
	defer runtime.KeepAlive(ref)
	if t == reflect.TypeFor[codec.Raw]() {
		return codec.Raw{Codec: raw.Codec, Data: append([]byte(nil), raw.Data...)}, nil
	}
	v, err := codec.DecodeType(raw.Codec, raw.Data, t)
	if err != nil {
		return nil, err
	}
	if codec.ElemSize(raw.Codec) != 0 && v.Kind() == reflect.Slice {
		c := reflect.MakeSlice(v.Type(), v.Len(), v.Len())
		reflect.Copy(c, v)
		v = c
	}
	return v.Interface(), nil
}

// persisted returns the graph Persist returns.
func (r *execution) persisted(keys []Key) (Graph, error) {
	c := r.p.c
	out := c.g.Copy()
	persisted := map[Key]bool{}
	replace := func(k Key) error {
		_, e := c.resolve(k)
		rk, _ := c.resolve(k)
		if n := r.p.nodes[rk]; n != nil {
			if n.nret > 0 {
				return fmt.Errorf("%w: graph: cannot persist MultiReturn key %q: persist its Items", atoll.ErrInvalidArgument, rk)
			}
			out[k] = Object(r.refs[n][0], n.typ)
		} else if _, isList := e.(listExpr); !isList {
			out[k] = e // a literal or an object: it stays what it is
		}
		persisted[k] = true
		return nil
	}
	for _, k := range keys {
		if err := replace(k); err != nil {
			return nil, err
		}
	}
	for _, k := range r.p.requested {
		if !persisted[k] {
			if err := replace(k); err != nil {
				return nil, err
			}
		}
	}
	// Drop what only the persisted keys needed: the keys they depended on
	// that no other key reaches any more.
	above := map[Key]bool{}
	var up func(k Key)
	up = func(k Key) {
		for _, d := range Deps(c.g[k]) {
			if !above[d] {
				above[d] = true
				up(d)
			}
		}
	}
	for k := range persisted {
		up(k)
	}
	keep := map[Key]bool{}
	var reach func(k Key)
	reach = func(k Key) {
		if keep[k] {
			return
		}
		keep[k] = true
		for _, d := range Deps(out[k]) {
			reach(d)
		}
	}
	for k := range out {
		if !above[k] || persisted[k] {
			reach(k)
		}
	}
	for k := range out {
		if !keep[k] {
			delete(out, k)
		}
	}
	return out, nil
}
