package owner

import (
	"cmp"
	"slices"
	"sort"

	"google.golang.org/protobuf/proto"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/errs"
	"github.com/atoll-runtime/atoll/internal/ids"
	"github.com/atoll-runtime/atoll/internal/specpack"
)

// task is a task this process owns that has not finished: its arguments
// may be unresolved, it may be queued, running or retrying.
type task struct {
	seq uint64 // submission order
	// spec is the task's spec; nil once packed (Config.Pack): then packed.
	spec   *atollpb.TaskSpec
	packed *specpack.Spec
	actor  *actorEntry
	attach any
	// args is what few tasks need: object arguments, refs inside
	// argument values, lineage's counts; nil for a plain task (most are),
	// made on first use (more), so that a million tasks queued at once
	// cost 80 bytes each here, not 208.
	args *taskArgs

	retriesLeft int32 // -1: forever
	// nReturns counts its returns: ids.ReturnObjectID(id, i) (returnID).
	nReturns   int32
	dispatched bool // arguments resolved; sent (or, for a call, ready to send)
	cancelled  bool
	// recycle: spec is the table's alone (Submission.Recycle), given back
	// to specpack's pool once packed.
	recycle bool
	// linSize and forgotten are its lineage's, once it finished and its
	// record became its lineage (lineage.go): the bytes counted against
	// the budget, and whether the lineage was dropped since (its returns
	// freed, or evicted; the eviction order skips it).
	linSize   int32
	forgotten bool
	// packedOnce: packedSpace holds the first attempt's packed spec (or
	// held it: a retry's is an allocation of its own, so that nothing a
	// submitter still reads is written over).
	packedOnce bool
	// packedSpace is where the task's spec is packed the first time
	// (sendTask): kept in the record, it is no allocation of its own.
	packedSpace specpack.Spec
}

// taskArgs is a task's less used part.
type taskArgs struct {
	// deps are the objects given as arguments (referenced while the task
	// is pending), depArgIdx the index in spec.Args of each.
	deps      []ids.ObjectID
	depArgIdx []int
	// holds are refs serialised inside inline argument values (referenced
	// by their encoding; lent to the task, released when it ends).
	holds      []ids.ObjectID
	refArgs    int // arguments the caller gave as ObjectRefs (0: a root task)
	unresolved int // deps, holds and lent objects without a value yet
	// recoveries counts the lost arguments rebuilt for it (lineage.go);
	// rebuiltFrom, when set, is the lineage it runs again from to rebuild
	// its lost returns.
	recoveries  int
	rebuiltFrom *lineageEntry
}

func (tk *task) held() specpack.Held { return specpack.Held{Whole: tk.spec, Packed: tk.packed} }

// id is the task's id, read from its spec: the record keeps no copy.
func (tk *task) id() ids.TaskID { return tk.held().ID() }

// common is the task's spec or, packed, its shape (specpack.Held.Common).
func (tk *task) common() *atollpb.TaskSpec { return tk.held().Common() }

// attempt is the current attempt's number.
func (tk *task) attempt() int32 { return tk.held().Attempt() }

// returnID is the id of the task's i-th return.
func (tk *task) returnID(i int) ids.ObjectID { return ids.ReturnObjectID(tk.id(), i) }

// cloneSpec returns a copy of the task's spec, of the caller's own.
func (tk *task) cloneSpec() *atollpb.TaskSpec {
	if tk.packed != nil {
		return tk.packed.Unpack()
	}
	return proto.CloneOf(tk.spec)
}

// more returns the task's less used part, made on first use.
func (tk *task) more() *taskArgs {
	if tk.args == nil {
		tk.args = &taskArgs{}
	}
	return tk.args
}

// The less used part's fields, zero while it is not made.

func (tk *task) deps() []ids.ObjectID { return tk.args.depIDs() }

func (tk *task) depArgIdx() []int { return tk.args.depIndexes() }

// depIDs and depIndexes read a task's object arguments (nil a: none),
// for the task and for its lineage entry, which keeps its taskArgs.
func (a *taskArgs) depIDs() []ids.ObjectID {
	if a == nil {
		return nil
	}
	return a.deps
}

func (a *taskArgs) depIndexes() []int {
	if a == nil {
		return nil
	}
	return a.depArgIdx
}

func (tk *task) holds() []ids.ObjectID {
	if tk.args == nil {
		return nil
	}
	return tk.args.holds
}

func (tk *task) refArgs() int {
	if tk.args == nil {
		return 0
	}
	return tk.args.refArgs
}

func (tk *task) unresolved() int {
	if tk.args == nil {
		return 0
	}
	return tk.args.unresolved
}

func (tk *task) recoveries() int {
	if tk.args == nil {
		return 0
	}
	return tk.args.recoveries
}

func (tk *task) rebuilding() bool { return tk.args != nil && tk.args.rebuiltFrom != nil }

// Arg is one argument of a Submission: an object, or an inline value.
type Arg struct {
	// Ref is an object argument. The task takes a reference of its own
	// unless Owned.
	Ref ids.ObjectID
	// Owned: Ref was made for this task (a large value put in the store);
	// the task takes over its one reference.
	Owned bool
	// Value is an inline argument (when Ref is zero).
	Value *atollpb.Value
	// Holds are refs serialised inside Value; their encoding took one
	// reference each, which the task releases when it ends.
	Holds []ids.ObjectID
}

// Submission is a task or actor call to submit.
type Submission struct {
	// Spec is complete but for Args, which Submit fills. Spec.TaskId names
	// the task; its returns are ids.ReturnObjectID(task, i).
	Spec *atollpb.TaskSpec
	Args []Arg
	// Actor names the actor of an actor call (zero for a task or an actor
	// creation).
	Actor ids.ActorID
	// Attach is the shell's own data, handed back in Dispatched, Retried
	// and Finished. A task with none gets no Dispatched or Finished
	// effect (the shell has nothing to do for it: two effects fewer on
	// every untraced task).
	Attach any
	// Err fails the task at once (its arguments could not be built): its
	// returns resolve to Err and the references Args carry are dropped.
	Err *atollpb.ErrorInfo
	// Recycle says the submitter keeps no reference to Spec (nor to its
	// Args and TaskId slices): once the table has packed it, the spec
	// goes back to specpack's pool (specpack.Recycle) for the next
	// submission (specpack.NewSpec).
	Recycle bool
}

// Submit registers a task with one reference to each of its returns,
// takes references to its arguments, and sends it once they all have
// values (at once if they do). It returns the return ids.
func (t *Table) Submit(s Submission) []ids.ObjectID { return t.SubmitTo(nil, s) }

// SubmitTo is Submit, appending the return ids to dst.
func (t *Table) SubmitTo(dst []ids.ObjectID, s Submission) []ids.ObjectID {
	dst, _ = t.SubmitRecords(dst, nil, s)
	return dst
}

// SubmitRecords is SubmitTo, appending also each return's record to
// recs (for LookupRecord by the holder of the reference the return comes
// with).
func (t *Table) SubmitRecords(dst []ids.ObjectID, recs []Record, s Submission) ([]ids.ObjectID, []Record) {
	return t.SubmitRecordsIn(nil, nil, dst, recs, s)
}

// SubmitRecordsIn is SubmitRecords with the task's records in taskSpace
// when InSpace(s), else its first return's in objectSpace (nil:
// allocations of the table's). The space used must be zero, and is the
// table's from then on.
func (t *Table) SubmitRecordsIn(taskSpace *TaskSpace, objectSpace *ObjectSpace, dst []ids.ObjectID, recs []Record, s Submission) ([]ids.ObjectID, []Record) {
	id := ids.MustFromBytes(s.Spec.TaskId)
	t.seqNext++
	var tk *task
	var first *object // the first return's record, if made with the task's
	switch {
	case !InSpace(s):
		tk = t.newTask(s)
		if objectSpace != nil {
			first = &objectSpace.o
		}
	case taskSpace != nil:
		tk, first = &taskSpace.b.task, &taskSpace.b.ret
	default:
		b := new(taskWithReturn)
		tk, first = &b.task, &b.ret
	}
	tk.seq, tk.spec, tk.retriesLeft, tk.nReturns, tk.attach, tk.recycle = t.seqNext, s.Spec, s.Spec.MaxRetries, s.Spec.NumReturns, s.Attach, s.Recycle
	returns := dst
	for i := range int(tk.nReturns) {
		rid := ids.ReturnObjectID(id, i)
		var o *object
		if i == 0 && first != nil {
			o = t.putRecord(first, rid, nil, nil, nil)
		} else {
			o = t.put(rid, nil, nil, nil)
		}
		o.taskReturn = true
		returns = append(returns, rid)
		if recs != nil {
			recs = append(recs, Record{o})
		}
	}
	t.tasks[id] = tk
	t.group(tk)
	for i, a := range s.Args {
		if len(a.Holds) > 0 {
			m := tk.more()
			m.holds = append(m.holds, a.Holds...)
		}
		if a.Ref.IsZero() {
			s.Spec.Args = append(s.Spec.Args, &atollpb.TaskArg{Kind: &atollpb.TaskArg_Value{Value: a.Value}})
			continue
		}
		if !a.Owned {
			if s.Err != nil || !t.AddRef(a.Ref) {
				if s.Err == nil {
					s.Err = errs.ToProto(&errs.ObjectLostError{ObjectID: a.Ref.String(), Message: "argument object no longer exists"})
				}
				continue
			}
			tk.more().refArgs++
		}
		m := tk.more()
		m.deps = append(m.deps, a.Ref)
		m.depArgIdx = append(m.depArgIdx, i)
		s.Spec.Args = append(s.Spec.Args, &atollpb.TaskArg{Kind: &atollpb.TaskArg_Ref{Ref: &atollpb.ObjectRef{ObjectId: a.Ref.Bytes()}}})
	}
	if s.Err != nil {
		t.finish(tk, s.Err)
		return returns, recs
	}
	if !s.Actor.IsZero() {
		a := t.actors[s.Actor]
		if a == nil {
			// Calls hold no handle of their own: a call through a handle
			// the table forgot cannot happen (the handle is reachable).
			t.finish(tk, errs.ToProto(errs.Invalidf("call to actor %s: no handle registered", s.Actor.Short())))
			return returns, recs
		}
		if a.dead != nil {
			t.finish(tk, a.dead)
			return returns, recs
		}
		tk.actor = a
		a.queue = append(a.queue, tk)
		t.askAgain(a) // an entry waiting for its address may wait for a missed event
	}
	t.awaitObjects(tk, tk.deps())
	// Refs inside argument values must have values too, to be lent.
	t.awaitObjects(tk, tk.holds())
	if tk.unresolved() == 0 {
		t.dispatchHeld(tk) // in the table since it was put there above
	}
	return returns, recs
}

// awaitObjects makes tk wait for those of idl that have no value yet
// (each counts in tk.unresolved until depReady).
func (t *Table) awaitObjects(tk *task, idl []ids.ObjectID) {
	for _, id := range idl {
		if o := t.objects[id]; o != nil && !o.ready() {
			tk.more().unresolved++
			om := o.m()
			om.waiting = append(om.waiting, tk)
		}
	}
}

// depReady counts down a task's unresolved arguments.
func (t *Table) depReady(tk *task) {
	tk.args.unresolved-- // counted up by awaitObjects, which made args
	if tk.args.unresolved == 0 {
		t.dispatch(tk)
	}
}

// dispatch runs once every argument has a value: it inlines small values,
// fails the task if an argument failed, and sends it.
func (t *Table) dispatch(tk *task) {
	if t.tasks[tk.id()] == tk {
		t.dispatchHeld(tk)
	}
}

// dispatchHeld is dispatch for a task known to be in the table.
func (t *Table) dispatchHeld(tk *task) {
	if tk.cancelled || tk.dispatched {
		return
	}
	// An argument ready when the task counted it may be pending again:
	// a rebuild (Reconstruct) of its producer since. Wait for it again.
	t.awaitObjects(tk, tk.deps())
	t.awaitObjects(tk, tk.holds())
	if tk.unresolved() > 0 {
		return
	}
	spec := tk.spec
	// Objects the arguments' values hold, transitively, are lent.
	lent, pending, err := t.lentClosure(tk)
	if err != nil {
		t.finish(tk, err)
		return
	}
	if len(pending) > 0 {
		// A ref inside an argument's value names an object still being
		// computed: lent objects must have values.
		t.awaitObjects(tk, pending)
		return
	}
	spec.Borrowed = spec.Borrowed[:0]
	for _, id := range lent {
		spec.Borrowed = append(spec.Borrowed, &atollpb.ReturnObject{ObjectId: id.Bytes(), Value: t.lentValue(t.objects[id])})
	}
	for j, dep := range tk.deps() {
		o := t.objects[dep]
		if o == nil {
			t.finish(tk, errs.ToProto(&errs.ObjectLostError{ObjectID: dep.String(), Message: "argument object no longer exists"}))
			return
		}
		if e := o.value.GetError(); e != nil {
			t.finish(tk, e) // a failed argument fails the task with the same error
			return
		}
		if o.producer != nil {
			spec.ArgProducers = append(spec.ArgProducers, o.producer)
		}
		if inline := o.value.GetInline(); inline != nil || o.value.GetStored() == nil {
			spec.Args[tk.depArgIdx()[j]] = &atollpb.TaskArg{Kind: &atollpb.TaskArg_Value{Value: o.value}}
			continue
		}
		ref, st := spec.Args[tk.depArgIdx()[j]].GetRef(), o.value.GetStored()
		ref.Size, ref.NodeId, ref.Codec = st.GetLength(), st.GetNodeId(), st.GetCodec()
		if !o.borrowed {
			ref.OwnerAddress, ref.OwnerId = t.cfg.Node.String(), t.cfg.Worker.Bytes()
		}
	}
	spec.NumDependencies = int32(tk.refArgs() + len(tk.holds()))
	tk.dispatched = true
	if tk.attach != nil {
		t.emit(Dispatched{Attach: tk.attach})
	}
	if tk.actor != nil {
		t.flush(tk.actor)
		return
	}
	if spec.Type == atollpb.TaskType_ACTOR_CREATION_TASK {
		t.keepCreation(spec)
	}
	t.sendTask(tk, spec)
}

// sendTask sends tk's attempt spec to the node: packed (Config.Pack), if
// it is a leasable one, kept packed and the spec dropped (recycled, if
// the submitter gave it up).
func (t *Table) sendTask(tk *task, spec *atollpb.TaskSpec) {
	recycle := tk.recycle
	tk.recycle = false // a sent spec is shared; a retry's is a copy
	if t.cfg.Pack && tk.actor == nil && specpack.Leasable(spec) {
		var space *specpack.Spec
		if !tk.packedOnce {
			space = &tk.packedSpace
		}
		if p := t.shapes.PackInto(space, spec); p != nil {
			tk.spec, tk.packed = nil, p
			tk.packedOnce = true
			if recycle {
				specpack.Recycle(spec)
			}
			t.emit(SendPacked{Spec: p})
			return
		}
	}
	tk.spec, tk.packed = spec, nil
	t.emit(SendTask{Spec: spec})
}

// Result applies a task attempt's result: a stale attempt or a finished
// task is ignored; a failure is retried if the task may be, else its
// returns fail; a success resolves the returns.
func (t *Table) Result(res *atollpb.TaskResult) {
	id, err := ids.FromBytes(res.GetTaskId())
	if err != nil {
		return
	}
	if res.GeneratorItem != nil {
		t.generatorItem(res) // an item yielded while the task runs
		return
	}
	tk := t.tasks[id]
	if tk == nil && t.restartResult(id, res) {
		return // the creation sent again to restart an actor whose node died
	}
	if tk == nil || res.Attempt != tk.attempt() || !tk.dispatched {
		t.lateResult(id, res) // stale attempt, duplicate, or already finished
		return
	}
	if tk.common().Generator {
		t.attemptEnded(id, res)
		dropped := t.droppedGens[id]
		defer func() {
			if t.tasks[id] == nil { // ended for good, not retried
				t.generatorEnded(id, dropped)
			}
		}()
	}
	t.borrowerResult(tk, res)
	if res.Error != nil {
		t.strayed(tk, res.Error.Code)
		if tk.actor != nil {
			// Whether or not the call is retried, later calls must not go
			// where this one was lost.
			t.callLost(tk.actor, res.Error)
		}
		switch {
		case tk.cancelled:
			// Whatever stopped it, the caller asked for it to stop.
			t.finish(tk, errs.ToProto(&errs.CancelledError{TaskName: tk.common().Name, TaskID: id.String()}))
		case t.recoverArgument(tk, res):
			// An argument was lost: rebuilt, then the task runs again.
		case !t.retry(tk, res):
			t.finish(tk, res.Error)
		}
		return
	}
	if tk.common().Type == atollpb.TaskType_ACTOR_CREATION_TASK {
		t.actorCreated(ids.MustFromBytes(tk.common().ActorId), res.ActorAddress)
	}
	adopted := t.adopt(res.Transferred)
	// The returns' records, looked up once (most tasks have one).
	var buf [2]*object
	rets := buf[:0]
	for i := range int(tk.nReturns) {
		rid := ids.ReturnObjectID(id, i)
		if i >= len(res.Returns) {
			rets = append(rets, t.resolve(rid, errorValue(errs.Invalidf("task %s returned %d values, want %d", tk.common().Name, len(res.Returns), tk.nReturns)), nil, nil))
			continue
		}
		v := res.Returns[i].GetValue()
		var contained []ids.ObjectID
		if res.BorrowsReported {
			// From another process: this table references the refs the
			// value holds (objects it lent, or just adopted).
			contained = t.refContained(v)
		} else {
			// From this process: the value's encoding took the references.
			for _, c := range v.GetContainedRefs() {
				if cid, err := ids.ObjectIDFromBytes(c.GetObjectId()); err == nil {
					contained = append(contained, cid)
				}
			}
		}
		rets = append(rets, t.resolve(rid, v, res.ExecuteSpan, contained))
	}
	if len(adopted) > 0 {
		// Handed-over objects no return holds (none, unless a peer lies)
		// go at once; the returns are looked up again after.
		t.DropUnreferenced(adopted)
		rets = nil
	}
	t.recordLineage(tk, rets)
	t.forget(tk, nil) // Result found it in the table
}

// Retryable reports whether a failed attempt may run again: the retry
// decision, a pure function of the task's options and the failure. A
// task is retried when its worker or node died or its forwarded attempt
// was lost (FORWARD_LOST: the node running it stopped confirming it), or
// on an application error if it asked for that; an actor call when its actor crashed (it
// restarts) or on an application error if it asked for that. An
// application error is retried only if it matched one of the sentinel
// errors the task named, when it named some (RetryErrors). A task
// whose node's store could not take its output or an argument before
// the store's create timeout (OBJECT_STORE_FULL: the store was full of
// objects that running tasks pinned, or its spill disk was) is retried
// too: a system failure, not the task's, that passes once those tasks
// finish (Ray's tasks wait for room rather than fail). Work a node
// refused past its quota of forwarded work (RESOURCE_EXHAUSTED) is never
// retried: it would be refused again until that node's queue drains.
func Retryable(spec *atollpb.TaskSpec, res *atollpb.TaskResult) bool {
	code := res.GetError().GetCode()
	appErr := spec.RetryExceptions && code == atollpb.ErrorCode_TASK_ERROR && matchesRetryErrors(spec.RetryErrors, res.GetError())
	if spec.Type == atollpb.TaskType_ACTOR_TASK {
		return res.ActorCrashed || appErr
	}
	switch code {
	case atollpb.ErrorCode_WORKER_CRASHED, atollpb.ErrorCode_NODE_DIED, atollpb.ErrorCode_FORWARD_LOST,
		atollpb.ErrorCode_OBJECT_STORE_FULL:
		return true
	}
	return appErr
}

// matchesRetryErrors reports whether an application error e is one a
// task that retries only want (RetryExceptions given errors: registered
// sentinels' and error types' names) retries: any, when want is empty.
// e matches a name among the sentinels it matched or the types of its
// registered values. Each list is read to the most an error names.
func matchesRetryErrors(want []string, e *atollpb.ErrorInfo) bool {
	if len(want) == 0 {
		return true
	}
	sentinels, values := e.GetSentinels(), e.GetRegistered()
	sentinels, values = sentinels[:min(len(sentinels), errs.MaxSentinels)], values[:min(len(values), errs.MaxRegisteredValues)]
	for _, w := range want[:min(len(want), errs.MaxSentinels)] {
		if slices.Contains(sentinels, w) || slices.ContainsFunc(values, func(v *atollpb.RegisteredError) bool { return v.GetType() == w }) {
			return true
		}
	}
	return false
}

func (t *Table) retry(tk *task, res *atollpb.TaskResult) bool {
	if tk.cancelled || tk.retriesLeft == 0 || !Retryable(tk.common(), res) {
		return false
	}
	if tk.retriesLeft > 0 {
		tk.retriesLeft--
	}
	spec := tk.cloneSpec()
	spec.Attempt++
	tk.spec, tk.packed = spec, nil
	t.emit(Retried{Attach: tk.attach, Attempt: spec.Attempt, Cause: res.Error})
	if a := tk.actor; a != nil {
		// callLost has applied what the failure says of the actor's host.
		// A retried call goes behind the calls already sent; while the
		// actor restarts on another node (no address) it waits in the
		// queue, in call order, for the new address.
		switch {
		case a.dead != nil:
		case a.address != "":
			t.send(a, spec)
		default:
			delete(a.inflight, tk.id())
			at, _ := slices.BinarySearchFunc(a.queue, tk.seq, func(q *task, seq uint64) int { return cmp.Compare(q.seq, seq) })
			a.queue = slices.Insert(a.queue, at, tk)
		}
		return true
	}
	t.sendTask(tk, spec)
	return true
}

// finish fails a task's returns with e and forgets it.
func (t *Table) finish(tk *task, e *atollpb.ErrorInfo) {
	if e.TaskName == "" && e.Code == atollpb.ErrorCode_TASK_ERROR {
		e = proto.Clone(e).(*atollpb.ErrorInfo)
		e.TaskName = tk.common().Name
	}
	v := &atollpb.Value{Codec: atollpb.Codec_CODEC_ERROR, Kind: &atollpb.Value_Error{Error: e}}
	for i := range int(tk.nReturns) {
		rid := tk.returnID(i)
		if tk.rebuilding() {
			// The readers asked for a lost object, not for this run.
			v = errorValue(errs.FromProto(reconstructionFailed(rid, "its task failed when run again to rebuild it: "+errs.FromProto(e).Error())))
		}
		t.Resolve(rid, v, nil, nil)
	}
	if tk.common().Type == atollpb.TaskType_ACTOR_CREATION_TASK {
		t.actorDied(ids.MustFromBytes(tk.common().ActorId), e)
	}
	t.complete(tk, e)
}

// complete forgets a finished task and drops its argument references.
func (t *Table) complete(tk *task, e *atollpb.ErrorInfo) {
	if t.tasks[tk.id()] != tk {
		return
	}
	t.forget(tk, e)
}

// forget is complete for a task known to be in the table.
func (t *Table) forget(tk *task, e *atollpb.ErrorInfo) {
	delete(t.tasks, tk.id())
	if tk.common().Generator {
		delete(t.droppedGens, tk.id())
	}
	if a := tk.actor; a != nil {
		a.forget(tk)
		t.maybeForget(a)
	}
	if tk.attach != nil {
		t.emit(Finished{Attach: tk.attach, Err: e})
	}
	t.DropRef(tk.deps()...)
	t.DropRef(tk.holds()...)
}

// Cancel cancels a task this process owns: before dispatch it fails at
// once; a queued or running task is cancelled by the node, which reports
// it CANCELLED. A call already sent to an actor runs to completion.
// Cancelling an unknown or finished task does nothing. nonRecursive asks
// the node to leave running the tasks a running one submitted.
func (t *Table) Cancel(id ids.TaskID, nonRecursive bool) {
	tk := t.tasks[id]
	if tk == nil || tk.cancelled {
		return
	}
	tk.cancelled = true
	cancelled := errs.ToProto(&errs.CancelledError{TaskName: tk.common().Name, TaskID: id.String()})
	switch {
	case !tk.dispatched:
		t.finish(tk, cancelled)
	case tk.actor != nil:
		if tk.actor.unsent(tk) {
			t.finish(tk, cancelled)
		}
	default:
		t.emit(CancelTask{Task: id, NonRecursive: nonRecursive})
	}
}

// Pending reports whether a task is still pending.
func (t *Table) Pending(id ids.TaskID) bool { return t.tasks[id] != nil }

// sortedTasks lists the pending tasks in submission order.
func (t *Table) sortedTasks() []*task {
	all := make([]*task, 0, len(t.tasks))
	for _, tk := range t.tasks {
		all = append(all, tk)
	}
	sort.Slice(all, func(i, j int) bool { return all[i].seq < all[j].seq })
	return all
}

func errorValue(err error) *atollpb.Value {
	return &atollpb.Value{Codec: atollpb.Codec_CODEC_ERROR, Kind: &atollpb.Value_Error{Error: errs.ToProto(err)}}
}
