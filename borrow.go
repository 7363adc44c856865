package atoll

import (
	"runtime"
	"sync"
	"time"
	"weak"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/ids"
	"github.com/atoll-runtime/atoll/owner"
)

// The worker side of the borrower protocol (see owner/borrow.go and
// ARCHITECTURE "Borrowing"): a worker process registers what the task's
// owner lent it (lend), reports at the task's end what it still holds of
// that owner's (reportBorrows), and hands the objects it created over to
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
	h  weak.Pointer[refHandle]
	id ids.ObjectID
	st *handleState
}

func (d *decodedRefs) add(h *refHandle) {
	d.mu.Lock()
	d.list = append(d.list, decodedRef{h: weak.Make(h), id: h.id, st: h.state})
	d.mu.Unlock()
}

// sweep drops the references of the tracked handles that are garbage
// (after a collection) and forgets the handles already released, so the
// list holds live handles only.
func (d *decodedRefs) sweep(rt *core) {
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
	for _, r := range dead {
		rt.dropRef(r.id, r.st) // the cleanup, when it runs, finds it released
	}
}

// lend registers the objects the task's owner lent with it; the caller
// drops the returned references when the task ends.
func (rt *core) lend(spec *atollpb.TaskSpec) []ids.ObjectID {
	if len(spec.Borrowed) == 0 {
		return nil
	}
	lender, _ := ids.FromBytes(spec.OwnerId)
	ownerNode, _ := ids.FromHex(spec.OwnerAddress)
	var lent []ids.ObjectID
	var bad error
	rt.owner.do(func(t *owner.Table) { lent, bad = t.Lend(spec.Borrowed, lender, ownerNode) })
	if bad != nil {
		rt.log.Warn("task lent malformed objects; they are ignored", "task", spec.Name, "err", bad)
	}
	return lent
}

// reportBorrows ends a task's borrows (its lent references) and fills in
// res what this process still holds of the task owner's objects. If it
// holds any, a collection first drops the handles the task no longer
// reaches, so only refs that escaped the task are reported.
func (rt *core) reportBorrows(spec *atollpb.TaskSpec, lent []ids.ObjectID, res *atollpb.TaskResult) {
	rt.owner.dropRef(lent...)
	if res == nil {
		return
	}
	lender, err := ids.FromBytes(spec.OwnerId)
	if err != nil {
		return
	}
	if rt.owner.holdsFrom(lender) {
		runtime.GC()
		rt.decoded.sweep(rt)
		// Handles the collector's cleanups released already: their
		// drops may still wait for the owner actor.
		rt.applyCollected()
	} else {
		rt.decoded.sweep(rt) // prune released handles; no collection needed
	}
	held := rt.owner.heldFor(lender)
	res.Borrows = res.Borrows[:0]
	for _, id := range held {
		res.Borrows = append(res.Borrows, id.Bytes())
	}
	res.BorrowsReported = true
	// Numbered from the process's start time: a restarted actor's
	// process (same worker id) numbers its reports after the old one's.
	rt.borrowSeq.CompareAndSwap(0, uint64(time.Now().UnixNano()))
	res.BorrowsSeq = rt.borrowSeq.Add(1)
}

// exportRefs hands the task's owner the objects this process created
// that the return values hold refs to (the rest it lent), and drops the
// references the values' encoding took.
func (rt *core) exportRefs(spec *atollpb.TaskSpec, refs []ids.ObjectID) ([]*atollpb.ReturnObject, error) {
	if len(refs) == 0 {
		return nil, nil
	}
	defer rt.owner.dropRef(refs...)
	to, _ := ids.FromBytes(spec.OwnerId)
	toNode, _ := ids.FromHex(spec.OwnerAddress)
	var out []*atollpb.ReturnObject
	var err error
	rt.owner.do(func(t *owner.Table) { out, err = t.Export(refs, to, toNode) })
	return out, err
}

func (s *ownerShell) holdsFrom(lender ids.WorkerID) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.table.HoldsFrom(lender)
}

func (s *ownerShell) heldFor(lender ids.WorkerID) []ids.ObjectID {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.table.HeldFor(lender)
}
