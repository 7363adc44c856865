package runtime

import (
	"sync"

	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/ids"
	"github.com/atoll-runtime/atoll/internal/outbox"
	"github.com/atoll-runtime/atoll/internal/owner"
)

// ownerShell is the I/O shell around this process's ownership state
// machine (owner.Table). Every event — from user goroutines (Put, submit,
// Get, Cancel, Wait) and from the owner actor (results, actor events,
// dropped refs) — is applied under mu, the only lock on the Table; the
// effects it produces are queued in order and applied outside mu by one
// drainer at a time, so they reach the node in the Table's order (an
// actor's calls stay in call order) while no lock is held across I/O.
// User goroutines step the Table directly rather than through the owner
// actor's mailbox: a Get of a ready object or a Put then costs a mutex,
// not a mailbox round trip.
type ownerShell struct {
	mu     sync.Mutex
	table  *owner.Table
	outbox outbox.Outbox[owner.Effect] // under mu
	apply  func(owner.Effect)
	// dropsDue, if set, is called (under mu: it must only post) when a
	// step left standalone borrow reports due (a worker process dropped
	// objects a lender was told it held).
	dropsDue func()
}

func newOwnerShell(t *owner.Table, apply func(owner.Effect)) *ownerShell {
	return &ownerShell{table: t, apply: apply}
}

// do applies f to the Table, then drains the effects unless another
// goroutine is draining already (it will apply them, in order). An effect
// applied by the drainer may call do again: that call only queues.
func (s *ownerShell) do(f func(*owner.Table)) {
	s.mu.Lock()
	f(s.table)
	s.drainLocked()
}

// drainLocked queues the Table's new effects and, unless another
// goroutine is draining, applies the queue outside mu. It releases mu.
func (s *ownerShell) drainLocked() {
	s.table.Compact()
	if s.table.HasEffects() {
		s.outbox.AddFrom(func(q []owner.Effect) []owner.Effect {
			n := len(q)
			q = s.table.AppendEffects(q)
			// Under mu: a Get woken by this step reads its value under
			// mu too, so it finds its task's submit span ended.
			endSubmitSpans(q[n:])
			return q
		})
	}
	if s.dropsDue != nil && s.table.HasDropReports() {
		s.dropsDue()
	}
	s.outbox.Drain(&s.mu, s.apply)
}

// lookup returns an object's value (nil while pending), producer and a
// channel closed once it has a value.
func (s *ownerShell) lookup(id ids.ObjectID) (value *atollpb.Value, producer *atollpb.TraceContext, done <-chan struct{}, ok bool) {
	return s.lookupRecord(id, owner.Record{})
}

// lookupRecord is lookup of an object whose record the caller's
// reference came with (owner.Table.LookupRecord).
func (s *ownerShell) lookupRecord(id ids.ObjectID, rec owner.Record) (value *atollpb.Value, producer *atollpb.TraceContext, done <-chan struct{}, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.table.LookupRecord(id, rec)
}

// valueOf is lookupRecord's value alone, without the done channel
// (owner.Table.ValueOf).
func (s *ownerShell) valueOf(id ids.ObjectID, rec owner.Record) (*atollpb.Value, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.table.ValueOf(id, rec)
}

// taskState is the owner's view of a pending task it owns.
func (s *ownerShell) taskState(id ids.TaskID) (owner.TaskState, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.table.TaskState(id)
}

// readiness sets ready[i] for every object of idl that has a value, or
// is unknown, or is not local[i] (one lock for all), and counts them.
// Entries already marked ready are not looked up again.
func (s *ownerShell) readiness(idl []ids.ObjectID, local, ready []bool) int {
	n := 0
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, id := range idl {
		if ready[i] {
			n++ // an object once ready stays ready for Wait
			continue
		}
		if local[i] {
			v, _, _, ok := s.table.Lookup(id)
			ready[i] = !ok || v != nil
		} else {
			ready[i] = true
		}
		if ready[i] {
			n++
		}
	}
	return n
}

// reconstruct has the task that produced id run again, its every copy
// lost (cause); nil once the object is pending again, else why not.
func (s *ownerShell) reconstruct(id ids.ObjectID, cause error) error {
	s.mu.Lock()
	if s.table.Borrowed(id) {
		s.mu.Unlock()
		return cause // its owner rebuilds it, when a reader there asks
	}
	e := s.table.Reconstruct(id, cause.Error())
	s.drainLocked()
	return errs.FromProto(e)
}

func (s *ownerShell) addRef(id ids.ObjectID) (ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.table.AddRef(id)
}

func (s *ownerShell) dropRef(idl ...ids.ObjectID) {
	if len(idl) > 0 {
		s.mu.Lock()
		s.table.DropRef(idl...)
		s.drainLocked()
	}
}

func (s *ownerShell) put(id ids.ObjectID, value *atollpb.Value, producer *atollpb.TraceContext, contained []ids.ObjectID) owner.Record {
	s.mu.Lock()
	rec := s.table.PutRecord(id, value, producer, contained)
	s.drainLocked()
	return rec
}

// ownerNode is the node of id's owner to name in a fetch: this process's
// node for what it owns, "" for borrowed objects (their owner is found
// through the copy's own location).
func (s *ownerShell) ownerNode(id ids.ObjectID) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.table.Borrowed(id) {
		return ""
	}
	n := s.table.OwnerNode(id)
	if n.IsZero() {
		return ""
	}
	return n.String()
}

func (s *ownerShell) stats() owner.Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.table.Stats()
}

// taskAttach is what the shell keeps with each task it submitted: the
// submit span and the context watch that cancels the task.
type taskAttach struct {
	// task is the task it is attached to.
	task ids.TaskID
	span trace.Span
	// release, if set, frees the call's place under its handle's
	// MaxPendingCalls when it finishes.
	release func()

	mu       sync.Mutex
	watch    *contextWatch
	finished bool
}

// setWatch records the context watch; if the task finished already it is
// forgotten at once, else cancelled if its context is done already (the
// watch may have fired before the task named it).
func (a *taskAttach) setWatch(w *contextWatch) {
	a.mu.Lock()
	done := a.finished
	if !done {
		a.watch = w
	}
	a.mu.Unlock()
	if done {
		w.forget()
		return
	}
	w.spannedTask(a)
	w.submitted(a.task)
}

// isFinished reports whether the task finished (its watch forgot it).
func (a *taskAttach) isFinished() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.finished
}

// watchedBy reports whether w is the task's context watch.
func (a *taskAttach) watchedBy(w *contextWatch) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.watch == w
}

func (a *taskAttach) finish() {
	a.mu.Lock()
	w, release := a.watch, a.release
	a.finished, a.watch, a.release = true, nil, nil
	a.mu.Unlock()
	if w != nil {
		w.forget()
	}
	if release != nil {
		release()
	}
}

// endSubmitSpans ends the submit spans of the tasks a Table step
// finished, ERROR if they failed, as the step's effects are taken (under
// the shell's mutex): a Get the step wakes, and the caller's next step
// (reading its spans, Shutdown), find the span ended. Ending a span hands
// it to the span processor (OTel's batch processor queues it; a
// synchronous exporter would export under the mutex).
func endSubmitSpans(batch []owner.Effect) {
	for _, e := range batch {
		if f, ok := e.(owner.Finished); ok {
			if a, ok := f.Attach.(*taskAttach); ok {
				if f.Err != nil {
					a.span.SetStatus(codes.Error, f.Err.Message)
				}
				a.span.End()
			}
		}
	}
}

// collected queues the refs whose handles the garbage collector found
// unreachable. The sweep that finds them (refwatch.go) appends under a
// short mutex and posts one drainCollected to the owner actor per batch:
// no I/O and no owner-table lock on the sweep, and one owner step for a
// burst of drops (a slice of 10,000 refs going out of scope).
//
// A handle's release and its queuing are one step under mu, and a drain
// takes and applies the queue under applyMu: whoever drains (the owner
// actor, or a worker reporting its borrows at a task's end, borrow.go)
// sees every handle marked released either queued or applied.
type collected struct {
	mu     sync.Mutex
	drops  []ids.ObjectID
	posted bool
	// spare is the last list applied, emptied, for the next to fill
	// (kept only up to maxSpareDrops: a drained flood keeps no list its
	// size).
	spare []ids.ObjectID

	applyMu sync.Mutex
}

// drainCollected tells the owner actor to drop the queued refs.
type drainCollected struct{}

// applyCollected drops the queued refs now.
func (rt *Runtime) applyCollected() {
	rt.collected.applyMu.Lock()
	defer rt.collected.applyMu.Unlock()
	drops := rt.collected.take()
	if rt.closed.Load() {
		return
	}
	rt.owner.dropRef(drops...) // the table keeps no part of the list
	rt.collected.giveBack(drops)
}

// maxSpareDrops bounds the list of drops kept for reuse.
const maxSpareDrops = 16384

// addAll releases handles and queues their drops, but those released
// already; it reports whether the caller must post a drain.
func (c *collected) addAll(sts []*refState) (post bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.drops == nil {
		c.drops, c.spare = c.spare, nil
	}
	n := len(c.drops)
	for _, st := range sts {
		if st.released.CompareAndSwap(false, true) {
			c.drops = append(c.drops, st.id)
		}
	}
	if len(c.drops) == n {
		return false
	}
	post, c.posted = !c.posted, true
	return post
}

func (c *collected) take() []ids.ObjectID {
	c.mu.Lock()
	defer c.mu.Unlock()
	drops := c.drops
	c.drops, c.posted = nil, false
	return drops
}

// giveBack keeps drops, a list taken and applied, for the next drops.
func (c *collected) giveBack(drops []ids.ObjectID) {
	if cap(drops) > maxSpareDrops {
		return
	}
	c.mu.Lock()
	if c.spare == nil {
		c.spare = drops[:0]
	}
	c.mu.Unlock()
}

// cancelTask cancels a task this process owns.
func (rt *Runtime) cancelTask(id ids.TaskID, nonRecursive bool) {
	rt.owner.do(func(t *owner.Table) { t.Cancel(id, nonRecursive) })
}
