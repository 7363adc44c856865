// Package owner is the ownership state machine of one atoll process (a
// driver or a worker process): the objects it owns or borrows and their
// reference counts, the tasks it submitted until they finish (argument
// resolution, dispatch, retries, cancellation), and the caller side of the
// actors it holds handles to (call order, restarts, death).
//
// Table is pure, like objectstore.Store: it does no I/O, starts no
// goroutine and reads no clock. Events go in as method calls (Submit,
// Result, Cancel, AddRef, DropRef, Borrow, ActorEvent, NodeDied, ...);
// what the outside world must do comes out as Effects (send a task, call
// an actor, cancel a running task, free objects from the store, wake
// waiters), drained with TakeEffects in the order they happened. The
// runtime's shell (package atoll) serialises every call on one Table and
// applies the effects outside its lock, one drainer at a time, so effects
// reach the node in the order the Table produced them (an actor's calls
// stay in call order without any lock held across I/O).
//
// Table is not safe for concurrent use.
package owner
