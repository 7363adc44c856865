package util

import (
	"context"
	"fmt"
	"iter"
	"sync"

	"github.com/atoll-runtime/atoll"
)

// PoolFunc submits one piece of work, v, to the actor h and returns the
// reference to its result: usually a method's Remote,
//
//	func(ctx context.Context, h atoll.ActorHandle[*W], v int) atoll.ObjectRef[int] {
//		return square.Remote(ctx, h, atoll.Value(v))
//	}
type PoolFunc[T, V, R any] func(ctx context.Context, h atoll.ActorHandle[T], v V) atoll.ObjectRef[R]

// ActorPool runs work on a fixed set of actors of one type, one piece at
// a time per actor (Ray's ray.util.ActorPool): Submit gives work to an
// idle actor, or queues it until one is free; GetNext returns results in
// submission order, GetNextUnordered in completion order; Map and
// MapUnordered do both over a slice. T is the actor type, V the type of
// one piece of work and R its result.
//
// As in Ray, an actor goes back to the pool when its result is returned
// (by GetNext or GetNextUnordered), and queued work then goes to it. An
// ActorPool is safe for concurrent use; GetNext and GetNextUnordered hold
// it while they wait, so the pool's other methods wait for them.
type ActorPool[T, V, R any] struct {
	mu sync.Mutex
	// idle actors, taken from the front.
	idle []atoll.ActorHandle[T]
	// pending is the work not yet returned, in submission order: running
	// on an actor (ref set) or queued for one.
	pending []*poolWork[T, V, R]
	// queued counts the pending work that waits for an actor; it is the
	// tail of pending that has no ref.
	queued int
}

// poolWork is one piece of submitted work.
type poolWork[T, V, R any] struct {
	ctx   context.Context // Submit's: the work is sent with it, now or later
	fn    PoolFunc[T, V, R]
	value V
	actor atoll.ActorHandle[T]
	ref   atoll.ObjectRef[R] // zero while queued
}

// NewActorPool returns a pool over actors, all idle.
func NewActorPool[T, V, R any](actors ...atoll.ActorHandle[T]) *ActorPool[T, V, R] {
	return &ActorPool[T, V, R]{idle: append([]atoll.ActorHandle[T](nil), actors...)}
}

// Submit gives v to an idle actor with fn, or queues it until an actor is
// returned to the pool. Queued work is sent later with ctx, the context
// given here.
func (p *ActorPool[T, V, R]) Submit(ctx context.Context, fn PoolFunc[T, V, R], v V) {
	p.mu.Lock()
	defer p.mu.Unlock()
	w := &poolWork[T, V, R]{ctx: ctx, fn: fn, value: v}
	p.pending = append(p.pending, w)
	if len(p.idle) > 0 && p.queued == 0 {
		p.start(w, p.takeIdle())
		return
	}
	p.queued++
}

// takeIdle removes the first idle actor; the caller checked there is one.
func (p *ActorPool[T, V, R]) takeIdle() atoll.ActorHandle[T] {
	h := p.idle[0]
	p.idle = p.idle[1:]
	return h
}

// start sends w to actor h.
func (p *ActorPool[T, V, R]) start(w *poolWork[T, V, R], h atoll.ActorHandle[T]) {
	w.actor = h
	w.ref = w.fn(w.ctx, h, w.value)
}

// giveBack returns h to the pool: the oldest queued work goes to it, or it
// is idle.
func (p *ActorPool[T, V, R]) giveBack(h atoll.ActorHandle[T]) {
	if p.queued > 0 {
		w := p.pending[len(p.pending)-p.queued]
		p.queued--
		p.start(w, h)
		return
	}
	p.idle = append(p.idle, h)
}

// remove drops the i-th pending work (a started one) and returns its
// actor to the pool.
func (p *ActorPool[T, V, R]) remove(i int) *poolWork[T, V, R] {
	w := p.pending[i]
	p.pending = append(p.pending[:i], p.pending[i+1:]...)
	p.giveBack(w.actor)
	return w
}

// HasNext reports whether submitted work has a result not yet returned.
func (p *ActorPool[T, V, R]) HasNext() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.pending) > 0
}

// HasFree reports whether an actor is idle and no work waits for one:
// work submitted now starts at once.
func (p *ActorPool[T, V, R]) HasFree() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.idle) > 0 && p.queued == 0
}

// Push adds an actor to the pool (or returns one PopIdle took): it takes
// the oldest queued work, or waits idle.
func (p *ActorPool[T, V, R]) Push(h atoll.ActorHandle[T]) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.giveBack(h)
}

// PopIdle takes an idle actor out of the pool, if there is one (ok false
// otherwise); the pool no longer uses it.
func (p *ActorPool[T, V, R]) PopIdle() (h atoll.ActorHandle[T], ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.idle) == 0 {
		return h, false
	}
	return p.takeIdle(), true
}

// GetNext waits for the result of the oldest work not yet returned and
// returns it (its error if the call failed), handing its actor the next
// queued work. If ctx ends first, it returns ctx's error and the work
// stays pending: the next GetNext waits for it again. With nothing
// pending it returns ErrNoPending.
func (p *ActorPool[T, V, R]) GetNext(ctx context.Context) (R, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	var zero R
	if len(p.pending) == 0 {
		return zero, ErrNoPending
	}
	w := p.pending[0]
	if w.ref.IsZero() {
		return zero, ErrNoActors
	}
	if err := waitReady(ctx, []atoll.Ref{w.ref}); err != nil {
		return zero, err
	}
	p.remove(0)
	return atoll.Get(ctx, w.ref)
}

// GetNextUnordered waits for the first result of any running work, in
// completion order, and returns it as GetNext does.
func (p *ActorPool[T, V, R]) GetNextUnordered(ctx context.Context) (R, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	var zero R
	if len(p.pending) == 0 {
		return zero, ErrNoPending
	}
	running := len(p.pending) - p.queued
	if running == 0 {
		return zero, ErrNoActors
	}
	refs := make([]atoll.Ref, running)
	for i, w := range p.pending[:running] {
		refs[i] = w.ref
	}
	ready, err := waitAny(ctx, refs)
	if err != nil {
		return zero, err
	}
	w := p.remove(ready)
	return atoll.Get(ctx, w.ref)
}

// Map submits every value and yields the results in the order of values,
// each with its error (a failed call does not stop the others). It needs
// a pool with nothing pending: else it yields one error (matching
// atoll.ErrInvalidArgument) and stops. If ctx ends, it yields ctx's error
// and stops. After a stop, or a break out of the loop, the work not yet
// returned stays pending in the pool (GetNext returns it).
func (p *ActorPool[T, V, R]) Map(ctx context.Context, fn PoolFunc[T, V, R], values []V) iter.Seq2[R, error] {
	return p.mapWith(ctx, fn, values, p.GetNext)
}

// MapUnordered is Map yielding results as they complete.
func (p *ActorPool[T, V, R]) MapUnordered(ctx context.Context, fn PoolFunc[T, V, R], values []V) iter.Seq2[R, error] {
	return p.mapWith(ctx, fn, values, p.GetNextUnordered)
}

// errPendingBeforeMap is what Map yields on a pool with pending work.
var errPendingBeforeMap = fmt.Errorf("%w: Map on an actor pool with pending results: take them with GetNext first (Map would return them as its own)", atoll.ErrInvalidArgument)

func (p *ActorPool[T, V, R]) mapWith(ctx context.Context, fn PoolFunc[T, V, R], values []V, next func(context.Context) (R, error)) iter.Seq2[R, error] {
	return func(yield func(R, error) bool) {
		var zero R
		if p.HasNext() {
			yield(zero, errPendingBeforeMap)
			return
		}
		for _, v := range values {
			p.Submit(ctx, fn, v)
		}
		for range values {
			r, err := next(ctx)
			if !yield(r, err) || ctx.Err() != nil {
				return
			}
		}
	}
}

// waitReady waits until every ref is ready or ctx ends.
func waitReady(ctx context.Context, refs []atoll.Ref) error {
	ready, _, err := atoll.Wait(ctx, refs, atoll.NumReady(len(refs)), atoll.FetchLocal(false))
	if err == nil && len(ready) < len(refs) {
		err = ctx.Err() // Wait returns what is ready when ctx's deadline passes
	}
	return err
}

// waitAny waits until one of refs is ready and returns its index.
func waitAny(ctx context.Context, refs []atoll.Ref) (int, error) {
	ready, _, err := atoll.Wait(ctx, refs, atoll.NumReady(1), atoll.FetchLocal(false))
	if err == nil && len(ready) == 0 {
		err = ctx.Err() // Wait returns what is ready when ctx's deadline passes
	}
	if err != nil {
		return 0, err
	}
	for i, r := range refs {
		if r.ID() == ready[0].ID() {
			return i, nil
		}
	}
	return 0, fmt.Errorf("actor pool: Wait returned %s, which the pool did not submit", ready[0].ID())
}
