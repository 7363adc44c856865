package sim

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/ids"
	"github.com/atoll-runtime/atoll/internal/owner"
	"github.com/atoll-runtime/atoll/internal/raylet"
	"github.com/atoll-runtime/atoll/internal/runtime"
)

// The checkers. Continuous ones run as the world changes and stop the
// run at the first violation; the final ones run at the end, once the
// workload returned, the faults healed and the cluster went quiet:
//
//   - at most once: no attempt of a task or actor call runs twice, and no
//     raylet ends an attempt twice;
//   - exactly once: each task a live owner submitted finishes there
//     exactly once (its result is applied once, whatever the duplicates);
//   - actor order: each caller's calls start on an actor in the order
//     they were made (strictly increasing sequence numbers across the
//     actor's restarts), each at most once;
//   - no read after free: no store is asked for an object its owner freed
//     (objectstore.Store.ReadsAfterFree), unless the ask was a pull sent
//     before the owner freed it (the reader died with the pull on its
//     way; the source answers that the object is gone);
//   - resolution: the workload returns within the simulated deadline,
//     every error it met typed (an atoll error code);
//   - quiescence: every live store holds nothing, every live process's
//     owner table owns nothing, every raylet is idle;
//   - placement: every placement-group bundle a live raylet holds is
//     committed there by a live group the GCS placed there, and every
//     bundle of a created group is held where the GCS placed it.

// Failure is a checker's verdict against a run.
type Failure struct {
	// Checker names the checker (or "panic", "hang").
	Checker string
	Message string
	// At is the simulated time of the violation.
	At any
}

func (f *Failure) Error() string { return fmt.Sprintf("%s: %s (at %v)", f.Checker, f.Message, f.At) }

type attemptKey struct {
	task    ids.TaskID
	attempt int32
}

type callerKey struct {
	actor  ids.ActorID
	caller string
}

type checks struct {
	w *World
	// ran: where each attempt ran; ends: attempts a raylet ended.
	ran  map[attemptKey]string
	ends map[*raylet.Assignment]int
	// finished: whether each owner's task finished since it was last
	// sent (a finished task runs again only to rebuild a lost object,
	// its lineage); submitted the tasks each owner sent.
	finished  map[*proc]map[ids.TaskID]bool
	submitted map[*proc]map[ids.TaskID]string
	// lastSeq is the last sequence number of each caller's calls that
	// started on each actor.
	lastSeq map[callerKey]uint64
	// stats
	attempts, retries, calls, faultsHit, results uint64
	freedObjects                                 uint64
	deadActors                                   int
	// freedAt is when each owner last freed each object (simulated
	// time): a pull sent before then asked for a live object.
	freedAt map[ids.ObjectID]time.Time
}

func newChecks(w *World) *checks {
	return &checks{w: w, ran: map[attemptKey]string{}, ends: map[*raylet.Assignment]int{},
		finished: map[*proc]map[ids.TaskID]bool{}, submitted: map[*proc]map[ids.TaskID]string{}, lastSeq: map[callerKey]uint64{},
		freedAt: map[ids.ObjectID]time.Time{}}
}

func keyOf(spec *atollpb.TaskSpec) attemptKey {
	return attemptKey{task: ids.MustFromBytes(spec.TaskId), attempt: spec.Attempt}
}

// executed records that an attempt started on where.
func (c *checks) executed(spec *atollpb.TaskSpec, where string) {
	k := keyOf(spec)
	c.attempts++
	if prev, ok := c.ran[k]; ok {
		c.w.fail("at-most-once", "attempt %s ran twice: on %s, then on %s", attempt(spec), prev, where)
		return
	}
	c.ran[k] = where
}

// attemptEnded records that a raylet ended an attempt.
func (c *checks) attemptEnded(n *node, a *raylet.Assignment) {
	if c.ends[a]++; c.ends[a] > 1 {
		c.w.fail("at-most-once", "%s's raylet ended attempt %s (id %d) twice", n.name, attempt(a.Spec()), a.ID())
	}
}

// actorCall records that a call started on an actor.
func (c *checks) actorCall(actor ids.ActorID, spec *atollpb.TaskSpec) {
	c.calls++
	if spec.SequenceNumber == 0 {
		return
	}
	k := callerKey{actor: actor, caller: string(spec.CallerId)}
	if last := c.lastSeq[k]; spec.SequenceNumber <= last {
		c.w.fail("actor-order", "actor %s started call %s with sequence number %d after %d from the same caller", actor.Short(),
			attempt(spec), spec.SequenceNumber, last)
		return
	}
	c.lastSeq[k] = spec.SequenceNumber
}

// observe sees an owner table's effects.
func (c *checks) observe(p *proc, e owner.Effect) {
	switch x := e.(type) {
	case owner.SendTask:
		c.sent(p, x.Spec)
	case *owner.CallActor:
		c.sent(p, x.Spec)
	case owner.Retried:
		c.retries++
	case owner.Finished:
		task, ok := runtime.SimAttachedTask(x.Attach)
		if !ok {
			return
		}
		m := c.finished[p]
		if m == nil {
			m = map[ids.TaskID]bool{}
			c.finished[p] = m
		}
		if m[task] {
			c.w.fail("exactly-once", "%s saw task %s finish twice", p.name, task.Short())
		}
		m[task] = true
	}
}

func (c *checks) sent(p *proc, spec *atollpb.TaskSpec) {
	m := c.submitted[p]
	if m == nil {
		m = map[ids.TaskID]string{}
		c.submitted[p] = m
	}
	task := ids.MustFromBytes(spec.TaskId)
	m[task] = spec.Name
	delete(c.finished[p], task) // sent again: a new run (a rebuild)
}

// resultDelivered counts the results reaching owners.
func (c *checks) resultDelivered(*proc, *atollpb.TaskResult) { c.results++ }

// freed counts an owner's frees and remembers when they were made.
func (c *checks) freed(_ *proc, idl []ids.ObjectID) {
	c.freedObjects += uint64(len(idl))
	for _, id := range idl {
		c.freedAt[id] = c.w.now
	}
}

// readsAfterFree fails the run if a store served a read of a freed
// object, unless the read serves a pull sent before its owner freed it
// (storeParty.pull).
func (c *checks) readsAfterFree(s *storeParty) {
	if raf := s.store.ReadsAfterFree(); raf > s.rafSeen {
		s.rafSeen = raf
		id := s.store.LastReadAfterFree()
		if at, ok := c.freedAt[id]; ok && s.pull.id == id && s.pull.sent.Before(at) {
			c.w.log.add("%s.store was asked for %s, freed since its pull was sent: the source answers it is gone", s.n.name, id.Short())
			return
		}
		c.w.fail("no-read-after-free", "%s's store was asked for an object its owner had freed (%d reads after free; the latest of %s)",
			s.n.name, raf, id.Short())
	}
}

// actorState counts actor deaths.
func (c *checks) actorState(info *atollpb.ActorInfo) {
	if info.State == atollpb.ActorState_ACTOR_DEAD {
		c.deadActors++
	}
}

// Typed reports whether err is nil or one of atoll's typed errors (what a
// Get may fail with: TaskError, WorkerCrashedError, ActorDiedError,
// ObjectLostError, ...), not an untyped one. A workload under faults may
// meet typed errors; an untyped one is a bug.
func Typed(err error) bool { return typedError(err) }

// typedError reports whether err is one of atoll's typed errors (what
// a Get may fail with), not an untyped one.
func typedError(err error) bool {
	if err == nil {
		return true
	}
	var (
		te  *errs.TaskError
		wc  *errs.WorkerCrashedError
		ad  *errs.ActorDiedError
		sf  *errs.ObjectStoreFullError
		ol  *errs.ObjectLostError
		orf *errs.ObjectReconstructionFailedError
		gt  *errs.GetTimeoutError
		cn  *errs.CancelledError
		od  *errs.OwnerDiedError
		nd  *errs.NodeDiedError
		us  *errs.UnschedulableError
		fl  *errs.ForwardLostError
		re  *errs.ResourceExhaustedError
		cd  *errs.CodeError
	)
	return errors.As(err, &te) || errors.As(err, &wc) || errors.As(err, &ad) || errors.As(err, &sf) || errors.As(err, &ol) ||
		errors.As(err, &orf) || errors.As(err, &gt) || errors.As(err, &cn) || errors.As(err, &od) || errors.As(err, &nd) ||
		errors.As(err, &us) || errors.As(err, &fl) || errors.As(err, &re) || errors.As(err, &cd)
}

// final runs the end-of-run checks.
func (c *checks) final() {
	w := c.w
	if w.failure != nil {
		return
	}
	// Exactly once: every task a live owner sent finished once.
	for _, p := range w.sortedProcs() {
		if !p.alive {
			continue
		}
		var missing []string
		for task, name := range c.submitted[p] {
			if !c.finished[p][task] {
				var pending bool
				p.rt.SimOwner(func(t *owner.Table) { _, pending = t.TaskState(task) })
				if pending {
					missing = append(missing, fmt.Sprintf("%s (%s)", name, task.Short()))
				}
			}
		}
		sort.Strings(missing)
		if len(missing) > 0 {
			w.fail("exactly-once", "%s still waits for %d tasks at the end: %s", p.name, len(missing), strings.Join(first(missing, 5), ", "))
			return
		}
	}
	// Quiescence: stores empty, owners own nothing, raylets idle.
	for _, n := range w.liveNodes() {
		if k := n.store.store.Len(); k > 0 {
			inv := n.store.store.Inventory(n.now(), 0, 8)
			var objs []string
			for _, h := range inv.Objects {
				owner := "-"
				if p := w.procs[ids.MustFromBytes(h.OwnerId)]; p != nil {
					owner = p.name
					if !p.alive {
						owner += " (dead)"
					}
				}
				objs = append(objs, fmt.Sprintf("%s owner=%s copy=%v pinned=%v", ids.MustObjectID(h.ObjectId).Short(), owner, h.Copy, h.Pinned))
			}
			w.fail("quiescence", "%s's store holds %d objects at the end: %s", n.name, k, strings.Join(objs, "; "))
			return
		}
		if st := n.raylet.State(); st.Queued+st.Running > 0 {
			w.fail("quiescence", "%s's raylet has %d queued and %d running at the end", n.name, st.Queued, st.Running)
			return
		}
	}
	for _, p := range w.sortedProcs() {
		if !p.alive {
			continue
		}
		var st owner.Stats
		var stored []ids.ObjectID
		p.rt.SimOwner(func(t *owner.Table) { st, stored = t.Stats(), t.StoredIDs() })
		if len(stored) > 0 {
			w.fail("quiescence", "%s still owns %d stored objects at the end (%d objects in its table)", p.name, len(stored), st.Objects)
			return
		}
	}
	w.checkPlacement()
}

func first(s []string, n int) []string {
	if len(s) > n {
		return append(s[:n:n], fmt.Sprintf("... %d more", len(s)-n))
	}
	return s
}
