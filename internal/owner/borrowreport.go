package owner

import (
	"bytes"
	"fmt"
	"slices"
	"sort"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/ids"
)

// Standalone borrow reports (Ray's borrower telling the owner it dropped a
// ref): a borrower that reported holding objects of a lender, in a task's
// result or in a report of its own, reports again when it frees one of
// them outside that lender's tasks (another caller's call, a goroutine of
// the actor, the garbage collector), so the lender frees the object then
// and not at the borrower's next result to it, which may never come.
//
// The borrower's side is the dirty-lender state: reportedTo holds the
// lenders whose last report named objects (a "live" report), each marked
// dirty once an object it lent is freed here. The shell takes the reports
// of the dirty lenders (TakeDropReports) and sends them; a lender's
// in-result report (ReportTo) clears its mark. The owner's side is
// ApplyBorrowReport, which feeds the same record as an in-result report.

// lenderReport is what this process, as a borrower, last reported to one
// lender; it exists while that report named objects.
type lenderReport struct {
	node  ids.NodeID // the lender's node
	dirty bool       // an object it lent was freed since the report
}

// DropReport is a standalone report for one lender: every object it lent
// this process that this process still holds (empty: none).
type DropReport struct {
	Lender ids.WorkerID
	Node   ids.NodeID
	Held   []ids.ObjectID
}

// lentFreed marks lender dirty when an object it lent is freed here after
// a report named the lender's objects.
func (t *Table) lentFreed(lender ids.WorkerID) {
	if r := t.reportedTo[lender]; r != nil && !r.dirty {
		r.dirty = true
		t.dirtyLenders++
	}
}

// ReportTo lists what this process's report to lender (on node) says:
// the objects lender lent it that it still holds (HeldFor). The report
// goes in a task's result; it replaces any standalone report due to
// lender.
func (t *Table) ReportTo(lender ids.WorkerID, node ids.NodeID) []ids.ObjectID {
	held := t.HeldFor(lender)
	t.reported(lender, node, len(held) > 0)
	return held
}

// reported records that a report to lender was made; live: it named
// objects.
func (t *Table) reported(lender ids.WorkerID, node ids.NodeID, live bool) {
	r := t.reportedTo[lender]
	if r != nil && r.dirty {
		r.dirty = false
		t.dirtyLenders--
	}
	switch {
	case !live:
		delete(t.reportedTo, lender)
	case r == nil:
		t.reportedTo[lender] = &lenderReport{node: node}
	case !node.IsZero():
		r.node = node
	}
}

// HasDropReports reports whether a standalone report is due to a lender.
func (t *Table) HasDropReports() bool { return t.dirtyLenders > 0 }

// HoldsReported reports whether this process holds objects whose lender
// a report told so (a collection at a task's end may drop some of them).
func (t *Table) HoldsReported() bool { return len(t.reportedTo) > 0 }

// TakeDropReports returns the standalone reports due, one per dirty
// lender except except (whose report the caller puts in a task's result),
// in lender order, and records them as made.
func (t *Table) TakeDropReports(except ids.WorkerID) []DropReport {
	if t.dirtyLenders == 0 {
		return nil
	}
	var out []DropReport
	for lender, r := range t.reportedTo {
		if r.dirty && lender != except {
			out = append(out, DropReport{Lender: lender, Node: r.node, Held: t.HeldFor(lender)})
		}
	}
	sort.Slice(out, func(i, j int) bool { return bytes.Compare(out[i].Lender[:], out[j].Lender[:]) < 0 })
	for _, d := range out {
		t.reported(d.Lender, d.Node, len(d.Held) > 0)
	}
	return out
}

// ApplyBorrowReport applies a borrower's standalone report to this
// process's objects, as an in-result report (applyBorrows: the newest
// report of a borrower wins). It reports false, changing nothing, when
// no record of the borrower is kept: it never reported holding anything,
// or its borrows ended (a later report left everything out, or it died),
// so the report can only be a late one. A malformed report is refused
// with ErrInvalidArgument.
//
// A report can also overtake the in-result report it follows (across
// nodes they travel on different subjects): the owner then has no record
// yet either. So the report is kept aside, holding no reference (early),
// and the borrower's next in-result report is replaced by it if it is
// newer (borrowerResult); a borrower's death forgets it.
func (t *Table) ApplyBorrowReport(m *atollpb.BorrowReport) (bool, error) {
	key, err := t.checkBorrowReport(m)
	if err != nil {
		return false, err
	}
	if t.borrowers[key] == nil {
		t.keepEarly(key, m.BorrowsSeq, m.Borrows)
		return false, nil
	}
	t.applyBorrows(key, m.BorrowsSeq, m.Borrows)
	return true, nil
}

// MaxEarlyReports bounds the standalone reports an owner keeps aside
// for borrowers it has no record of yet.
const MaxEarlyReports = 1024

// earlyReport is a standalone report kept aside: it may be newer than an
// in-result report still on its way.
type earlyReport struct {
	seq     uint64
	borrows [][]byte
}

// keepEarly keeps the newest standalone report of a borrower with no
// record.
func (t *Table) keepEarly(key borrowerKey, seq uint64, borrows [][]byte) {
	if e := t.early[key]; e != nil {
		if seq > e.seq {
			e.seq, e.borrows = seq, borrows
		}
		return
	}
	for len(t.earlyOrder) >= MaxEarlyReports {
		delete(t.early, t.earlyOrder[0])
		t.earlyOrder = t.earlyOrder[1:]
	}
	t.early[key] = &earlyReport{seq: seq, borrows: borrows}
	t.earlyOrder = append(t.earlyOrder, key)
}

// takeEarly forgets the report kept aside for key and returns it (nil if
// none).
func (t *Table) takeEarly(key borrowerKey) *earlyReport {
	e := t.early[key]
	if e == nil {
		return nil
	}
	delete(t.early, key)
	if i := slices.Index(t.earlyOrder, key); i >= 0 {
		t.earlyOrder = slices.Delete(t.earlyOrder, i, i+1)
	}
	return e
}

// checkBorrowReport validates a report from the wire and returns its
// borrower's key.
func (t *Table) checkBorrowReport(m *atollpb.BorrowReport) (borrowerKey, error) {
	var key borrowerKey
	owner, err := ids.FromBytes(m.GetOwnerId())
	if err != nil || owner != t.cfg.Worker {
		return key, fmt.Errorf("%w: a borrow report for owner %x reached owner %s", errs.ErrInvalidArgument, m.GetOwnerId(), t.cfg.Worker.Short())
	}
	if key.worker, err = ids.FromBytes(m.GetBorrowerWorkerId()); err != nil || key.worker.IsZero() {
		return key, fmt.Errorf("%w: a borrow report names no valid borrower worker", errs.ErrInvalidArgument)
	}
	if len(m.GetBorrowerActorId()) > 0 {
		if key.actor, err = ids.FromBytes(m.BorrowerActorId); err != nil || key.actor.IsZero() {
			return key, fmt.Errorf("%w: a borrow report names a malformed borrower actor", errs.ErrInvalidArgument)
		}
		key.worker = ids.WorkerID{} // an actor's borrows are keyed by the actor
	}
	if m.GetBorrowsSeq() == 0 {
		return key, fmt.Errorf("%w: a borrow report from %s has no sequence number", errs.ErrInvalidArgument, key)
	}
	if len(m.GetBorrows()) > MaxLent {
		return key, fmt.Errorf("%w: a borrow report from %s lists %d objects, more than %d", errs.ErrInvalidArgument, key, len(m.Borrows), MaxLent)
	}
	for _, b := range m.GetBorrows() {
		if _, err := ids.ObjectIDFromBytes(b); err != nil {
			return key, fmt.Errorf("%w: a borrow report from %s names a malformed object id", errs.ErrInvalidArgument, key)
		}
	}
	return key, nil
}
