package owner

import (
	"fmt"
	"sort"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/ids"
	"github.com/atoll-runtime/atoll/internal/simbugs"
)

// The borrower protocol (Ray's, for processes that do not share a Table).
//
// Lending: a task's arguments, and every object their values hold
// (transitively, through contained refs), are lent to the process that
// runs it: TaskSpec.borrowed lists each with its value and the refs its
// value holds. The borrower registers them (Lend) with one reference each
// for the task, plus the contained edges, so decoding any of them works.
//
// Reporting: when the task ends the borrower reports, in its result, every
// object that lender lent it and it still holds (stored in an actor's
// state, a global), replacing its previous report (HeldFor on the
// borrower, Result → applyBorrows on the owner). The owner keeps each
// reported object referenced for that borrower until a later report
// leaves it out, or the borrower dies (a crashed attempt, the actor's
// death). A borrower that drops such objects outside that lender's tasks
// reports on its own (borrowreport.go), to the same record. A restarted actor's process starts with an empty state: its
// first report (numbered after every report of the process before it,
// TaskResult.borrows_seq) replaces the old one. The restart event itself
// ends nothing: it may arrive after that first report.
//
// Returning: refs inside a task's return values reach the task's owner.
// Objects the worker created are handed over (Export): the owner owns
// them from then on (TaskResult.transferred) and the worker keeps a
// borrowed entry; objects the owner lent are referenced again by the
// owner as it resolves the return.

// Bounds on what a peer can make a Table hold.
const (
	// MaxLent bounds the objects lent to one task (its arguments and
	// every ref their values hold).
	MaxLent = 1 << 20
	// MaxBorrowers bounds the borrower processes whose reports a Table
	// keeps; a report from one more is refused (its objects are not kept
	// for it).
	MaxBorrowers = 1 << 14
)

// borrowerKey names a borrower process: an actor (its calls may come from
// any incarnation of its process; a restart ends its borrows) or a pool
// worker.
type borrowerKey struct {
	actor  ids.ActorID
	worker ids.WorkerID
}

func (k borrowerKey) String() string {
	if !k.actor.IsZero() {
		return "actor " + k.actor.Short()
	}
	return "worker " + k.worker.Short()
}

// borrowerRecord is what one borrower process reported holding.
type borrowerRecord struct {
	seq     uint64
	objects map[ids.ObjectID]struct{}
}

// lentClosure lists the objects lent to tk: its arguments' contained
// refs and its held refs, transitively, each once, in a stable order. It
// also lists those with no value yet, and fails past MaxLent.
func (t *Table) lentClosure(tk *task) (lent []ids.ObjectID, pending []ids.ObjectID, err *atollpb.ErrorInfo) {
	seen := map[ids.ObjectID]bool{}
	var stack []ids.ObjectID
	for _, d := range tk.deps() {
		// An argument is sent as an argument; it is lent too only if a
		// value holds a ref to it.
		if o := t.objects[d]; o != nil {
			stack = append(stack, o.x().contained...)
		}
	}
	stack = append(stack, tk.holds()...)
	for len(stack) > 0 {
		id := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if seen[id] {
			continue
		}
		seen[id] = true
		o := t.objects[id]
		if o == nil {
			continue // dispatch reports it lost
		}
		if !o.ready() {
			pending = append(pending, id)
			continue
		}
		lent = append(lent, id)
		if len(lent) > MaxLent {
			return nil, nil, errs.ToProto(errs.Invalidf("task %s: its arguments hold more than %d object refs (counting refs inside the objects they refer to); pass fewer refs, or put them in fewer objects", tk.common().Name, MaxLent))
		}
		stack = append(stack, o.x().contained...)
	}
	sort.Slice(lent, func(i, j int) bool { return string(lent[i][:]) < string(lent[j][:]) })
	return lent, pending, nil
}

// lentValue is an object's value as lent: its value with the refs it
// holds listed, so the borrower can register the contained edges.
func (t *Table) lentValue(o *object) *atollpb.Value {
	if len(o.x().contained) == 0 || len(o.value.GetContainedRefs()) == len(o.x().contained) {
		return o.value
	}
	v := &atollpb.Value{Codec: o.value.Codec}
	switch k := o.value.Kind.(type) {
	case *atollpb.Value_Inline:
		v.Kind = k
	case *atollpb.Value_Stored:
		v.Kind = k
	case *atollpb.Value_Error:
		v.Kind = k
	}
	for _, c := range o.x().contained {
		v.ContainedRefs = append(v.ContainedRefs, &atollpb.ObjectRef{ObjectId: c.Bytes()})
	}
	return v
}

// Lend registers the objects a task's owner (lender, on node ownerNode)
// lent to it: each takes one reference for the task (the caller drops
// them when it ends), and a new entry also references the objects its
// value holds. It returns the ids it took references to; malformed
// entries are skipped and reported in bad.
func (t *Table) Lend(borrowed []*atollpb.ReturnObject, lender ids.WorkerID, ownerNode ids.NodeID) (lent []ids.ObjectID, bad error) {
	var fresh []*object
	for _, b := range borrowed {
		id, err := ids.ObjectIDFromBytes(b.GetObjectId())
		if err != nil || b.GetValue() == nil {
			bad = fmt.Errorf("%w: a lent object has a malformed id or no value", errs.ErrInvalidArgument)
			continue
		}
		if o := t.objects[id]; o != nil {
			o.refs++
			lent = append(lent, id)
			continue
		}
		o := &object{refs: 1, value: b.Value, borrowed: true, more: &objectMore{ownerNode: ownerNode}}
		t.objects[id] = o
		t.setLender(o, lender)
		fresh = append(fresh, o)
		lent = append(lent, id)
	}
	// Contained edges, once every entry exists: the container holds
	// one reference to each object its value names.
	for _, o := range fresh {
		for _, c := range o.value.GetContainedRefs() {
			cid, err := ids.ObjectIDFromBytes(c.GetObjectId())
			if err != nil {
				bad = fmt.Errorf("%w: a lent object names a malformed contained ref", errs.ErrInvalidArgument)
				continue
			}
			if t.AddRef(cid) {
				om := o.m()
				om.contained = append(om.contained, cid)
			}
		}
	}
	return lent, bad
}

// Borrow registers, or takes one more reference to, an object owned by a
// process on node ownerNode, whose value is known.
func (t *Table) Borrow(id ids.ObjectID, value *atollpb.Value, ownerNode ids.NodeID) {
	t.Lend([]*atollpb.ReturnObject{{ObjectId: id.Bytes(), Value: value}}, ids.WorkerID{}, ownerNode)
}

// HeldFor lists, in id order, the borrowed objects lender lent this
// process that it still references: what its next report to lender says.
func (t *Table) HeldFor(lender ids.WorkerID) []ids.ObjectID {
	if t.fromLender[lender] == 0 {
		return nil
	}
	var out []ids.ObjectID
	for id, o := range t.objects {
		if o.borrowed && o.x().lender == lender && o.refs > 0 {
			out = append(out, id)
		}
	}
	sort.Slice(out, func(i, j int) bool { return string(out[i][:]) < string(out[j][:]) })
	return out
}

// HoldsFrom reports whether this process holds any object lender lent it.
func (t *Table) HoldsFrom(lender ids.WorkerID) bool { return t.fromLender[lender] > 0 }

// setLender records who lent a borrowed entry (zero: nobody to report to).
func (t *Table) setLender(o *object, lender ids.WorkerID) {
	if old := o.x().lender; !old.IsZero() {
		if t.fromLender[old]--; t.fromLender[old] <= 0 {
			delete(t.fromLender, old)
		}
	}
	if !lender.IsZero() || o.more != nil {
		o.m().lender = lender
	}
	if !lender.IsZero() {
		t.fromLender[lender]++
	}
}

// Export prepares the refs inside a task's return values for its owner
// (to, on node toNode): objects this process created are handed over
// (returned with their values, the refs their values hold included; each
// stays here as a borrowed entry lent by to), objects to lent are left
// as they are (to references them again), and anything else is an error
// that says what to do: an object still being computed, or borrowed from
// a third process.
func (t *Table) Export(refs []ids.ObjectID, to ids.WorkerID, toNode ids.NodeID) ([]*atollpb.ReturnObject, error) {
	var out []*atollpb.ReturnObject
	var handed []*object
	seen := map[ids.ObjectID]bool{}
	stack := append([]ids.ObjectID(nil), refs...)
	for len(stack) > 0 {
		id := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if seen[id] {
			continue
		}
		seen[id] = true
		o := t.objects[id]
		switch {
		case o == nil:
			return nil, &errs.ObjectLostError{ObjectID: id.String(), Message: "a returned value holds a ref to an object this process no longer has"}
		case o.borrowed && o.x().lender == to:
			continue // the owner lent it: it is the owner's own, or its borrow
		case o.borrowed:
			return nil, errs.Invalidf("a returned value holds ObjectRef %s, which this process borrowed from another process than the task's caller: return refs the task created or received from its caller, or Get the value and return it", id.Short())
		case !o.ready():
			return nil, errs.Invalidf("a returned value holds ObjectRef %s, whose task has not finished: Wait for (or Get) the refs a task returns inside its values before returning them", id.Short())
		}
		out = append(out, &atollpb.ReturnObject{ObjectId: id.Bytes(), Value: t.lentValue(o)})
		handed = append(handed, o)
		stack = append(stack, o.x().contained...)
	}
	for _, o := range handed {
		// Ours no more: freeing it here must not delete it from the store.
		o.borrowed, o.m().ownerNode = true, toNode
		t.setLender(o, to)
		o.lineage = nil
	}
	sort.Slice(out, func(i, j int) bool { return string(out[i].ObjectId) < string(out[j].ObjectId) })
	return out, nil
}

// adopt takes over objects another process handed over with a result
// (Export), then references the objects their values hold. Entries
// already known (a duplicate) are left as they are.
func (t *Table) adopt(transferred []*atollpb.ReturnObject) []ids.ObjectID {
	var fresh []ids.ObjectID
	for _, r := range transferred {
		id, err := ids.ObjectIDFromBytes(r.GetObjectId())
		if err != nil || r.GetValue() == nil || t.objects[id] != nil {
			continue
		}
		o := &object{value: r.Value}
		t.objects[id] = o
		t.created++
		fresh = append(fresh, id)
	}
	for _, id := range fresh {
		o := t.objects[id]
		if c := t.refContained(o.value); c != nil || o.more != nil {
			o.m().contained = c
		}
	}
	return fresh
}

// refContained takes one reference to each known object v's value holds
// and returns their ids.
func (t *Table) refContained(v *atollpb.Value) []ids.ObjectID {
	var out []ids.ObjectID
	for _, c := range v.GetContainedRefs() {
		cid, err := ids.ObjectIDFromBytes(c.GetObjectId())
		if err == nil && t.AddRef(cid) {
			out = append(out, cid)
		}
	}
	return out
}

// applyBorrows records a borrower's report: the objects it holds now
// take one reference each for it, those it no longer reports lose it.
func (t *Table) applyBorrows(key borrowerKey, seq uint64, borrows [][]byte) {
	rec := t.borrowers[key]
	if rec != nil && seq != 0 && seq < rec.seq {
		return // an older report overtaken by a newer one
	}
	now := map[ids.ObjectID]struct{}{}
	for _, b := range borrows {
		if id, err := ids.ObjectIDFromBytes(b); err == nil {
			now[id] = struct{}{}
		}
	}
	if rec == nil {
		if len(now) == 0 {
			return
		}
		if len(t.borrowers) >= MaxBorrowers {
			t.borrowsRefused++
			return
		}
		rec = &borrowerRecord{objects: map[ids.ObjectID]struct{}{}}
		t.borrowers[key] = rec
	}
	rec.seq = seq
	for id := range now {
		if _, had := rec.objects[id]; had || simbugs.On(simbugs.OwnerIgnoresBorrowers) { // the second: a bug put in on purpose (simulator tests)
			continue
		}
		if t.AddRef(id) {
			rec.objects[id] = struct{}{}
		}
	}
	var dropped []ids.ObjectID
	for id := range rec.objects {
		if _, keep := now[id]; !keep {
			delete(rec.objects, id)
			dropped = append(dropped, id)
		}
	}
	if len(rec.objects) == 0 {
		delete(t.borrowers, key)
	}
	sortIDs(dropped)
	t.DropRef(dropped...)
}

// borrowerDied drops every reference a dead borrower process held.
func (t *Table) borrowerDied(key borrowerKey) {
	t.takeEarly(key)
	rec := t.borrowers[key]
	if rec == nil {
		return
	}
	delete(t.borrowers, key)
	if simbugs.On(simbugs.OwnerKeepsDeadBorrowers) {
		return // a bug put in on purpose, for the simulator's tests
	}
	held := make([]ids.ObjectID, 0, len(rec.objects))
	for id := range rec.objects {
		held = append(held, id)
	}
	sortIDs(held)
	t.DropRef(held...)
}

// WorkerDied drops the borrows of a pool worker process that died.
func (t *Table) WorkerDied(worker ids.WorkerID) { t.borrowerDied(borrowerKey{worker: worker}) }

func sortIDs(l []ids.ObjectID) {
	sort.Slice(l, func(i, j int) bool { return string(l[i][:]) < string(l[j][:]) })
}

// borrowerResult applies what a result says about its borrower: the
// borrows it reports, or, for an attempt whose process died, the end of
// its borrows.
func (t *Table) borrowerResult(tk *task, res *atollpb.TaskResult) {
	key := borrowerKey{}
	if tk.actor != nil || tk.common().Type == atollpb.TaskType_ACTOR_CREATION_TASK {
		key.actor = ids.MustFromBytes(tk.common().ActorId)
		if tk.actor != nil {
			key.actor = tk.actor.id
		}
	} else if w := res.GetWorkerId(); len(w) == ids.Len16 {
		key.worker = ids.ID16(w) // no error made for a result without one
	} else {
		return
	}
	switch {
	case res.ActorCrashed || res.GetError().GetCode() == atollpb.ErrorCode_WORKER_CRASHED:
		t.borrowerDied(key)
	case res.BorrowsReported:
		seq, borrows := res.BorrowsSeq, res.Borrows
		if e := t.takeEarly(key); e != nil && e.seq > seq {
			// A standalone report made after this one overtook it.
			seq, borrows = e.seq, e.borrows
		}
		t.applyBorrows(key, seq, borrows)
	}
}

// DropUnreferenced frees the objects of idl that no reference holds.
func (t *Table) DropUnreferenced(idl []ids.ObjectID) {
	for _, id := range idl {
		if o := t.objects[id]; o != nil && o.refs == 0 {
			o.refs = 1
			t.DropRef(id)
		}
	}
}
