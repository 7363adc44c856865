// Package outbox is how a state machine's shell carries out its effects:
// whoever steps the machine, under the shell's mutex, queues the effects
// it returned and, unless another goroutine is draining already, applies
// the queue outside the mutex until it is empty. Effects are applied in
// the order the steps made them, by one goroutine at a time, and never
// under the mutex (an effect may block, or step the machine again).
//
// The owner's table (internal/runtime) and the driver's task submitter
// (internal/raylet) use it.
package outbox

import "sync"

// Outbox is a shell's queue of effects of type E. Its zero value is
// empty; it is guarded by the shell's mutex.
type Outbox[E any] struct {
	queue []E
	// spare is the array of the batch applied last, emptied, for the
	// next queue: the drainer and the stepping goroutines take turns
	// with two arrays instead of allocating one per step.
	spare    []E
	draining bool
}

// maxSpare bounds the arrays kept for reuse (the spare, a state
// machine's in Move): a flood's are let go.
const maxSpare = 1024

// Add queues effects. The shell's mutex is held.
func (o *Outbox[E]) Add(effects ...E) {
	o.reuse()
	o.queue = append(o.queue, effects...)
}

// AddFrom queues the effects take appends to the queue it is given (a
// state machine's that hands its effects over without a slice of its
// own, owner.Table.AppendEffects). The shell's mutex is held.
func (o *Outbox[E]) AddFrom(take func([]E) []E) {
	o.reuse()
	o.queue = take(o.queue)
}

// Move appends *effects to dst, in order, empties *effects and returns
// dst: how a state machine hands its effects to its shell's queue
// (AddFrom) keeping its own array for the next step, unless a flood grew
// it past what is worth keeping.
func Move[E any](dst []E, effects *[]E) []E {
	dst = append(dst, *effects...)
	clear(*effects)
	*effects = (*effects)[:0]
	if cap(*effects) > maxSpare {
		*effects = nil
	}
	return dst
}

// reuse makes the spare array the queue's while the queue has none.
func (o *Outbox[E]) reuse() {
	if o.queue == nil {
		o.queue, o.spare = o.spare, nil
	}
}

// Drain is called with mu held, after the step's effects were added: it
// applies the queue outside mu unless another goroutine is draining
// (that one applies them, in order), and returns with mu released.
func (o *Outbox[E]) Drain(mu *sync.Mutex, apply func(E)) {
	if o.draining || len(o.queue) == 0 {
		mu.Unlock()
		return
	}
	o.draining = true
	for len(o.queue) > 0 {
		batch := o.queue
		o.queue, o.spare = o.spare, nil
		mu.Unlock()
		var zero E
		for i, e := range batch {
			apply(e)
			batch[i] = zero // the batch's array is used again, or may be kept alive by a later append
		}
		mu.Lock()
		if cap(batch) <= maxSpare {
			o.spare = batch[:0] // the queue has the other array, or none
		}
	}
	o.draining = false
	mu.Unlock()
}
