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
	queue    []E
	draining bool
}

// Add queues effects. The shell's mutex is held.
func (o *Outbox[E]) Add(effects ...E) { o.queue = append(o.queue, effects...) }

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
		o.queue = nil
		mu.Unlock()
		var zero E
		for i, e := range batch {
			apply(e)
			batch[i] = zero // the batch's array may be kept alive by a later append
		}
		mu.Lock()
	}
	o.draining = false
	mu.Unlock()
}
