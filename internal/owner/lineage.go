package owner

import (
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/ids"
)

// Lineage reconstruction (Ray's object reconstruction). When a task
// finishes, the Table keeps its spec (its lineage) for as long as one of
// its returns is referenced, within a budget of bytes (the oldest lineage
// goes first, and its objects can no longer be rebuilt). When every copy
// of such an object is lost (its node died), Reconstruct runs the task
// again under the same return ids: its returns go back to pending, and
// readers wait for the new values. The new attempt's arguments may be lost
// too: the node running it fails the attempt with OBJECT_LOST naming the
// argument, and Result reconstructs that argument first and dispatches the
// task again once it is back (recursively, down the chain). Objects made
// by Put, outputs of actor calls, and objects whose lineage was evicted
// fail with ObjectReconstructionFailedError saying why.
//
// A kept lineage pins its arguments' records, not their data (Ray's
// lineage pinning): an argument whose every reference is dropped is freed
// from the stores but its record moves to Table.released, so that it can
// be rebuilt in turn when a task that needs it is. A released record goes
// when the last lineage naming it does. An argument made by Put cannot be
// rebuilt once freed. Tasks with refs inside their inline arguments, or
// returns holding refs, keep no lineage.

// DefaultLineageBudget bounds the bytes of lineage a Table keeps (the
// specs' encoded sizes; Ray's max_lineage_bytes).
const DefaultLineageBudget = 64 << 20

// maxRecoveries bounds the reconstructions of one task's returns, and the
// re-dispatches of one attempt for lost arguments.
const maxRecoveries = 3

// lineageGap is why an object has no lineage.
type lineageGap uint8

const (
	lineageKept lineageGap = iota // none known: kept, or not yet decided
	gapActorCall
	gapActorCreation
	gapRefArguments
	gapGenerator
	gapNoRetries
	gapRefReturns
	gapEvicted
)

func (g lineageGap) String() string {
	switch g {
	case gapActorCall:
		return "it is an actor call's output"
	case gapActorCreation:
		return "it is an actor creation's output"
	case gapRefArguments:
		return "its task had refs inside its arguments"
	case gapGenerator:
		return "it is a generator task's end"
	case gapNoRetries:
		return "its task was submitted without retries (MaxRetries(0))"
	case gapRefReturns:
		return "its task's returns hold refs"
	case gapEvicted:
		return "its lineage was evicted past the lineage budget"
	}
	return "its lineage is not kept"
}

// lineageEntry is a finished task's record, kept to run it again: its
// spec (or packed spec), its object arguments (args: deps, depArgIdx),
// its returns' count, the shell's data of the first run (attach, handed
// back again), its reconstructions (args' recoveries) and, in linSize
// and forgotten, the entry's own bookkeeping. A task's record outlives
// the task as its lineage rather than being copied into a record of its
// own: one allocation a task fewer.
type lineageEntry = task

// recordLineage keeps a finished task's lineage if it may be rebuilt.
// rets are its returns' records, in order, if the caller looked them up
// (nil: looked up here).
func (t *Table) recordLineage(tk *task, rets []*object) {
	why := lineageKept
	switch {
	case tk.actor != nil || tk.common().Type == atollpb.TaskType_ACTOR_TASK:
		why = gapActorCall
	case tk.common().Type == atollpb.TaskType_ACTOR_CREATION_TASK:
		why = gapActorCreation
	case len(tk.holds()) > 0:
		why = gapRefArguments
	case tk.common().Generator:
		why = gapGenerator
	case tk.common().MaxRetries == 0:
		why = gapNoRetries
	}
	objs := rets
	if objs == nil {
		var buf [2]*object
		objs = buf[:0]
		id := tk.id()
		for i := range int(tk.nReturns) {
			objs = append(objs, t.objects[ids.ReturnObjectID(id, i)])
		}
	}
	for _, o := range objs {
		if o != nil && len(o.x().contained) > 0 && why == lineageKept {
			why = gapRefReturns
		}
	}
	if why != lineageKept {
		for _, o := range objs {
			if o != nil {
				o.noLineage = why
			}
		}
		return
	}
	e := t.lineageOf(tk)
	if e != nil {
		// Rebuilt from it: the entry takes the new run's spec, arguments
		// and count of recoveries, and keeps its place in the order.
		t.lineageBytes -= int(e.linSize)
		e.spec, e.packed, e.attach, e.args = tk.spec, tk.packed, tk.attach, tk.args
	} else {
		e = tk // the finished task's record is its lineage
		t.lineageOrder = append(t.lineageOrder, e)
		t.lineageN++
		for _, dep := range tk.deps() {
			if d := t.record(dep); d != nil {
				d.m().lineageRefs++
			}
		}
	}
	if e.packed != nil {
		e.linSize = int32(e.packed.Size())
	} else {
		e.linSize = int32(specSize(e.spec))
	}
	t.lineageBytes += int(e.linSize)
	for _, o := range objs {
		if o != nil {
			o.lineage = e
		}
	}
	t.evictLineage()
}

// lineageOf is the lineage entry kept for tk, if it is being rebuilt
// from it and the entry was not forgotten since.
func (t *Table) lineageOf(tk *task) *lineageEntry {
	if tk.args == nil || tk.args.rebuiltFrom == nil || tk.args.rebuiltFrom.forgotten {
		return nil
	}
	return tk.args.rebuiltFrom
}

// evictLineage forgets the oldest lineage past the budget.
func (t *Table) evictLineage() {
	for t.lineageBytes > t.lineageBudget() && len(t.lineageOrder) > 0 {
		e := t.lineageOrder[0]
		t.lineageOrder[0] = nil
		t.lineageOrder = t.lineageOrder[1:]
		if !e.forgotten {
			t.forgetLineage(e, nil)
			t.lineageEvicted++
		}
	}
	t.compactLineageOrder()
}

// compactLineageOrder drops forgotten entries from the order once they
// are most of it, into a slice sized for the rest (the old one may have
// held a million ids).
func (t *Table) compactLineageOrder() {
	if len(t.lineageOrder) <= 64 || len(t.lineageOrder) <= 2*t.lineageN {
		return
	}
	live := make([]*lineageEntry, 0, t.lineageN)
	for _, e := range t.lineageOrder {
		if !e.forgotten {
			live = append(live, e)
		}
	}
	t.lineageOrder = live
}

func (t *Table) lineageBudget() int {
	if t.cfg.LineageBudget > 0 {
		return t.cfg.LineageBudget
	}
	return DefaultLineageBudget
}

// record is an object's record: live, or released for a lineage.
func (t *Table) record(id ids.ObjectID) *object {
	if o := t.objects[id]; o != nil {
		return o
	}
	return t.released[id]
}

// forgetLineage drops a lineage entry; the released arguments no other
// lineage names go, and with them, in turn, their own lineage. freed, if
// not nil, is a return of its task just freed (in neither table), so
// that a task of one return needs no lookup for it.
func (t *Table) forgetLineage(e *lineageEntry, freed *object) {
	e.forgotten = true
	t.lineageN--
	t.lineageBytes -= int(e.linSize)
	if freed == nil || e.nReturns != 1 {
		id := e.id()
		for i := range int(e.nReturns) {
			if o := t.record(ids.ReturnObjectID(id, i)); o != nil && o.lineage == e {
				o.lineage, o.noLineage = nil, gapEvicted
			}
		}
	}
	if freed != nil && freed.lineage == e {
		freed.lineage, freed.noLineage = nil, gapEvicted
	}
	for _, dep := range e.deps() {
		d := t.record(dep)
		if d == nil {
			continue
		}
		if m := d.m(); m.lineageRefs > 0 {
			m.lineageRefs--
		}
		if d.more.lineageRefs == 0 && t.released[dep] == d {
			delete(t.released, dep)
			if d.lineage != nil {
				t.objectFreed(d)
			}
		}
	}
}

// objectFreed forgets the lineage of o's producer once none of its returns
// is referenced or released for a lineage. o was just freed: it is in
// neither table.
func (t *Table) objectFreed(o *object) {
	e := o.lineage
	if e == nil {
		return
	}
	if e.nReturns != 1 {
		id := e.id()
		for i := range int(e.nReturns) {
			if t.record(ids.ReturnObjectID(id, i)) != nil {
				return
			}
		}
	}
	t.forgetLineage(e, o)
}

// reconstructionFailed is the error of an object that cannot be rebuilt.
func reconstructionFailed(id ids.ObjectID, why string) *atollpb.ErrorInfo {
	return errs.ToProto(&errs.ObjectReconstructionFailedError{ObjectID: id.String(), Reason: why})
}

// Reconstruct runs again the task that produced id, whose every copy was
// lost (cause says how). It returns nil once the object is pending again
// (or already was, or is not in a store at all: nothing was lost), else
// why it cannot be rebuilt.
func (t *Table) Reconstruct(id ids.ObjectID, cause string) *atollpb.ErrorInfo {
	o := t.objects[id]
	switch {
	case o == nil:
		return reconstructionFailed(id, "the object was freed")
	case !o.ready():
		return nil // being produced (or rebuilt) already
	case o.value.GetStored() == nil:
		return nil // inline or an error: it lives in this table
	case o.borrowed:
		return reconstructionFailed(id, "its owner is another process: "+cause)
	case !o.taskReturn:
		return reconstructionFailed(id, "it was created by Put, which keeps no lineage: "+cause)
	}
	return t.rerun(id, o, cause)
}

// rerun runs again the task of o's lineage, reviving the released
// arguments it needs (and rebuilding them first, recursively).
func (t *Table) rerun(id ids.ObjectID, o *object, cause string) *atollpb.ErrorInfo {
	e := o.lineage
	if e == nil {
		return reconstructionFailed(id, o.noLineage.String()+": "+cause)
	}
	if t.tasks[e.id()] != nil {
		return nil // its task is running again
	}
	if e.recoveries() >= maxRecoveries {
		return reconstructionFailed(id, "rebuilt too often already: "+cause)
	}
	for _, dep := range e.deps() {
		if t.objects[dep] != nil {
			continue
		}
		d := t.released[dep]
		if d == nil || !d.taskReturn {
			return reconstructionFailed(id, "its task's argument "+dep.String()+" was freed and cannot be rebuilt: "+cause)
		}
		// Revive the argument's record, pending, and rebuild it.
		delete(t.released, dep)
		if !t.closed {
			t.emit(Revive{Objects: []ids.ObjectID{dep}})
		}
		d.refs, d.value = 0, nil
		t.objects[dep] = d
		if err := t.rerun(dep, d, "needed to rebuild "+id.String()); err != nil {
			delete(t.objects, dep)
			t.released[dep] = d
			return reconstructionFailed(id, "its task's argument "+dep.String()+" cannot be rebuilt: "+errs.FromProto(err).Error())
		}
	}
	e.more().recoveries++
	t.reconstructions++
	var spec *atollpb.TaskSpec
	if e.packed != nil {
		spec = e.packed.Unpack()
	} else {
		spec = proto.CloneOf(e.spec)
	}
	spec.Attempt++
	e.spec, e.packed = spec, nil
	resetArgs(spec, e.deps(), e.depArgIdx())
	tk := &task{seq: t.seqNext + 1, spec: spec, nReturns: e.nReturns, retriesLeft: spec.MaxRetries, attach: e.attach,
		args: &taskArgs{deps: e.deps(), depArgIdx: e.depArgIdx(), refArgs: len(e.deps()), recoveries: e.recoveries(), rebuiltFrom: e}}
	t.seqNext++
	for i := range int(e.nReturns) {
		if r := t.objects[tk.returnID(i)]; r != nil && r.ready() {
			r.strays = r.strays || r.value.GetStored() != nil
			r.value = nil
		}
	}
	t.tasks[tk.id()] = tk
	t.group(tk)
	for _, dep := range tk.deps() {
		t.AddRef(dep)
	}
	t.awaitObjects(tk, tk.deps())
	if tk.unresolved() == 0 {
		t.dispatch(tk)
	}
	return nil
}

// resetArgs turns a dispatched spec's object arguments back into bare
// refs (dispatch fills them in from the objects' values again).
func resetArgs(spec *atollpb.TaskSpec, deps []ids.ObjectID, depArgIdx []int) {
	for j, dep := range deps {
		spec.Args[depArgIdx[j]] = &atollpb.TaskArg{Kind: &atollpb.TaskArg_Ref{Ref: &atollpb.ObjectRef{ObjectId: dep.Bytes()}}}
	}
	spec.ArgProducers, spec.Borrowed, spec.NumDependencies = nil, nil, 0
}

// recoverArgument handles an attempt that failed because one of its
// arguments is lost: the argument is rebuilt and the task dispatched
// again once it is back (the attempt does not count as a retry). It
// reports false if it cannot (not an argument, not rebuildable, too many
// recoveries): the failure then stands.
func (t *Table) recoverArgument(tk *task, res *atollpb.TaskResult) bool {
	e := res.Error
	if e.GetCode() != atollpb.ErrorCode_OBJECT_LOST || tk.actor != nil || tk.cancelled || tk.recoveries() >= maxRecoveries {
		return false
	}
	lost, err := ids.ObjectIDFromBytes(e.ObjectId)
	if err != nil {
		return false
	}
	j := -1
	for i, dep := range tk.deps() {
		if dep == lost {
			j = i
		}
	}
	if j < 0 || t.Reconstruct(lost, e.Message) != nil {
		return false
	}
	tk.more().recoveries++
	spec := tk.cloneSpec()
	spec.Attempt++
	resetArgs(spec, tk.deps(), tk.depArgIdx())
	tk.spec, tk.packed, tk.dispatched = spec, nil, false
	t.emit(Retried{Attach: tk.attach, Attempt: spec.Attempt, Cause: e})
	t.awaitObjects(tk, tk.deps())
	if tk.unresolved() == 0 {
		t.dispatch(tk)
	}
	return true
}

// specSize is proto.Size(s), counted field by field: proto.Size walks
// the resources map by reflection, two allocations and a tenth of a
// microsecond per entry on every finished task. Submessages (arguments,
// trace contexts, actor creation) are sized by proto.Size.
// TestSpecSizeIsProtoSize keeps it in step with TaskSpec's fields.
func specSize(s *atollpb.TaskSpec) int {
	n := bytesField(1, len(s.TaskId)) + bytesField(1, len(s.JobId)) + varintField(1, uint64(s.Type)) +
		bytesField(1, len(s.Function)) + bytesField(1, len(s.Name)) + int32Field(1, s.NumReturns) +
		int32Field(1, s.MaxRetries) + boolField(1, s.RetryExceptions) + int32Field(1, s.Attempt) +
		bytesField(1, len(s.OwnerId)) + bytesField(1, len(s.OwnerAddress)) + bytesField(1, len(s.ActorId)) +
		varintField(2, s.SequenceNumber) + int32Field(2, s.NumDependencies) + bytesField(2, len(s.WorkerBinary)) +
		bytesField(2, len(s.WorkerBinarySha256)) + bytesField(2, len(s.ConcurrencyGroup)) + bytesField(2, len(s.CallerId)) +
		boolField(2, s.Generator) + int32Field(2, s.GeneratorBackpressure)
	for _, e := range s.RetryErrors {
		n += 2 + protowire.SizeBytes(len(e))
	}
	for k := range s.Resources {
		entry := 1 + protowire.SizeBytes(len(k)) + 1 + 8 // key, then a double
		n += 1 + protowire.SizeBytes(entry)
	}
	for _, a := range s.Args {
		n += 1 + protowire.SizeBytes(proto.Size(a))
	}
	for _, p := range s.ArgProducers {
		n += 2 + protowire.SizeBytes(proto.Size(p))
	}
	for _, b := range s.Borrowed {
		n += 2 + protowire.SizeBytes(proto.Size(b))
	}
	if s.Trace != nil {
		n += 1 + protowire.SizeBytes(proto.Size(s.Trace))
	}
	if s.ActorCreation != nil {
		n += 2 + protowire.SizeBytes(proto.Size(s.ActorCreation))
	}
	if s.Scheduling != nil {
		n += 2 + protowire.SizeBytes(proto.Size(s.Scheduling))
	}
	return n
}

// The sizes of a proto3 field with a tag of tag bytes: nothing when it
// holds its zero value.
func bytesField(tag, n int) int {
	if n == 0 {
		return 0
	}
	return tag + protowire.SizeBytes(n)
}

func varintField(tag int, v uint64) int {
	if v == 0 {
		return 0
	}
	return tag + protowire.SizeVarint(v)
}

func int32Field(tag int, v int32) int { return varintField(tag, uint64(int64(v))) }

func boolField(tag int, v bool) int {
	if !v {
		return 0
	}
	return tag + 1
}
