package runtime

import (
	"fmt"
	goruntime "runtime"
	"sync"
	"time"
	"weak"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/ids"
	"github.com/atoll-runtime/atoll/internal/owner"
)

// The worker side of the borrower protocol (see owner/borrow.go and
// ARCHITECTURE "Borrowing"): a worker process registers what the task's
// owner lent it (lend), reports at the task's end what it still holds of
// that owner's (reportBorrows), reports on its own to the other lenders
// whose objects it dropped (flushBorrowReports), and hands the objects it created over to
// the owner when it returns refs to them inside its values (exportRefs).

// decodedRefs tracks the handles GobDecode made in a worker process, so
// that at a task's end those the task no longer reaches can be dropped at
// once instead of at the garbage collector's next cleanup: a borrow ends
// with the task unless the ref escaped (an actor's field, a global).
type decodedRefs struct {
	mu   sync.Mutex
	list []decodedRef
}

type decodedRef struct {
	h  weak.Pointer[Ref]
	st *refState
}

func (d *decodedRefs) add(h *Ref) {
	d.mu.Lock()
	d.list = append(d.list, decodedRef{h: weak.Make(h), st: h.state})
	d.mu.Unlock()
}

// sweep drops the references of the tracked handles that are garbage
// (after a collection) and forgets the handles already released, so the
// list holds live handles only.
func (d *decodedRefs) sweep(rt *Runtime) {
	d.mu.Lock()
	live := d.list[:0]
	var dead []decodedRef
	for _, r := range d.list {
		switch {
		case r.st.released.Load():
		case r.h.Value() == nil:
			dead = append(dead, r)
		default:
			live = append(live, r)
		}
	}
	clear(d.list[len(live):])
	d.list = live
	d.mu.Unlock()
	// One step for all of them (the cleanup, when it runs, finds each
	// released): one mark for their lenders' reports.
	var drops []ids.ObjectID
	for _, r := range dead {
		if r.st.released.CompareAndSwap(false, true) {
			drops = append(drops, r.st.id)
		}
	}
	if len(drops) > 0 && !rt.closed.Load() {
		rt.owner.dropRef(drops...)
	}
}

// lend registers the objects the task's owner lent with it; the caller
// drops the returned references when the task ends.
func (w *Worker) lend(spec *atollpb.TaskSpec) []ids.ObjectID {
	if len(spec.Borrowed) == 0 {
		return nil
	}
	lender, _ := ids.FromBytes(spec.OwnerId)
	ownerNode, _ := ids.FromHex(spec.OwnerAddress)
	var lent []ids.ObjectID
	var bad error
	w.owner.do(func(t *owner.Table) { lent, bad = t.Lend(spec.Borrowed, lender, ownerNode) })
	if bad != nil {
		w.log.Warn("task lent malformed objects; they are ignored", "task", spec.Name, "err", bad)
	}
	return lent
}

// reportBorrows ends a task's borrows (its lent references) and fills in
// res what this process still holds of the task owner's objects. If it
// holds any, or any object whose lender a report told it held, a
// collection first drops the handles the task no longer reaches, so only
// refs that escaped the task are reported. Then the lenders other than
// the task's owner that are due a standalone report (their objects were
// dropped) get it.
func (w *Worker) reportBorrows(spec *atollpb.TaskSpec, lent []ids.ObjectID, res *atollpb.TaskResult) {
	w.owner.dropRef(lent...)
	lender, err := ids.FromBytes(spec.OwnerId)
	if res == nil || err != nil {
		w.tasksRunning.Add(-1)
		w.flushBorrowReports(ids.WorkerID{})
		return
	}
	if w.sim != nil {
		w.simSweep() // the simulator's collection at a task's end (sim.go)
	} else if w.owner.holdsBorrows(lender) {
		goruntime.GC()
		w.decoded.sweep(w.Runtime)
		// Handles the collector's cleanups released already: their
		// drops may still wait for the owner actor.
		w.applyCollected()
	} else {
		w.decoded.sweep(w.Runtime) // prune released handles; no collection needed
	}
	ownerNode, _ := ids.FromHex(spec.OwnerAddress)
	var held []ids.ObjectID
	// The report's content and its number are taken together, under the
	// table's lock, so that a later number never carries older content.
	w.owner.do(func(t *owner.Table) {
		held = t.ReportTo(lender, ownerNode)
		res.BorrowsSeq = w.nextBorrowSeq()
	})
	res.Borrows = res.Borrows[:0]
	for _, id := range held {
		res.Borrows = append(res.Borrows, id.Bytes())
	}
	res.BorrowsReported = true
	// The task no longer runs: drops from now on are flushed by the
	// owner actor (flushBorrows); those it made are flushed here.
	w.tasksRunning.Add(-1)
	w.flushBorrowReports(lender)
}

// nextBorrowSeq numbers this process's borrow reports, in a result or on
// their own: from the process's start time, so a restarted actor's
// process (same worker id) numbers its reports after the old one's.
func (w *Worker) nextBorrowSeq() uint64 {
	w.borrowSeq.CompareAndSwap(0, uint64(w.now().UnixNano()))
	return w.borrowSeq.Add(1)
}

// flushBorrowReports sends the standalone reports due: one per lender
// whose objects this process dropped since it reported holding them
// (except except, whose report the caller puts in a task's result),
// however many it dropped. Sending never blocks on the owner: the frame
// goes to the raylet, which routes it.
func (w *Worker) flushBorrowReports(except ids.WorkerID) {
	var due []owner.DropReport
	var seqs []uint64
	w.owner.do(func(t *owner.Table) {
		due = t.TakeDropReports(except)
		for range due {
			seqs = append(seqs, w.nextBorrowSeq())
		}
	})
	if len(due) == 0 || w.closed.Load() {
		return
	}
	var actorID []byte
	if a := w.hostedActor.Load(); a != nil {
		actorID = a.Bytes()
	}
	for i, d := range due {
		m := &atollpb.BorrowReport{OwnerId: d.Lender.Bytes(), OwnerNode: d.Node.Bytes(), BorrowerWorkerId: w.workerID.Bytes(),
			BorrowerActorId: actorID, BorrowsSeq: seqs[i], Borrows: make([][]byte, 0, len(d.Held))}
		for _, id := range d.Held {
			m.Borrows = append(m.Borrows, id.Bytes())
		}
		w.link.sendBorrows(m)
	}
}

// flushBorrows asks the owner actor to send the standalone reports due
// (posted once per burst of drops: a Release, the collector's cleanups).
// While a task runs in the process the task's end flushes instead, so a
// task that drops many refs sends one report per lender (forced: the
// flush after borrowFlushDelay, whatever runs).
type flushBorrows struct{ forced bool }

// borrowFlushDelay bounds how long a drop made while a task runs waits
// for a task's end before it is reported anyway (a call that runs for
// ever, an actor's background goroutine during a long call).
const borrowFlushDelay = time.Second

// flushBorrows sends the reports due, unless a task runs: then its end
// does, or, if none ends within borrowFlushDelay, a forced flush.
func (w *Worker) flushBorrows(m *flushBorrows) {
	if !m.forced {
		w.borrowFlushPosted.Store(false)
		if w.tasksRunning.Load() > 0 {
			if w.borrowFlushTimer.CompareAndSwap(false, true) {
				w.after(borrowFlushDelay, func() { w.post(&flushBorrows{forced: true}) })
			}
			return
		}
	} else {
		w.borrowFlushTimer.Store(false)
	}
	w.flushBorrowReports(ids.WorkerID{})
}

// postBorrowFlush posts one flushBorrows unless one is waiting; it runs
// under the owner table's lock (ownerShell.dropsDue), so it only posts.
func (w *Worker) postBorrowFlush() {
	if w.borrowFlushPosted.CompareAndSwap(false, true) {
		w.post(&flushBorrows{})
	}
}

// applyBorrowReport applies a borrower's standalone report to this
// process's objects (owner.Table.ApplyBorrowReport).
func (rt *Runtime) applyBorrowReport(m *atollpb.BorrowReport) {
	rt.borrowReportsIn.Add(1)
	var applied bool
	var err error
	rt.owner.do(func(t *owner.Table) { applied, err = t.ApplyBorrowReport(m) })
	switch {
	case err != nil:
		rt.log.Warn("a borrow report was refused", "err", err)
	case !applied:
		rt.log.Debug("a borrow report from a borrower with no record here (never reported, or its borrows ended) ignored",
			"borrower", fmt.Sprintf("%x", m.BorrowerWorkerId), "actor", fmt.Sprintf("%x", m.BorrowerActorId))
	}
}

// exportRefs hands the task's owner the objects this process created
// that the return values hold refs to (the rest it lent), and drops the
// references the values' encoding took.
func (w *Worker) exportRefs(spec *atollpb.TaskSpec, refs []ids.ObjectID) ([]*atollpb.ReturnObject, error) {
	if len(refs) == 0 {
		return nil, nil
	}
	defer w.owner.dropRef(refs...)
	to, _ := ids.FromBytes(spec.OwnerId)
	toNode, _ := ids.FromHex(spec.OwnerAddress)
	var out []*atollpb.ReturnObject
	var err error
	w.owner.do(func(t *owner.Table) { out, err = t.Export(refs, to, toNode) })
	return out, err
}

// holdsBorrows reports whether this process holds objects lender lent
// it, or objects whose lender a report told it held.
func (s *ownerShell) holdsBorrows(lender ids.WorkerID) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.table.HoldsFrom(lender) || s.table.HoldsReported()
}
