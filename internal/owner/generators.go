package owner

import (
	"maps"
	"slices"

	"github.com/atoll-runtime/atoll/atollpb"
	"github.com/atoll-runtime/atoll/internal/ids"
)

// MaxGeneratorItems bounds the items one generator task may yield: the
// index of an item is part of its object id.
const MaxGeneratorItems = 1<<31 - 2

// consumedAll is the consumed count sent to a generator whose caller
// dropped its stream: nothing holds it back any more.
const consumedAll = 1 << 62

// maxEarlyItems bounds the items a stream holds ahead of a missing one.
const maxEarlyItems = 1024

// maxLostItems bounds the items never received that a generator's end
// frees.
const maxLostItems = 4096

// generator is the caller's side of a streaming generator task
// (TaskSpec.generator): the items it has reported so far, in index order,
// and how many of them the caller took. An item's object is held by the
// stream (one reference) until the caller takes it, when the reference
// passes to the caller's ref. The entry lives until the caller drops the
// stream (DropGenerator), after the task ended or not.
type generator struct {
	task ids.TaskID
	// limit is the task's backpressure limit (0: none): a worker that
	// honours it never reports item taken+limit or later.
	limit int64
	items []ids.ObjectID
	taken int
	// early holds, by index, the items that arrived ahead of one still
	// missing (reports reordered on their way, or one lost), until the
	// missing ones arrive: fewer than the backpressure limit (the worker
	// reports no further), or maxEarlyItems without one. A worker held
	// back sends again what the acks say is missing (received); a report
	// lost for good by a worker never held back leaves its stream short,
	// and its end says so (ObjectLostError), unless a retry of the task
	// fills the gap.
	early map[int64]ids.ObjectID
	// changed is closed, and replaced, whenever an item arrives.
	changed chan struct{}
	// upto bounds the items the task's attempts reported so far (ended
	// attempts: lostItems), for freeing those never received at its end.
	upto int64
}

// droppedGen is what remains of a stream dropped while its task runs:
// how many items arrived in order, and upto as in generator.
type droppedGen struct{ received, upto int64 }

// ack is the stream's GeneratorAck for attempt: the items taken, and
// those held in order.
func (g *generator) ack(attempt int32) GeneratorAck {
	return GeneratorAck{Task: g.task, Attempt: attempt, Consumed: int64(g.taken), Received: int64(len(g.items))}
}

// GeneratorAck tells the worker running a generator task how many of its
// items the caller consumed (its yields are held back past the
// backpressure limit until then).
type GeneratorAck struct {
	Task     ids.TaskID
	Attempt  int32
	Consumed int64
	// Received is how many items the owner holds in order (every index
	// below it arrived): a worker held back sends the reports from there
	// on again.
	Received int64
}

func (GeneratorAck) effect() {}

// GeneratorItemID is the object id of item index of generator task.
func GeneratorItemID(task ids.TaskID, index int64) ids.ObjectID {
	return ids.ReturnObjectID(task, int(index)+1)
}

// SubmitGenerator submits a streaming generator task: Submit, plus the
// stream its items are reported to. The spec must have Generator set and
// one return, which resolves to the number of items (or the task's
// error) once the task ends.
func (t *Table) SubmitGenerator(s Submission) []ids.ObjectID {
	id := ids.MustFromBytes(s.Spec.TaskId)
	t.gens[id] = &generator{task: id, limit: int64(max(s.Spec.GeneratorBackpressure, 0)), changed: make(chan struct{})}
	return t.Submit(s)
}

// generatorItem applies an item a generator task reported while it runs.
// An item the stream has already (a retried attempt yields the items of
// the attempt before it again, under the same ids) is ignored, as is one
// of a stream the caller dropped or a task that ended; what such an item
// stored in the object store is freed unless the stream holds it.
func (t *Table) generatorItem(res *atollpb.TaskResult) {
	id, err := ids.FromBytes(res.GetTaskId())
	if err != nil || len(res.Returns) != 1 {
		return
	}
	index := res.GeneratorItem.GetIndex()
	rid, err := ids.ObjectIDFromBytes(res.Returns[0].GetObjectId())
	if err != nil || index < 0 || index >= MaxGeneratorItems || rid != GeneratorItemID(id, index) {
		return
	}
	value := res.Returns[0].GetValue()
	var contained, adopted []ids.ObjectID
	if res.GeneratorItem.GetFromBorrower() {
		// From a worker process: take over what it handed over, then
		// reference the refs the value holds (objects lent, or adopted).
		adopted = t.adopt(res.Transferred)
		contained = t.refContained(value)
		defer t.DropUnreferenced(adopted) // held by no item: none, unless a peer lies
	} else {
		// From this process: the value's encoding took the references.
		for _, c := range value.GetContainedRefs() {
			if cid, err := ids.ObjectIDFromBytes(c.GetObjectId()); err == nil {
				contained = append(contained, cid)
			}
		}
	}
	tk, g := t.tasks[id], t.gens[id]
	if d := t.droppedGens[id]; d != nil && index == d.received {
		d.received++
	}
	if tk == nil || !tk.dispatched || g == nil || !g.accepts(index) {
		// Stale, a duplicate, nobody reads it, or past the backpressure
		// limit (a worker that ignores it must not grow the stream
		// without bound; its stream ends short): keep nothing of it.
		if t.objects[rid] == nil && value.GetStored() != nil {
			t.free([]ids.ObjectID{rid})
		}
		t.DropRef(contained...)
		if tk != nil && tk.dispatched {
			if g != nil {
				t.emit(g.ack(res.Attempt))
			} else {
				t.emit(GeneratorAck{Task: id, Attempt: res.Attempt, Consumed: consumedAll, Received: consumedAll})
			}
		}
		return
	}
	t.Put(rid, value, res.ExecuteSpan, contained)
	t.objects[rid].taskReturn = true
	if index > int64(len(g.items)) {
		if g.early == nil {
			g.early = map[int64]ids.ObjectID{}
		}
		g.early[index] = rid
	} else {
		g.items = append(g.items, rid)
		for next, ok := g.early[int64(len(g.items))]; ok; next, ok = g.early[int64(len(g.items))] {
			delete(g.early, int64(len(g.items)))
			g.items = append(g.items, next)
		}
		close(g.changed)
		g.changed = make(chan struct{})
	}
	t.emit(g.ack(res.Attempt))
}

// accepts reports whether item index is new to the stream and within
// its bounds: not reported yet, under the backpressure limit past the
// items taken, and, ahead of a missing item, within maxEarlyItems.
func (g *generator) accepts(index int64) bool {
	switch {
	case index < int64(len(g.items)):
		return false
	case g.limit > 0 && index >= int64(g.taken)+g.limit:
		return false
	case index == int64(len(g.items)):
		return true
	}
	_, dup := g.early[index]
	return !dup && len(g.early) < maxEarlyItems
}

// TakeGeneratorItem hands the caller the next item of the stream of task
// id, if one has arrived: the stream's reference to it becomes the
// caller's. Otherwise ok is false and changed is closed when an item
// arrives (the caller also watches the task's return for its end).
// known is false for a stream that does not exist (dropped).
func (t *Table) TakeGeneratorItem(id ids.TaskID) (item ids.ObjectID, ok bool, changed <-chan struct{}, known bool) {
	g := t.gens[id]
	if g == nil {
		return ids.ObjectID{}, false, nil, false
	}
	if g.taken == len(g.items) {
		return ids.ObjectID{}, false, g.changed, true
	}
	item = g.items[g.taken]
	g.items[g.taken] = ids.ObjectID{} // no longer the stream's
	g.taken++
	if tk := t.tasks[id]; tk != nil && tk.dispatched {
		t.emit(g.ack(tk.attempt()))
	}
	return item, true, nil, true
}

// GeneratorCounts reports how many items the stream of task id has
// received and how many the caller took.
func (t *Table) GeneratorCounts(id ids.TaskID) (reported, taken int) {
	if g := t.gens[id]; g != nil {
		return len(g.items), g.taken
	}
	return 0, 0
}

// DropGenerator forgets the stream of task id: the items the caller did
// not take are released, and a task still running is no longer held back
// (its later items are freed as they come).
func (t *Table) DropGenerator(id ids.TaskID) {
	g := t.gens[id]
	if g == nil {
		return
	}
	delete(t.gens, id)
	if tk := t.tasks[id]; tk != nil {
		t.droppedGens[id] = &droppedGen{received: int64(len(g.items)), upto: g.upto}
	}
	t.DropRef(g.items[g.taken:]...)
	for _, index := range slices.Sorted(maps.Keys(g.early)) { // in order: the effects are deterministic
		t.DropRef(g.early[index])
	}
	if tk := t.tasks[id]; tk != nil && tk.dispatched {
		t.emit(GeneratorAck{Task: id, Attempt: tk.attempt(), Consumed: consumedAll, Received: consumedAll})
	}
}

// attemptEnded records how far an ended attempt of generator task id may
// have reported items (res, its result): from its worker, the result
// counts them (generator_yielded); made up on the way (its answer lost,
// its worker crashed) it does not, and a worker held back by backpressure
// reported none past the items taken plus the limit (a dropped stream
// holds none back: only counts are known).
func (t *Table) attemptEnded(id ids.TaskID, res *atollpb.TaskResult) {
	upto := res.GeneratorYielded
	if g := t.gens[id]; g != nil {
		if strayedCode(res.GetError().GetCode()) && g.limit > 0 {
			upto = max(upto, int64(g.taken)+g.limit)
		}
		g.upto = max(g.upto, upto)
	} else if d := t.droppedGens[id]; d != nil {
		d.upto = max(d.upto, upto)
	}
}

// generatorEnded frees, once generator task id ended for good, the items
// its attempts reported (up to what attemptEnded recorded) that never
// reached the stream: their reports were lost on the way, or an attempt
// that died stored them, and what they stored would otherwise stay in the
// stores. d is the stream if it was dropped while the task ran (later
// items arrived stale and were freed as they came). At most maxLostItems.
func (t *Table) generatorEnded(id ids.TaskID, d *droppedGen) {
	var from, upto int64
	var held map[int64]ids.ObjectID
	switch g := t.gens[id]; {
	case g != nil:
		from, upto, held = int64(len(g.items)), g.upto, g.early
	case d != nil:
		from, upto = d.received, d.upto
	default:
		return
	}
	var lost []ids.ObjectID
	for i := from; i < min(upto, from+maxLostItems); i++ {
		if _, ok := held[i]; !ok {
			lost = append(lost, GeneratorItemID(id, i))
		}
	}
	t.free(lost)
}
